import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { systemClock } from "../src/platform/clock.ts";
import { silentLogger } from "../src/platform/log.ts";
import { Retention } from "../src/runtime/retention.ts";
import { add, quantile, type Sketch } from "../src/policy/sketch.ts";
import { compiledOnce } from "../src/store/queries/compiled.ts";
import { sketchFromJson, sketchToJson } from "../src/store/queries/rows.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open, rawQuery } from "./support/raw.ts";
import type { CheckDone } from "../src/daemon.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";

const day = 86_400_000;
/**
 * A check whose answer never comes while the test runs: these tests store results of their own, and the
 * daemon's own first check of a new service (within a second of its PUT) would add an entry to what they count.
 * (Not `paused: true`: a paused service's results are silenced, which takes them out of its uptime.)
 */
async function unanswered(t: TestContext) {
  const target = await httpTarget(t);
  return { url: `${target.url}/slow-headers`, intervalSeconds: 86400, timeoutMs: 300_000 };
}

test("sketch: quantiles within 4% of the true value, whatever the distribution", () => {
  const values = Array.from({ length: 10_000 }, (_, i) => (i % 10 === 0 ? 2000 + i : 5 + (i % 97) * 0.7));
  const sketch: Sketch = new Map();
  for (const v of values) add(sketch, v);
  const sorted = [...values].sort((a, b) => a - b);
  for (const q of [0.5, 0.95, 0.99]) {
    const truth = sorted[Math.ceil(q * sorted.length) - 1]!;
    const estimate = quantile(sketch, q)!;
    assert.ok(Math.abs(estimate - truth) / truth <= 0.04, `q${q}: ${estimate} vs ${truth}`);
  }
  assert.equal(quantile(new Map(), 0.5), null);
  assert.deepEqual(sketchFromJson(sketchToJson(sketch)), sketch, "stored as JSON and read back whole");
  assert.deepEqual(sketchFromJson('{"58":10,"3":2}'), new Map([[58, 10], [3, 2]]));
});

/** Store one result per (minutes ago, ok, latency) for a service, through the store's write path. */
async function store(d: TestDaemon, serviceId: string, results: [number, boolean, number][], now = Date.now()) {
  const { key } = await d.store.findService("s", serviceId);
  const runs = results.map(([minutesAgo, ok, latencyMs]) => {
    const checkedAt = now - minutesAgo * 60_000;
    return {
      serviceKey: key!,
      outcome: ok
        ? { ok: true as const, status: 200, latencyMs, matched: 0, errorKind: null, error: null, checkedAt }
        : { ok: false as const, status: 500, latencyMs, matched: null, errorKind: "status" as const, error: "status 500", checkedAt },
    };
  });
  // In batches, as the recorder writes them.
  for (let i = 0; i < runs.length; i += 500) await d.store.recordResults(runs.slice(i, i + 500), now);
}

for (const engine of engines) {
  test(`${engine}: GET …/stats answers uptime, p50/p95 latency, checks and failures over a window`, async (t) => {
    const d = await testDaemon(t, { engine });
    const check = await unanswered(t);
    await d.api("PUT", "/services/s", { services: [{ id: "a", check }] });
    // Within the last day: 90 passing at 10 ms, 10 failing at 100 ms. Eight days ago: 100 failures.
    await store(d, "a", [
      ...Array.from({ length: 90 }, (_, i): [number, boolean, number] => [i, true, 10]),
      ...Array.from({ length: 10 }, (_, i): [number, boolean, number] => [i, false, 100]),
      ...Array.from({ length: 100 }, (): [number, boolean, number] => [8 * 24 * 60, false, 50]),
    ]);
    const day1 = await d.api("GET", "/services/s/a/stats?window=24h");
    assert.equal(day1.status, 200);
    assert.equal(day1.body.window, "24h");
    assert.deepEqual([day1.body.checks, day1.body.failures, day1.body.uptime], [100, 10, 0.9]);
    assert.ok(Math.abs(day1.body.latencyMs.p50 - 10) <= 0.4, String(day1.body.latencyMs.p50));
    assert.ok(Math.abs(day1.body.latencyMs.p95 - 100) <= 4, String(day1.body.latencyMs.p95));
    assert.equal(day1.body.latencyMs.mean, 19);
    const week2 = await d.api("GET", "/services/s/a/stats?window=30d");
    assert.deepEqual([week2.body.checks, week2.body.failures], [200, 110]);
    const fresh = await d.api("PUT", "/services/s", { services: [{ id: "a", check }, { id: "b", check }] });
    assert.equal(fresh.status, 200);
    const none = await d.api("GET", "/services/s/b/stats");
    assert.deepEqual(none.body.latencyMs, { mean: null, p50: null, p95: null });
    assert.equal(none.body.uptime, null);
    assert.equal((await d.api("GET", "/services/s/a/stats?window=2h")).status, 400);
    assert.equal((await d.api("GET", "/services/s/zzz/stats")).status, 404);
  });

  test(`${engine}: a batch of 45 results for 45 services stores each as its own entry and state (SQLite writes it in two statements)`, async (t) => {
    const d = await testDaemon(t, { engine });
    const ids = Array.from({ length: 45 }, (_, i) => `svc-${i}`);
    const check = await unanswered(t);
    await d.api("PUT", "/services/s", { services: ids.map((id) => ({ id, check })) });
    const keys = await Promise.all(ids.map(async (id) => (await d.store.findService("s", id)).key!));
    const now = Date.now();
    const runs = keys.map((serviceKey, i) => ({
      serviceKey,
      outcome: { ok: true as const, status: 200, latencyMs: 100 + i, matched: 0, errorKind: null, error: null, checkedAt: now },
    }));
    const recorded = await d.store.recordResults(runs, now);
    const rows = await rawQuery(d.store, "SELECT id, service_key, latency_ms FROM health_check_data_entries");
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    assert.equal(byId.size, 45);
    recorded.forEach((r, i) => {
      const row = byId.get(r!.entry!.id)!;
      assert.deepEqual([Number(row.service_key), Number(row.latency_ms)], [keys[i], 100 + i], `run ${i}`);
    });
    const states = await rawQuery(d.store, "SELECT service_key, last_entry_id FROM service_states");
    assert.equal(states.length, 45);
    for (const state of states) assert.equal(Number(byId.get(Number(state.last_entry_id))!.service_key), Number(state.service_key));
  });

  test(`${engine}: the daemon's own checks feed the rollups`, async (t) => {
    const target = await httpTarget(t);
    const d = await testDaemon(t, { engine });
    const done = nextEvent<[CheckDone]>(d.events, "check:done");
    await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: `${target.url}/ok`, intervalSeconds: 60 } }] });
    await done;
    const stats = await d.api("GET", "/services/s/a/stats");
    assert.deepEqual([stats.body.checks, stats.body.failures, stats.body.uptime], [1, 0, 1]);
  });

  test(`${engine}: retention deletes old entries in small batches and old rollups, and keeps the rest`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/s", { services: [{ id: "a", check: await unanswered(t) }] });
    const now = Date.now();
    // 5,000 entries 40 days old, 50 from today; rollups of 400 days ago and of today.
    await store(d, "a", Array.from({ length: 5000 }, (): [number, boolean, number] => [40 * 24 * 60, true, 5]), now);
    await store(d, "a", Array.from({ length: 50 }, (_, i): [number, boolean, number] => [i, true, 5]), now);
    await store(d, "a", [[400 * 24 * 60, false, 5]], now);
    const batches: number[] = [];
    const retention = new Retention(d.store, {
      entriesDays: 30,
      rollupDays: 365,
      batchSize: 1000,
      clock: { ...systemClock, now: () => now },
      log: silentLogger,
      onBatch: (_ms, deleted) => batches.push(deleted),
    });
    const pass = await retention.runOnce();
    assert.equal(pass.entries, 5001);
    assert.equal(pass.rollups, 1);
    assert.ok(batches.every((n) => n <= 1000));
    assert.ok(batches.filter((n) => n > 0).length >= 6, String(batches));
    const count = async (sql: string) => Number((await rawQuery(d.store, sql))[0]!.n);
    assert.equal(await count("SELECT count(*) AS n FROM health_check_data_entries"), 50);
    assert.equal(await count(`SELECT count(*) AS n FROM service_rollups WHERE hour < ${now - 365 * day}`), 0);
    assert.ok((await count(`SELECT count(*) AS n FROM service_rollups WHERE hour < ${now - 30 * day}`)) > 0, "rollups outlive the entries");
    assert.equal((await d.api("GET", "/services/s/a/stats?window=365d")).body.checks, 5050);
    assert.equal((await retention.runOnce()).entries, 0);
  });

  test(`${engine}: a query compiled once runs with each call's values, whatever the lengths of its lists`, async (t) => {
    const store = await open(await testDatabase(t, engine), { mode: "write" });
    t.after(() => store.close());
    const services = ["a", "b", "c"].map((id) => ({ id, check: { type: "heartbeat", periodSeconds: 60 } }));
    const servers = new Map(["s", "t"].map((server) => [server, serverDocument.parse({ services })]));
    await store.applyServers(servers, { now: Date.now() });
    const keys = new Map((await rawQuery(store, "SELECT key, server_id, id FROM services")).map((r) => [`${r.server_id}/${r.id}`, Number(r.key)]));
    // keyIn is an IN list of placeholders on SQLite and one array parameter on PostgreSQL.
    const named = compiledOnce((db, backend, keys: readonly number[], server: string) =>
      db.selectFrom("services").select("id").where(backend.keyIn("key", keys)).where("server_id", "=", server).orderBy("key"),
    );
    for (const [server, ids] of [["s", ["a"]], ["s", ["b", "c"]], ["t", ["c"]], ["t", ["a", "b"]], ["s", ["a", "b", "c"]], ["t", ["b"]]] as const) {
      // Each asks for its ids of both servers: only the server's own answer, so every value is the call's.
      const asked = ids.flatMap((id) => [keys.get(`s/${id}`)!, keys.get(`t/${id}`)!]);
      const { rows } = await named(store.backend.db, store.backend, asked, server);
      assert.deepEqual(rows.map((r) => r.id), ids, `${server}: ${ids.join(", ")}`);
    }
  });
}
