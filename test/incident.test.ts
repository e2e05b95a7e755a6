import assert from "node:assert/strict";
import { test } from "node:test";
import { initialState, transition, type IncidentState, type NotifySettings } from "../src/notify/incident.ts";
import { duration, renderNotification } from "../src/notify/message.ts";

/** Feed a sequence of results ("F" fail, "P" pass) and collect the notifications, with their check numbers. */
function replay(sequence: string, settings: NotifySettings | ((i: number) => NotifySettings), start: IncidentState = initialState) {
  let state = start;
  const sent: string[] = [];
  [...sequence].forEach((c, i) => {
    const s = typeof settings === "function" ? settings(i) : settings;
    const next = transition(state, { ok: c === "P", checkedAt: 1000 * (i + 1) }, s);
    state = next.state;
    if (next.notify) sent.push(`${next.notify}@${i + 1}`);
  });
  return { state, sent };
}

const on = (notifyThreshold: number): NotifySettings => ({ notify: true, notifyThreshold });

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
  assert.deepEqual(state, { status: "down", consecutiveFailures: 3, failingSince: 2000, incidentOpenSince: 3000 });
  assert.deepEqual(replay("FP", on(5)).state, { status: "up", consecutiveFailures: 0, failingSince: null, incidentOpenSince: null });
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
  assert.deepEqual(replay("FFP", on(1), first.state).sent, ["recovered@3"]);
});

test("messages name server and service, carry the error, URL, failures and times; priorities 4 and 3", () => {
  const subject = { serverId: "web-01", serviceId: "home", url: "https://example.org/" };
  const failed = { ok: false as const, status: 503, latencyMs: 12, matched: null, errorKind: "status" as const, error: "status 503 matched no alternative", checkedAt: Date.UTC(2026, 0, 1, 12, 3) };
  const before: IncidentState = { status: "down", consecutiveFailures: 2, failingSince: Date.UTC(2026, 0, 1, 12, 1), incidentOpenSince: null };
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
  const recovered = renderNotification("recovered", subject, passed, { ...after, consecutiveFailures: 9 }, { status: "up", consecutiveFailures: 0, failingSince: null, incidentOpenSince: null });
  assert.equal(recovered.title, "RECOVERED: web-01/home");
  assert.equal(recovered.priority, 3);
  assert.match(recovered.message!, /^Passing again after 9 failed checks; down for 19m 0s\n/);
  assert.equal(duration(90_000), "1m 30s");
  assert.equal(duration(3 * 86_400_000 + 3_600_000), "3d 1h");
});
