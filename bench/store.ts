/**
 * npm run bench:store — the store at 10 million entries over 10,000 services, on each engine:
 * - the insert rate through healthd's own write path (Store.recordResults: entries, service states decided in
 *   the transaction, hourly rollups, in batches of 500), median of RUNS runs;
 * - bytes on disk per entry, the table and its index counted (SQLite's dbstat; PostgreSQL's relation sizes);
 * - p50/p99 of reading the newest page of a service, and a page deep in its cursor chain;
 * - retention deleting the oldest 10% of the entries: its rate and the worst batch.
 * The measured runs go through the write path; the rest of the 10 million rows is filled by one INSERT ... SELECT
 * over a generated series inside the database (same table, same index, same interleaving across services as
 * checks produce), because the full write path would take the bench past its minutes. That fill is a fixture,
 * written in SQL through the store's raw escape hatch, as the migration tests' fixtures are.
 * Environment: ENGINES (sqlite,postgres), ENTRIES (10000000), SERVICES (10000), RUNS (3), READS (2000),
 * BENCH_PG (postgres://postgres@127.0.0.1:5432/, where a database is created and dropped).
 */
import { performance } from "node:perf_hooks";
import type { CheckResult } from "../src/domain/model.ts";
import type { CheckRun } from "../src/domain/batch.ts";
import { systemClock } from "../src/platform/clock.ts";
import { silentLogger } from "../src/platform/log.ts";
import { Retention } from "../src/runtime/retention.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open, rawQuery } from "../test/support/raw.ts";
import type { Store } from "../src/store/store.ts";
import { benchDatabase } from "./database.ts";
import { fixed, median, percentile } from "./stats.ts";

const entries = Number(process.env.ENTRIES ?? 10_000_000);
const services = Number(process.env.SERVICES ?? 10_000);
const runs = Number(process.env.RUNS ?? 3);
const reads = Number(process.env.READS ?? 2000);
const engines = (process.env.ENGINES ?? "sqlite,postgres").split(",");
const batchSize = 500;

for (const engine of engines) {
  const { target, cleanUp } = benchDatabase(engine, "store");
  console.log(`\n== ${engine}`);
  // serve mode: the store as the daemon runs it (on SQLite, with checkpoints on their worker thread).
  const store = await open(target, { mode: "serve" });
  try {
    await bench(store);
  } finally {
    await store.close();
    cleanUp();
  }
}

async function bench(store: Store): Promise<void> {
  const servers = new Map();
  for (let s = 0; s * 1000 < services; s++) {
    const count = Math.min(1000, services - s * 1000);
    servers.set(
      `server-${s}`,
      serverDocument.parse({ services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url: "http://127.0.0.1:9/" } })) }),
    );
  }
  await store.applyServers(servers, { now: Date.now() });
  const keys = (await store.scheduledServices()).map((s) => s.key);

  const ok: CheckResult = { ok: true, status: 200, latencyMs: 0, matched: 0, errorKind: null, error: null };
  const failed: CheckResult = { ok: false, status: 503, latencyMs: 0, matched: null, errorKind: "status", error: "status 503 matched no alternative (expected 2xx)" };
  const start = Date.now() - Math.ceil(entries / services) * 10_000;
  let written = 0;
  // Services take turns, 10 s apart each: the id order is the time order, as in the daemon.
  const checkedAt = (n: number) => start + Math.floor(n / keys.length) * 10_000 + (n % keys.length);

  /** Write `n` more entries the way the recorder does: one transaction per batch of 500. */
  const write = async (n: number) => {
    const end = written + n;
    while (written < end) {
      const batch: CheckRun[] = [];
      for (let i = 0; i < batchSize && written < end; i++, written++) {
        const result = written % 50 === 0 ? failed : ok;
        batch.push({ serviceKey: keys[written % keys.length]!, outcome: { ...result, latencyMs: 5 + (written % 200) / 10, checkedAt: checkedAt(written) } });
      }
      await store.recordResults(batch, systemClock.now());
    }
  };

  const rates: number[] = [];
  const sample = Math.min(100_000, Math.floor(entries / 10));
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    await write(sample);
    rates.push(sample / ((performance.now() - t0) / 1000));
    console.log(`insert run ${r + 1}/${runs}: ${fixed(rates.at(-1)!, 0)} entries/s`);
  }

  const fillStarted = performance.now();
  const fillFrom = written;
  const step = 2_000_000;
  while (written < entries) {
    const n = Math.min(step, entries - written);
    await rawQuery(store, fillStatement(store.engine, written, n, keys, start));
    written += n;
    console.log(`filled ${written} entries...`);
  }
  const fillRate = (written - fillFrom) / ((performance.now() - fillStarted) / 1000);
  const { bytes, count } = await size(store);

  const timeReads = async (read: (key: number) => Promise<void>) => {
    const times: number[] = [];
    for (let i = 0; i < reads; i++) {
      const key = keys[(i * 7919) % keys.length]!;
      const t0 = performance.now();
      await read(key);
      times.push(performance.now() - t0);
    }
    return times.sort((a, b) => a - b);
  };
  const newest = await timeReads(async (key) => {
    if ((await store.readEntries(key, { limit: 100 })).entries.length === 0) throw new Error("empty page");
  });
  // A cursor halfway down the service's history, as if the client had followed `next` many times.
  const deepCursor = new Map<number, number>();
  for (const key of keys) {
    const { entries: page } = await store.readEntries(key, { limit: 1000 });
    deepCursor.set(key, page[Math.floor(page.length / 2)]!.id);
  }
  const deep = await timeReads(async (key) => {
    if ((await store.readEntries(key, { limit: 100, before: deepCursor.get(key)! })).entries.length === 0) throw new Error("empty page");
  });

  // Retention with its cutoff a tenth of the way into the history: the oldest million entries go.
  const span = Math.ceil(entries / services) * 10_000;
  const cutoff = start + span / 10;
  const batches: number[] = [];
  const retention = new Retention(store, {
    entriesDays: 30,
    rollupDays: 365,
    clock: { ...systemClock, now: () => cutoff + 30 * 86_400_000 },
    log: silentLogger,
    onBatch: (ms) => batches.push(ms),
  });
  const retentionStarted = performance.now();
  const pass = await retention.runOnce();
  const retentionSeconds = (performance.now() - retentionStarted) / 1000;
  batches.sort((a, b) => a - b);

  console.log(`fill: ${count} entries over ${keys.length} services (bulk fill ${fixed(fillRate, 0)} entries/s)`);
  console.log(`insert rate (healthd write path, batches of ${batchSize}, median of ${runs}): ${fixed(median(rates), 0)} entries/s`);
  console.log(`bytes per entry on disk (table + index): ${fixed(bytes / count, 1)}`);
  console.log(`newest page (100 entries): p50 ${fixed(percentile(newest, 50), 3)} ms, p99 ${fixed(percentile(newest, 99), 3)} ms`);
  console.log(`deep page (100 entries, cursor halfway): p50 ${fixed(percentile(deep, 50), 3)} ms, p99 ${fixed(percentile(deep, 99), 3)} ms`);
  console.log(
    `retention: ${pass.entries} entries deleted in ${fixed(retentionSeconds)} s (${fixed(pass.entries / retentionSeconds, 0)}/s), ` +
      `${batches.length} batches, batch p50 ${fixed(percentile(batches, 50))} ms, worst batch ${fixed(pass.worstBatchMs)} ms`,
  );
}

/** Entries `from` .. `from + n - 1` of the fill, generated inside the database, as the write path lays them out. */
function fillStatement(engine: Store["engine"], from: number, n: number, keys: readonly number[], start: number): string {
  const services = keys.length;
  // Keys are consecutive from keys[0] (one PUT created them all).
  const row = (i: string) => `(${keys[0]} + (${i}) % ${services}), ${start} + ((${i}) / ${services}) * 10000 + (${i}) % ${services}`;
  const values = (i: string, bool: (b: string) => string) =>
    `${row(i)}, ${bool(`(${i}) % 50 <> 0`)}, CASE WHEN (${i}) % 50 = 0 THEN 503 ELSE 200 END, 5 + ((${i}) % 200) / 10.0,
     CASE WHEN (${i}) % 50 = 0 THEN 'status' END, CASE WHEN (${i}) % 50 = 0 THEN 'status 503 matched no alternative (expected 2xx)' END,
     CASE WHEN (${i}) % 50 = 0 THEN NULL ELSE 0 END`;
  const columns = "service_key, checked_at, ok, status, latency_ms, error_kind, error, matched";
  if (engine === "postgres") {
    return `INSERT INTO health_check_data_entries (${columns}) SELECT ${values("g", (b) => b)} FROM generate_series(${from}, ${from + n - 1}) AS g`;
  }
  return `WITH RECURSIVE s(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM s WHERE i < ${from + n - 1})
    INSERT INTO health_check_data_entries (${columns}) SELECT ${values("i", (b) => `CASE WHEN ${b} THEN 1 ELSE 0 END`)} FROM s`;
}

async function size(store: Store): Promise<{ bytes: number; count: number }> {
  const [{ n: count }] = (await rawQuery(store, "SELECT count(*) AS n FROM health_check_data_entries")) as [{ n: number }];
  if (store.engine === "postgres") {
    await rawQuery(store, "VACUUM ANALYZE health_check_data_entries");
    const [{ n }] = (await rawQuery(store, "SELECT pg_total_relation_size('health_check_data_entries') AS n")) as [{ n: number }];
    return { bytes: Number(n), count: Number(count) };
  }
  await rawQuery(store, "PRAGMA wal_checkpoint(TRUNCATE)");
  const [{ n }] = (await rawQuery(
    store,
    `SELECT sum(pgsize) AS n FROM dbstat WHERE name IN ('health_check_data_entries', 'health_check_data_entries_by_service')`,
  )) as [{ n: number }];
  return { bytes: n, count: Number(count) };
}
