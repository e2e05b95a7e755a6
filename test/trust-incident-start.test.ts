/**
 * Issue 78, "outages counted from the first failure": an incident starts at its first failed check (stored
 * with it as startedAt), and every surface gives the same start and the same duration (policy/outage.ts):
 * /incidents, the status pages, the monthly report, the DOWN and RECOVERED texts, the log and `healthd tail`.
 * With them, what the same surfaces got wrong beside it: tail showing a slow service as up, heartbeat cards
 * saying "Latency 0 ms", and a too-long run's finishing entry losing its duration. Both engines.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HeartbeatTiming, ServiceFacts, ServiceRecord } from "../src/domain/batch.ts";
import type { HeartbeatProgress } from "../src/domain/model.ts";
import { storedRows } from "../src/cli/tail.ts";
import { fold, status } from "../src/cli/tail-view.tsx";
import { createLogger } from "../src/platform/log.ts";
import { initialState, type Outcome } from "../src/domain/model.ts";
import { decide } from "../src/policy/decide.ts";
import { heartbeatStep } from "../src/policy/heartbeat.ts";
import { noRoutes } from "../src/policy/route.ts";
import { duration } from "../src/policy/message.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import type { KyselyStore } from "../src/store/kysely-store.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { open, rawQuery } from "./support/raw.ts";
import { switchableTarget } from "./support/targets.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const isoSeconds = (ms: number) => iso(ms).replace(/\.\d{3}Z$/, "Z");

for (const engine of engines) {
  test(`${engine}: 3 failures at 1 s open the incident at the third; every surface counts from the first failure to the closing pass`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ json: true, level: "info", write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const d = await testDaemon(t, { engine, log, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 500 }, notifyRetryBaseMs: 20 });
    const target = await switchableTarget(t);
    const down = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN: web-01/home");
    const put = await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 2 } }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const [downMessage] = await down;
    const recovered = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "RECOVERED: web-01/home");
    target.setUp(true);
    const [recoveredMessage] = await recovered;

    // The entries: three failures, then the pass that closed it.
    const stored = await rawQuery(d.store, "SELECT checked_at, ok FROM health_check_data_entries ORDER BY id");
    const firstFailure = Number(stored.find((e) => !e.ok)!.checked_at);
    const closingPass = Number(stored.find((e) => Boolean(e.ok))!.checked_at);
    const third = Number(stored.filter((e) => !e.ok)[2]!.checked_at);

    const [incident] = (await d.api("GET", "/incidents")).body.incidents;
    assert.deepEqual(
      [incident.startedAt, incident.openedAt, incident.closedAt, incident.durationMs, incident.failures],
      [iso(firstFailure), iso(third), iso(closingPass), closingPass - firstFailure, 3],
      "the incident starts at the first failure, opens at the third, and lasts until the pass",
    );
    const lasted = duration(incident.durationMs);
    console.log(`${engine}: durationMs ${incident.durationMs} (first failure to closing pass), ${closingPass - third} from its opening`);

    // The notifications: DOWN says since when and how many; RECOVERED the same start and duration.
    assert.match(downMessage.message, new RegExp(`\\n3 consecutive failed checks since ${isoSeconds(firstFailure)}\\n`));
    assert.match(recoveredMessage.message, new RegExp(`^Passing again after 3 failed checks; down for ${lasted}\\n`));
    assert.match(recoveredMessage.message, new RegExp(`Down since ${isoSeconds(firstFailure)}, alerted at ${isoSeconds(third)}`));

    // The log says the same.
    const closed = await until(async () => lines.find((l) => l.message === "incident closed"), (l) => l !== undefined, "the incident closed line");
    assert.deepEqual([closed!.startedAt, closed!.duration], [iso(firstFailure), lasted]);

    // The status page's past incidents and the service's page: from the first failure, for as long.
    const page = await until(() => d.api("GET", "/status").then((r) => r.body as string), (b) => b.includes("past-incident"), "the past incident on /status");
    assert.match(page, new RegExp(`was down for ${lasted}, from <time datetime="${iso(firstFailure)}"[^>]*>`));
    const past = (await d.api("GET", "/status.json")).body.past.incidents[0];
    assert.deepEqual([past.startedAt, past.durationMs], [iso(firstFailure), incident.durationMs]);
    const servicePage = (await d.api("GET", "/status/web-01/home")).body as string;
    assert.match(servicePage, new RegExp(`<tr><td><time datetime="${iso(firstFailure)}"[^>]*>.*?</td><td>${lasted}</td><td>3</td></tr>`));

    // The month's report: its downtime is that duration.
    const month = iso(firstFailure).slice(0, 7);
    const report = await d.api("GET", `/reports?month=${month}`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.services[0].downtimeMs, incident.durationMs);
  });

  test(`${engine}: the migration gives each incident on record its start from its entries, else its opening`, async (t) => {
    const store = await open(await testDatabase(t, engine), { mode: "raw" });
    t.after(() => store.close());
    assert.ok((await store.backend.migrate("20261126000900_add_announcements")).ok);
    const bool = (b: boolean) => (engine === "sqlite" ? (b ? 1 : 0) : b ? "TRUE" : "FALSE");
    const exec = async (...statements: string[]) => {
      for (const s of statements) await rawQuery(store, s);
    };
    await exec(
      `INSERT INTO servers (id, name, created_at, updated_at) VALUES ('web-01', 'Web', 1, 1)`,
      `INSERT INTO services (key, server_id, id, name, created_at, updated_at) VALUES (1, 'web-01', 'home', 'Home', 1, 1), (2, 'web-01', 'api', 'API', 1, 1)`,
      // home: an earlier failure, a pass, then three failures, the third opening the incident; a pass closes it.
      `INSERT INTO health_check_data_entries (service_key, checked_at, ok, latency_ms) VALUES
        (1, 1000, ${bool(false)}, 1), (1, 2000, ${bool(true)}, 1), (1, 3000, ${bool(false)}, 1), (1, 4000, ${bool(false)}, 1),
        (1, 5000, ${bool(false)}, 1), (1, 9000, ${bool(true)}, 1)`,
      // api: its entries are gone (retention): it starts at its opening.
      `INSERT INTO incidents (service_key, server_id, service_id, opened_at, closed_at, failures, notified) VALUES
        (1, 'web-01', 'home', 5000, 9000, 3, ${bool(true)}), (2, 'web-01', 'api', 7000, NULL, 2, ${bool(true)})`,
    );
    const report = await store.backend.migrate();
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    const rows = await rawQuery(store, "SELECT service_id, started_at, opened_at FROM incidents ORDER BY id");
    assert.deepEqual(rows.map((r) => [r.service_id, Number(r.started_at), Number(r.opened_at)]), [["home", 3000, 5000], ["api", 7000, 7000]]);
    const { incidents } = await store.incidents({ limit: 10 });
    assert.deepEqual(incidents.map((i) => [i.serviceId, i.startedAt]), [["api", 7000], ["home", 3000]]);
  });

  test(`${engine}: healthd tail's rows say what the API says: slow as slow, down since the incident's start`, async (t) => {
    const store = await open(await testDatabase(t, engine), { mode: "write" });
    t.after(() => store.close());
    const server = { services: [{ id: "slow", check: { url: "http://127.0.0.1:9/", slowMs: 100 } }, { id: "down", check: { url: "http://127.0.0.1:9/", notifyThreshold: 1 } }] };
    await store.applyServers(new Map([["web-01", serverDocument.parse(server)]]), { now: Date.now() });
    const key = async (id: string) => (await store.findService("web-01", id)).key!;
    const t0 = Date.now() - 60_000;
    const outcome = (ok: boolean, latencyMs: number, checkedAt: number): Outcome =>
      ok
        ? { ok: true, status: 200, latencyMs, matched: 0, errorKind: null, error: null, checkedAt }
        : { ok: false, status: 503, latencyMs, matched: null, errorKind: "status", error: "status 503", checkedAt };
    await store.recordResults([{ serviceKey: await key("slow"), outcome: outcome(true, 400, t0) }], t0);
    for (const at of [t0, t0 + 10_000, t0 + 20_000]) await store.recordResults([{ serviceKey: await key("down"), outcome: outcome(false, 5, at) }], at);
    const rows = new Map((await storedRows(store, {}, t0 + 50_000)).map((r) => [r.name, r]));
    assert.equal(status(rows.get("web-01/slow")!, t0 + 50_000), "slow", "the API says degraded");
    assert.equal((await d(store)).get("slow"), "degraded");
    assert.equal(rows.get("web-01/down")!.since, t0, "its incident's start: the first failure");
    assert.equal(status(rows.get("web-01/down")!, t0 + 50_000), "DOWN 50s");
    // The table takes the stored rows after the entries that came: a slow pass is slow, not up.
    const [entry] = await store.entriesAfter(0, { serverId: "web-01", serviceId: "slow" });
    const folded = fold({ rows: new Map(), failures: [] }, [entry!], [...rows.values()]);
    assert.equal(status(folded.rows.get("web-01/slow")!, t0 + 50_000), "slow");
    assert.equal(status(fold({ rows: new Map(), failures: [] }, [entry!]).rows.get("web-01/slow")!, t0 + 50_000), "up", "the entry alone cannot tell");
  });

  test(`${engine}: a heartbeat's card gives its last run's duration, not "Latency 0 ms"`, async (t) => {
    const d = await testDaemon(t, { engine });
    const put = await d.api("PUT", "/services/jobs", { services: [{ id: "etl", check: { type: "heartbeat", periodSeconds: 3600 } }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const key = (await d.api("GET", "/services/jobs/etl")).body.check.pingKey as string;
    assert.equal((await d.api("POST", `/ping/${key}/start`)).status, 200);
    assert.equal((await d.api("POST", `/ping/${key}`)).status, 200);
    const shown = await until(() => d.api("GET", "/status/jobs").then((r) => r.body as string), (b) => b.includes("Last run took"), "the heartbeat's card with its run");
    assert.doesNotMatch(shown, /<dt>Latency<\/dt>/, "a heartbeat has no latency");
    assert.match(shown, /<dt>Last run took<\/dt><dd>\d+ ms<\/dd>/);
  });
}

/** Each service's status as GET /services/web-01 gives it. */
async function d(store: KyselyStore): Promise<Map<string, string>> {
  const { serviceViews } = await import("../src/http/views.ts");
  return new Map((await serviceViews(store, Date.now(), "web-01")).map((s) => [s.id, s.state.status]));
}

test("a run reported too long that finishes at last: its entry carries its duration, start to finish", () => {
  const timing: HeartbeatTiming = { periodSeconds: 3600, cron: null, timezone: null, graceSeconds: 60, maxRunSeconds: 60, minRunSeconds: null, since: 0 };
  const fresh: HeartbeatProgress = { lastPingAt: null, openRuns: {}, lastDurationMs: null, lastFinishAt: null, missedDueAt: null };
  const ping = (at: number, signal: "start" | "success") => ({ kind: "ping" as const, serviceKey: 1, at, ping: { signal, exitCode: null, body: null, runId: null } });
  const started = heartbeatStep(timing, fresh, ping(1000, "start"));
  const late = heartbeatStep(timing, started.progress, { kind: "deadline", serviceKey: 1, at: 70_000 });
  assert.deepEqual([late.entry?.errorKind, late.entry?.durationMs], ["too-long", 69_000]);
  const finished = heartbeatStep(timing, late.progress, ping(100_000, "success"));
  assert.deepEqual([finished.entry?.kind, finished.entry?.durationMs, finished.progress.lastDurationMs], ["success", 99_000, 99_000]);
  assert.deepEqual([finished.progress.openRuns, finished.progress.overdueRuns], [{}, {}], "the run is over");
});

test("an incident that a pass interrupts (recoverThreshold 2) keeps its start: RECOVERED and the close count from its first failure", () => {
  const record: ServiceRecord = {
    key: 1, serverId: "web-01", serviceId: "home", serverName: "web-01", serviceName: "home", channels: null, type: "http", url: "http://127.0.0.1/", notify: true,
    notifyThreshold: 1, notifyTopic: null, paused: false, recoverThreshold: 2, remindEveryMinutes: null, certWarnDays: null, slowMs: null, notifySlow: false,
    domainWarnDays: null, domain: null, locations: null, quorum: null, intervalSeconds: 60, cron: null, dependsOn: [], maintenance: [], heartbeat: null,
  };
  const progress: ServiceFacts["progress"] = {
    state: initialState, lastCheckedAt: null, incidentId: null, incidentFailures: 0, incidentError: null, incidentStartedAt: null, certWarnedExpiry: null,
    lastVerdictAt: null, lastPingAt: null, openRuns: {}, lastDurationMs: null, lastFinishAt: null, missedDueAt: null, slowStreak: 0, slowSent: false, domainWarnedExpiry: null,
  };
  const t0 = Date.UTC(2026, 10, 23, 10);
  const outcome = (ok: boolean, minute: number): Outcome =>
    ok
      ? { ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt: t0 + minute * 60_000 }
      : { ok: false, status: 503, latencyMs: 1, matched: null, errorKind: "status", error: "status 503", checkedAt: t0 + minute * 60_000 };
  // Fails at 0 and 1 (opens), passes at 2, fails at 3, passes at 4 and 5 (closes).
  const results = [false, false, true, false, true, true].map((ok, minute) => ({ serviceKey: 1, outcome: outcome(ok, minute) }));
  const facts = { runs: results, services: new Map([[1, { record, progress, latest: new Map() }]]), silences: [], upstream: new Map(), rollups: new Map(), domains: new Map(), routes: noRoutes };
  const decision = decide(facts, t0);
  assert.deepEqual(decision.incidents.map((i) => [i.kind, i.kind === "open" ? [i.startedAt, i.openedAt] : null]), [["open", [t0, t0 + 60_000]], ["close", null]]);
  const closed = decision.runs[5]!.incident!;
  assert.deepEqual([closed.startedAt, closed.closedAt], [t0, t0 + 5 * 60_000]);
  const recovered = decision.notifications.find((n) => n.kind === "recovered")!;
  assert.match(recovered.body.message!, /down for 5m 0s\n/);
  assert.deepEqual([recovered.event.since, recovered.event.duration], ["2026-11-23T10:00:00Z", "5m 0s"]);
});
