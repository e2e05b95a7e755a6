/**
 * The decision about a batch of results (src/policy/decide.ts), without a database: facts in, decision out,
 * table by table. The store's part (reading the facts, writing the decision) is tested through the store.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  initialState,
  type Outcome,
  type Rollup,
} from "../src/domain/model.ts";
import {
  type BatchFacts,
  type CheckRun,
  type ResultRun,
  type LocationResult,
  type ServiceFacts,
  type ServiceProgress,
  type ServiceRecord,
  type SilenceSpan,
  type Upstream,
} from "../src/domain/batch.ts";
import { decide } from "../src/policy/decide.ts";
import { admits, noRoutes } from "../src/policy/route.ts";
import type { Routes } from "../src/domain/notification.ts";

const t0 = Date.parse("2026-11-23T10:00:00Z");
const fail = (at: number, error = "status 503"): Outcome => ({ ok: false, status: 503, latencyMs: 12, matched: null, errorKind: "status", error, checkedAt: at });
const pass = (at: number, latencyMs = 10): Outcome => ({ ok: true, status: 200, latencyMs, matched: 0, errorKind: null, error: null, checkedAt: at });

function record(key: number, settings: Partial<ServiceRecord> = {}): ServiceRecord {
  return {
    key, serverId: "web-01", serviceId: `s${key}`, serverName: "web-01", serviceName: `s${key}`, channels: null, type: "http", url: `http://127.0.0.1/s${key}`, notify: true, notifyThreshold: 0, notifyTopic: null,
    paused: false, recoverThreshold: 1, remindEveryMinutes: null, certWarnDays: null, slowMs: null, notifySlow: false, domainWarnDays: null, domain: null, locations: null, quorum: null,
    intervalSeconds: 60, cron: null, dependsOn: [], maintenance: [], heartbeat: null, ...settings,
  };
}

const fresh: ServiceProgress = {
  state: initialState, lastCheckedAt: null, incidentId: null, incidentFailures: 0, incidentError: null, incidentStartedAt: null, certWarnedExpiry: null, lastVerdictAt: null,
  lastPingAt: null, openRuns: {}, lastDurationMs: null, lastFinishAt: null, missedDueAt: null, slowStreak: 0, slowSent: false, domainWarnedExpiry: null,
};

function facts(
  runs: CheckRun[],
  services: (ServiceRecord | [ServiceRecord, Partial<ServiceProgress>, LocationResult[]?])[],
  more: { silences?: SilenceSpan[]; upstream?: [string, Upstream][]; rollups?: [string, Rollup][]; domains?: [string, number][]; routes?: Routes } = {},
): BatchFacts {
  const map = new Map<number, ServiceFacts>();
  for (const s of services) {
    const [rec, progress, latest] = Array.isArray(s) ? s : [s, {}, []];
    map.set(rec.key, { record: rec, progress: { ...fresh, ...progress }, latest: new Map((latest ?? []).map((l) => [l.location, l])) });
  }
  return { runs, services: map, silences: more.silences ?? [], upstream: new Map(more.upstream ?? []), rollups: new Map(more.rollups ?? []), domains: new Map(more.domains ?? []), routes: more.routes ?? noRoutes };
}

const run = (serviceKey: number, outcome: Outcome, extra: Partial<ResultRun> = {}): ResultRun => ({ serviceKey, outcome, ...extra });

test("policy: the incident machine's transitions, with what each run writes", () => {
  const cases: { name: string; threshold: number; outcomes: Outcome[]; notices: string[][]; statuses: string[]; incidents: string[] }[] = [
    { name: "a failure within the threshold opens nothing", threshold: 1, outcomes: [fail(t0)], notices: [[]], statuses: ["down"], incidents: [] },
    { name: "the failure past it opens an incident with one DOWN", threshold: 1, outcomes: [fail(t0), fail(t0 + 1)], notices: [[], ["down"]], statuses: ["down", "down"], incidents: ["open -1"] },
    { name: "further failures say nothing more", threshold: 0, outcomes: [fail(t0), fail(t0 + 1), fail(t0 + 2)], notices: [["down"], [], []], statuses: ["down", "down", "down"], incidents: ["open -1"] },
    { name: "the first pass closes it with one RECOVERED", threshold: 0, outcomes: [fail(t0), pass(t0 + 1)], notices: [["down"], ["recovered"]], statuses: ["down", "up"], incidents: ["open -1", "close -1"] },
    { name: "a pass without an incident says nothing", threshold: 0, outcomes: [pass(t0)], notices: [[]], statuses: ["up"], incidents: [] },
  ];
  for (const c of cases) {
    const decision = decide(facts(c.outcomes.map((o) => run(1, o)), [record(1, { notifyThreshold: c.threshold })]), t0);
    assert.deepEqual(decision.runs.map((r) => r!.notices), c.notices, c.name);
    assert.deepEqual(decision.runs.map((r) => r!.state.status), c.statuses, c.name);
    assert.deepEqual(decision.incidents.map((i) => `${i.kind} ${i.id}`), c.incidents, c.name);
    assert.deepEqual(decision.notifications.map((n) => n.kind), c.notices.flat(), c.name);
    assert.ok(decision.runs.every((r) => r!.entry !== null), c.name);
  }
});

test("policy: a DOWN names the service, the error, the URL and the count; the RECOVERED the incident's failures", () => {
  const decision = decide(facts([run(1, fail(t0)), run(1, fail(t0 + 60_000)), run(1, pass(t0 + 120_000))], [record(1, { notifyThreshold: 1 })]), t0);
  const [down, recovered] = decision.notifications;
  assert.deepEqual([down!.kind, down!.body.title, down!.body.priority, down!.incidentId], ["down", "DOWN: web-01/s1", 4, -1]);
  assert.equal(down!.body.message, "status: status 503\nURL: http://127.0.0.1/s1\n2 consecutive failed checks since 2026-11-23T10:00:00Z\nChecked at 2026-11-23T10:01:00Z");
  assert.deepEqual([recovered!.body.title, recovered!.incidentId], ["RECOVERED: web-01/s1", -1]);
  assert.match(recovered!.body.message!, /^Passing again after 2 failed checks; down for 2m 0s/);
  const incident = decision.runs[2]!.incident!;
  assert.deepEqual([incident.id, incident.opened, incident.closed, incident.openedAt, incident.closedAt, incident.failures], [-1, false, true, t0 + 60_000, t0 + 120_000, 2]);
  // The incident starts at its first failure: the log's duration counts from it, as the RECOVERED's "down for 2m 0s" does.
  assert.equal(incident.closedAt! - incident.startedAt, 120_000);
  assert.deepEqual(decision.services.get(1)!.incidentId, null, "closed: the service has none");
});

test("policy: an incident the store already holds is closed by its id, and counts the failures it had", () => {
  const open = { ...initialState, status: "down" as const, consecutiveFailures: 3, failingSince: t0 - 3000, incidentOpenSince: t0 - 2000, lastRemindedAt: t0 - 2000 };
  const decision = decide(facts([run(1, pass(t0))], [[record(1), { state: open, incidentId: 42, incidentFailures: 3, incidentError: "status 503" }]]), t0);
  assert.deepEqual(decision.incidents, [{ kind: "close", id: 42, closedAt: t0, failures: 3 }]);
  assert.equal(decision.notifications[0]!.incidentId, 42);
});

test("policy: silences, maintenance and a pause hold the notifications; the DOWN goes out at the first failure after", () => {
  const silence: SilenceSpan = { serverId: "web-01", serviceId: null, startsAt: t0 - 1000, endsAt: t0 + 5000 };
  const silenced = decide(facts([run(1, fail(t0)), run(1, fail(t0 + 6000))], [record(1)], { silences: [silence] }), t0);
  assert.deepEqual(silenced.runs.map((r) => [r!.silenced, r!.notices]), [[true, []], [false, ["down"]]]);
  assert.deepEqual(silenced.incidents.map((i) => i.kind), ["open", "notified"], "opened unnotified, told once the silence is over");
  // Sundays 03:00 for an hour, in UTC: a failure inside it is silenced.
  const sunday = Date.parse("2026-11-22T03:30:00Z");
  const windowed = decide(facts([run(1, fail(sunday))], [record(1, { maintenance: [{ cron: "0 3 * * 0", durationMinutes: 60, timezone: "UTC" }] })]), sunday);
  assert.deepEqual([windowed.runs[0]!.silenced, windowed.notifications.length], [true, 0]);
  const paused = decide(facts([run(1, fail(t0))], [record(1, { paused: true })]), t0);
  assert.deepEqual([paused.runs[0]!.silenced, paused.notifications.length], [true, 0]);
});

test("policy: a service whose dependency has an open incident is blocked, and counts nothing; also when the batch opens it", () => {
  const app = record(1, { dependsOn: ["web-01/s2"] });
  const stored = decide(facts([run(1, fail(t0))], [app], { upstream: [["web-01/s2", { dependsOn: [], incidentOpen: true, failing: true }]] }), t0);
  assert.deepEqual([stored.runs[0]!.blockedBy, stored.runs[0]!.state.consecutiveFailures, stored.notifications.length], [["web-01/s2"], 0, 0]);
  // s2 opens its incident earlier in the same batch: s1's failure after it is blocked by it.
  const db = record(2);
  const inBatch = decide(facts([run(2, fail(t0)), run(1, fail(t0 + 1))], [app, db], { upstream: [["web-01/s2", { dependsOn: [], incidentOpen: false, failing: false }]] }), t0);
  assert.deepEqual(inBatch.runs.map((r) => r!.blockedBy), [[], ["web-01/s2"]]);
  assert.deepEqual(inBatch.notifications.map((n) => `${n.serviceId} ${n.kind}`), ["s2 down"]);
});

test("policy: several locations: one failing of three opens nothing, two open one incident that speaks with the newest", () => {
  const rec = record(1, { locations: ["eu", "us", "ap"], quorum: null, intervalSeconds: 60 });
  const latest = (location: string, ok: boolean, at: number): LocationResult => ({ location, checkedAt: at, ok, errorKind: ok ? null : "connect", error: ok ? null : `refused in ${location}` });
  const one = decide(facts([run(1, fail(t0), { location: "eu" })], [[rec, {}, [latest("us", true, t0 - 1000), latest("ap", true, t0 - 1000)]]]), t0);
  assert.deepEqual([one.runs[0]!.state.status, one.notifications.length], ["up", 0]);
  assert.deepEqual([...one.locationResults.keys()], ["1:eu"]);
  const two = decide(facts([run(1, fail(t0), { location: "eu" })], [[rec, {}, [latest("us", false, t0 - 1000), latest("ap", true, t0 - 1000)]]]), t0);
  assert.deepEqual(two.runs[0]!.notices, ["down"]);
  assert.match(two.notifications[0]!.body.message!, /^status: 2 of 3 locations fail; eu: status 503/);
  // The next location's result in the same interval makes no second verdict.
  const again = decide(facts([run(1, fail(t0), { location: "eu" }), run(1, fail(t0 + 1000), { location: "us" })], [[rec, {}, [latest("ap", false, t0 - 1000)]]]), t0);
  assert.deepEqual(again.runs.map((r) => r!.notices), [["down"], []]);
  assert.equal(again.services.get(1)!.lastVerdictAt, t0);
});

test("policy: a certificate near its end warns once per certificate; folded runs count but are not stored", () => {
  const expires = t0 + 5 * 86_400_000;
  const withCert = (at: number, until: number): Outcome => ({ ...pass(at), certExpiresAt: until });
  const decision = decide(facts([run(1, withCert(t0, expires)), run(1, withCert(t0 + 1, expires))], [record(1, { certWarnDays: 14 })]), t0);
  assert.deepEqual(decision.runs.map((r) => r!.notices), [["cert"], []]);
  assert.match(decision.notifications[0]!.body.title!, /^CERT: web-01\/s1 expires in 5d 0h/);
  const folded = decide(facts([run(1, fail(t0), { folded: 5 })], [record(1, { notifyThreshold: 3 })]), t0);
  assert.deepEqual([folded.runs[0]!.entry, folded.runs[0]!.state.consecutiveFailures, folded.runs[0]!.notices, folded.rollups.length], [null, 5, ["down"], 0]);
});

test("policy: rollups add to the stored hour and say when a settled hour changed; a deleted service's run has no decision", () => {
  const hour = Math.floor(t0 / 3_600_000) * 3_600_000;
  const stored: Rollup = { checks: 10, failures: 1, latencySum: 100, sketch: new Map([[58, 10]]), silencedChecks: 0, silencedFailures: 0, slowChecks: 0 };
  const decision = decide(facts([run(1, pass(t0, 20)), run(1, fail(t0 + 1)), run(9, pass(t0))], [record(1)], { rollups: [[`1:${hour}`, stored]] }), t0 + 60_000);
  assert.equal(decision.runs[2], undefined);
  assert.equal(decision.rollups.length, 1);
  const { rollup } = decision.rollups[0]!;
  assert.deepEqual([rollup.checks, rollup.failures, rollup.latencySum], [12, 2, 132]);
  assert.deepEqual(stored.sketch, new Map([[58, 10]]), "the stored rollup is left as it was");
  assert.equal(decision.settledHourChanged, false);
  assert.equal(decide(facts([run(1, pass(t0))], [record(1)]), t0 + 2 * 3_600_000).settledHourChanged, true);
});

test("policy: passes slower than slowMs make the service degraded; SLOW after notifyThreshold of them, NORMAL when they end", () => {
  const slowly = record(1, { slowMs: 100, notifySlow: true, notifyThreshold: 2 });
  const outcomes = [pass(t0, 150), pass(t0 + 1, 180), pass(t0 + 2, 190), pass(t0 + 3, 40), pass(t0 + 4, 150), fail(t0 + 5), pass(t0 + 6, 20)];
  const decision = decide(facts(outcomes.map((o) => run(1, o)), [slowly]), t0 + 10);
  assert.deepEqual(decision.runs.map((r) => r!.notices), [[], ["slow"], [], ["normal"], [], [], []]);
  assert.deepEqual(decision.runs.map((r) => r!.state.status), ["up", "up", "up", "up", "up", "down", "up"], "slow passes are up");
  const [slow, normal] = decision.notifications;
  assert.equal(slow!.body.title, "SLOW: web-01/s1 took 180 ms");
  assert.match(slow!.body.message!, /^2 checks in a row slower than 100 ms \(slowMs\); it still passes\nURL: http:\/\/127\.0\.0\.1\/s1\n/);
  assert.equal(normal!.body.title, "NORMAL: web-01/s1 took 40 ms");
  assert.match(normal!.body.message!, /^Back under 100 ms \(slowMs\) after 3 slow checks\n/);
  const progress = decision.services.get(1)!;
  assert.deepEqual([progress.slowStreak, progress.slowSent], [0, false], "a failure ended the streak; a fast pass kept it at 0");
  assert.equal(decision.rollups[0]!.rollup.slowChecks, 4, "uptime counts them as passes; /stats counts them as slow");
  assert.equal(decision.rollups[0]!.rollup.failures, 1);

  const quiet = decide(facts([run(1, pass(t0, 150)), run(1, pass(t0 + 1, 150))], [record(1, { slowMs: 100 })]), t0 + 10);
  assert.deepEqual([quiet.notifications.length, quiet.services.get(1)!.slowStreak], [0, 2], "without notifySlow, slow passes only count");
  const silenced = decide(facts([run(1, pass(t0, 150))], [record(1, { slowMs: 100, notifySlow: true, notifyThreshold: 0 })], { silences: [{ serverId: "web-01", serviceId: null, startsAt: t0 - 1, endsAt: t0 + 60_000 }] }), t0 + 10);
  assert.deepEqual(silenced.notifications, [], "a silence keeps SLOW quiet too");
});

test("policy: routing: the check's channels, else the default, else ntfy; each channel's events filter; the event fields", () => {
  const routes: Routes = { events: new Map([["pager", ["down"]], ["all", null], ["slowish", ["slow"]]]), defaults: ["all"] };
  const runs = [run(1, fail(t0)), run(1, pass(t0 + 60_000)), run(2, fail(t0))];
  const decision = decide(facts(runs, [record(1, { channels: ["pager", "all", "ntfy"] }), record(2)], { routes }), t0);
  assert.deepEqual(
    decision.notifications.map((n) => [n.serviceId, n.kind, n.channels]),
    [["s1", "down", ["pager", "all", "ntfy"]], ["s1", "recovered", ["all", "ntfy"]], ["s2", "down", ["all"]]],
  );
  const [down, recovered] = decision.notifications;
  assert.deepEqual(
    { ...down!.event, message: undefined },
    {
      event: "down", server: "web-01", service: "s1", serverName: "web-01", serviceName: "s1", url: "http://127.0.0.1/s1", error: "status 503",
      since: "2026-11-23T10:00:00Z", duration: null, incidentId: -1, at: "2026-11-23T10:00:00Z", title: "DOWN: web-01/s1", message: undefined,
    },
  );
  assert.deepEqual([recovered!.event.event, recovered!.event.since, recovered!.event.duration, recovered!.event.error], ["recovered", "2026-11-23T10:00:00Z", "1m 0s", null]);
  // No routes stored: the ntfy channel.
  assert.deepEqual(decide(facts([run(3, fail(t0))], [record(3)]), t0).notifications.map((n) => n.channels), [["ntfy"]]);
  assert.deepEqual([admits(["down"], "late"), admits(["late"], "down"), admits(["slow"], "normal"), admits(null, "test"), admits(null, "cert")], [true, false, true, false, true]);
});
