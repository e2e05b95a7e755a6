import assert from "node:assert/strict";
import { test } from "node:test";
import { initialState, type IncidentState } from "../src/domain/model.ts";
import { certWarning, transition, type AlertFacts, type AlertSettings } from "../src/policy/incident.ts";
import { duration, renderCertWarning, renderNotification } from "../src/policy/message.ts";

type Step = AlertSettings | ((i: number) => AlertSettings);

/**
 * Feed a sequence of results and collect the notices, with their check numbers. "F" fails, "P" passes; a
 * lowercase letter is a result while silenced, "b" a failure while a dependency has an open incident.
 * Results are a minute apart.
 */
function replay(sequence: string, settings: Step, start: IncidentState = initialState, first = 1) {
  let state = start;
  const sent: string[] = [];
  const opened: number[] = [];
  const closed: number[] = [];
  [...sequence].forEach((c, i) => {
    const s = typeof settings === "function" ? settings(i) : settings;
    const facts: AlertFacts = { silenced: c === "f" || c === "p", blocked: c === "b" };
    const n = first + i;
    const next = transition(state, { ok: c.toUpperCase() === "P", checkedAt: 60_000 * n }, s, facts);
    state = next.state;
    for (const notice of next.notices) sent.push(`${notice}@${n}`);
    if (next.opened) opened.push(n);
    if (next.closed) closed.push(n);
  });
  return { state, sent, opened, closed };
}

const on = (notifyThreshold: number, more: Partial<AlertSettings> = {}): AlertSettings => ({ notify: true, notifyThreshold, ...more });

test("threshold 0: the first failure opens the incident", () => {
  assert.deepEqual(replay("FFFP", on(0)).sent, ["down@1", "recovered@4"]);
});

test("threshold 1 and 2: DOWN when failures exceed the threshold, once per incident", () => {
  assert.deepEqual(replay("FFFFP", on(1)).sent, ["down@2", "recovered@5"]);
  assert.deepEqual(replay("FFFFFFP", on(2)).sent, ["down@3", "recovered@7"]);
  assert.deepEqual(replay("FFP", on(2)).sent, []);
});

test("notify off: counts, never opens an incident", () => {
  const { state, sent } = replay("FFFFFP", { notify: false, notifyThreshold: 0 });
  assert.deepEqual(sent, []);
  assert.equal(state.status, "up");
});

test("flapping below the threshold never notifies; a pass resets the count", () => {
  assert.deepEqual(replay("FFPFFPFFP", on(2)).sent, []);
  assert.deepEqual(replay("FFPFFF", on(2)).sent, ["down@6"]);
});

test("state: counts, failing since, incident since", () => {
  const { state } = replay("PFFF", on(1));
  assert.deepEqual(state, {
    status: "down",
    consecutiveFailures: 3,
    consecutivePasses: 0,
    failingSince: 120_000,
    incidentOpenSince: 180_000,
    downSent: true,
    lastRemindedAt: 180_000,
  });
  assert.deepEqual(replay("FP", on(5)).state, { ...initialState, status: "up", consecutivePasses: 1 });
});

test("a PUT in the middle of an incident applies from the next check", () => {
  // Threshold raised while an incident is open: it stays open, and recovery is still announced.
  assert.deepEqual(replay("FFFFP", (i) => on(i < 2 ? 1 : 10)).sent, ["down@2", "recovered@5"]);
  // notify turned off mid-incident: whoever was told DOWN is told it is over.
  assert.deepEqual(replay("FFFP", (i) => (i < 2 ? on(0) : { notify: false, notifyThreshold: 0 })).sent, ["down@1", "recovered@4"]);
  // Threshold lowered during a run of failures: the next failure opens the incident.
  assert.deepEqual(replay("FFFF", (i) => on(i < 2 ? 5 : 1)).sent, ["down@3"]);
  // notify turned on during a run of failures.
  assert.deepEqual(replay("FFF", (i) => (i < 2 ? { notify: false, notifyThreshold: 0 } : on(0))).sent, ["down@3"]);
});

test("a restart resumes from the stored state: no repeat, no loss", () => {
  const first = replay("FFF", on(1));
  assert.deepEqual(first.sent, ["down@2"]);
  assert.deepEqual(replay("FFP", on(1), first.state, 4).sent, ["recovered@6"]);
});

test("recoverThreshold: the incident closes after that many passes in a row; flapping keeps it open", () => {
  const three = on(0, { recoverThreshold: 3 });
  assert.deepEqual(replay("FPPP", three).sent, ["down@1", "recovered@4"]);
  // Flapping: each failure starts the count of passes again, and no second DOWN is sent for the same incident.
  const flapping = replay("FPPFPFPPFPPP", three);
  assert.deepEqual(flapping.sent, ["down@1", "recovered@12"]);
  assert.deepEqual([flapping.opened, flapping.closed], [[1], [12]]);
  // While passes are counted the service shows up, and its incident is still open.
  const counting = replay("FPP", three).state;
  assert.deepEqual([counting.status, counting.consecutivePasses, counting.incidentOpenSince], ["up", 2, 60_000]);
});

test("a silence holds the DOWN until the first check after it, once; fail-and-recover inside it says nothing", () => {
  // Failed and recovered inside the silence: the incident opened and closed, nothing was published.
  const inside = replay("ffffpF", on(1));
  assert.deepEqual(inside.sent, []);
  assert.deepEqual([inside.opened, inside.closed], [[2], [5]]);
  // The silence ends with the incident open: its DOWN is published at the next check, once.
  const open = replay("fffFFFP", on(1));
  assert.deepEqual(open.sent, ["down@4", "recovered@7"]);
  // An incident opened before a silence: nothing while silenced (no RECOVERED either if it recovers then).
  assert.deepEqual(replay("FFffp", on(1)).sent, ["down@2"]);
});

test("a dependency's incident blocks the dependent; when it recovers and the dependent still fails, counting starts then", () => {
  // b: failures while the dependency has an open incident count for nothing.
  const blocked = replay("bbbbb", on(1));
  assert.deepEqual(blocked.sent, []);
  assert.deepEqual([blocked.state.status, blocked.state.consecutiveFailures, blocked.state.incidentOpenSince], ["down", 0, null]);
  // The dependency recovered at check 4; the dependent still fails: threshold 1 means DOWN at the second failure after it.
  assert.deepEqual(replay("bbbFFF", on(1)).sent, ["down@5"]);
  // An incident already open when the dependency fails stays open and is closed by its own recovery.
  assert.deepEqual(replay("FFbbP", on(1)).sent, ["down@2", "recovered@5"]);
});

test("reminders: every remindEveryMinutes while open, resumed across a restart from the stored time", () => {
  const hourly = on(0, { remindEveryMinutes: 60 });
  // Checks a minute apart: DOWN at 1, reminders at 61 and 121.
  const run = replay("F".repeat(130), hourly);
  assert.deepEqual(run.sent, ["down@1", "reminder@61", "reminder@121"]);
  // A restart after check 100 resumes from the stored state: the next reminder is still due at 121, not 100 or 161.
  const before = replay("F".repeat(100), hourly);
  assert.equal(before.state.lastRemindedAt, 61 * 60_000);
  assert.deepEqual(replay("F".repeat(30), hourly, before.state, 101).sent, ["reminder@121"]);
  // No reminders while silenced; its recovery after the silence is told, since its DOWN was.
  assert.deepEqual(replay("F" + "f".repeat(70) + "P", hourly).sent, ["down@1", "recovered@72"]);
  // None for an incident whose DOWN is still held: the held DOWN comes first, and reminders count from it.
  assert.deepEqual(replay("f".repeat(70) + "F".repeat(61), hourly).sent, ["down@71", "reminder@131"]);
});

test("CERT: one warning per certificate below certWarnDays; a renewed one that falls below is warned about again", () => {
  const day = 86_400_000;
  const now = 1_000 * day;
  assert.deepEqual(certWarning(null, now + 20 * day, 14, now), { warn: false, warnedExpiry: null });
  const first = certWarning(null, now + 10 * day, 14, now);
  assert.deepEqual(first, { warn: true, warnedExpiry: now + 10 * day });
  assert.equal(certWarning(first.warnedExpiry, now + 10 * day, 14, now + day).warn, false, "the same certificate: once");
  assert.equal(certWarning(first.warnedExpiry, now + 90 * day, 14, now + day).warn, false, "renewed: above again");
  assert.equal(certWarning(first.warnedExpiry, now + 90 * day, 14, now + 80 * day).warn, true, "the renewed one falls below");
  assert.equal(certWarning(null, now + day, null, now).warn, false, "certWarnDays null: never");
  assert.equal(certWarning(null, undefined, 14, now).warn, false, "no certificate (http): never");
});

test("messages name server and service, carry the error, URL, failures and times; priorities 4 and 3", () => {
  const subject = { serverId: "web-01", serviceId: "home", type: "http" as const, url: "https://example.org/" };
  const failed = { ok: false as const, status: 503, latencyMs: 12, matched: null, errorKind: "status" as const, error: "status 503 matched no alternative", checkedAt: Date.UTC(2026, 0, 1, 12, 3) };
  const before: IncidentState = { ...initialState, status: "down", consecutiveFailures: 2, failingSince: Date.UTC(2026, 0, 1, 12, 1) };
  const after: IncidentState = { ...before, consecutiveFailures: 3, incidentOpenSince: failed.checkedAt };
  const down = renderNotification("down", subject, failed, before, after);
  assert.equal(down.title, "DOWN: web-01/home");
  assert.equal(down.priority, 4);
  assert.equal(down.click, "https://example.org/");
  assert.deepEqual(down.tags, ["rotating_light", "healthd", "down"]);
  assert.equal(
    down.message,
    "status: status 503 matched no alternative\nURL: https://example.org/\n3 consecutive failed checks since 2026-01-01T12:01:00Z\nChecked at 2026-01-01T12:03:00Z",
  );
  const passed = { ok: true as const, status: 200, latencyMs: 5, matched: 0, errorKind: null, error: null, checkedAt: Date.UTC(2026, 0, 1, 12, 20) };
  const recovered = renderNotification("recovered", subject, passed, { ...after, consecutiveFailures: 9 }, { ...initialState, status: "up" });
  assert.equal(recovered.title, "RECOVERED: web-01/home");
  assert.equal(recovered.priority, 3);
  assert.match(recovered.message!, /^Passing again after 9 failed checks; down for 19m 0s\n/);

  const later = { ...failed, checkedAt: Date.UTC(2026, 0, 1, 14, 3) };
  const reminder = renderNotification("reminder", subject, later, after, { ...after, consecutiveFailures: 123 });
  assert.equal(reminder.title, "Still DOWN: web-01/home");
  assert.equal(reminder.priority, 4);
  // Counted from the incident's first failure (12:01), as every notice of it is: not from its opening (12:03).
  assert.match(reminder.message!, /^still DOWN for 2h 2m \(123 consecutive failed checks\)\nstatus: status 503/);
  // One is one: "1 failed check", not "1 consecutive failed checks".
  assert.match(renderNotification("down", subject, failed, initialState, { ...after, consecutiveFailures: 1 }).message!, /\n1 failed check since /);
  assert.match(renderNotification("recovered", subject, passed, { ...after, consecutiveFailures: 1 }, initialState).message!, /^Passing again after 1 failed check; /);

  const cert = renderCertWarning(subject, Date.UTC(2026, 0, 11, 12), Date.UTC(2026, 0, 1, 12), 14);
  assert.equal(cert.title, "CERT: web-01/home expires in 10d 0h");
  assert.equal(cert.priority, 3);
  assert.deepEqual(cert.tags, ["healthd", "certificate"]);
  assert.match(cert.message!, /expires at 2026-01-11T12:00:00Z, fewer than 14 days from now/);

  assert.equal(duration(90_000), "1m 30s");
  assert.equal(duration(3 * 86_400_000 + 3_600_000), "3d 1h");
});
