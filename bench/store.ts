/**
 * npm run bench:store — the store at 10 million entries over 10,000 services:
 * - the insert rate through healthd's own write path (the recorder's transaction: entries, service state and
 *   hourly rollups, in batches of 500), median of RUNS runs;
 * - bytes on disk per entry, the table and its index counted (SQLite's dbstat);
 * - p50/p99 of reading the newest page of a service, and a page deep in its cursor chain;
 * - retention deleting the oldest 10% of the entries: its rate and the worst batch (event-loop stall).
 * The measured runs go through that write path; the rest of the 10 million rows is filled with one plain
 * prepared INSERT in large transactions (same table, same index, same interleaving across services as checks
 * produce), because the full write path would take the bench past its five minutes.
 * Environment: ENTRIES (10000000), SERVICES (10000), RUNS (3), READS (2000).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { applyServers } from "../src/apply.ts";
import type { CheckResult } from "../src/model.ts";
import { rollupDeltas } from "../src/rollup/deltas.ts";
import { encodeCursor, listEntries, recordChecks, type Finished } from "../src/store/entries.ts";
import { openMigrated } from "../src/store/migrate.ts";
import { startCheckpointer } from "../src/store/checkpointer.ts";
import { addRollups } from "../src/store/rollups.ts";
import { scheduledServices } from "../src/store/servers.ts";
import { serverDocument } from "../src/schema.ts";
import { silentLogger } from "../src/log.ts";
import { Retention } from "../src/retention.ts";
import { fixed, median, percentile } from "./stats.ts";

const entries = Number(process.env.ENTRIES ?? 10_000_000);
const services = Number(process.env.SERVICES ?? 10_000);
const runs = Number(process.env.RUNS ?? 3);
const reads = Number(process.env.READS ?? 2000);
const batchSize = 500;

const dir = mkdtempSync(join(tmpdir(), "healthd-bench-store-"));
const { store } = await openMigrated(join(dir, "store.db"));
try {
  const servers = new Map();
  for (let s = 0; s * 1000 < services; s++) {
    const count = Math.min(1000, services - s * 1000);
    servers.set(
      `server-${s}`,
      serverDocument.parse({ services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url: "http://127.0.0.1:9/" } })) }),
    );
  }
  applyServers(store, servers);
  const keys = scheduledServices(store).map((s) => s.key);

  const ok: CheckResult = { ok: true, status: 200, latencyMs: 0, matched: 0, errorKind: null, error: null };
  const failed: CheckResult = { ok: false, status: 503, latencyMs: 0, matched: null, errorKind: "status", error: "status 503 matched no alternative (expected 2xx)" };
  const state = { status: "up" as const, consecutiveFailures: 0, failingSince: null, incidentOpenSince: null };
  const start = Date.now() - Math.ceil(entries / services) * 10_000;
  let written = 0;

  /** Write `n` more entries the way the recorder does: one transaction per batch of 500. */
  const write = (n: number) => {
    const end = written + n;
    while (written < end) {
      const batch: Finished[] = [];
      for (let i = 0; i < batchSize && written < end; i++, written++) {
        const result = written % 50 === 0 ? failed : ok;
        batch.push({
          serviceKey: keys[written % keys.length]!,
          // Services take turns, 10 s apart each: the rowid order is the time order, as in the daemon.
          checkedAt: start + Math.floor(written / keys.length) * 10_000 + (written % keys.length),
          result: { ...result, latencyMs: 5 + (written % 200) / 10 },
          state,
        });
      }
      store.transaction(() => {
        recordChecks(store, batch);
        addRollups(store, rollupDeltas(batch));
      });
    }
  };

  const rates: number[] = [];
  const sample = Math.min(200_000, Math.floor(entries / 10));
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    write(sample);
    rates.push(sample / ((performance.now() - t0) / 1000));
    console.log(`insert run ${r + 1}/${runs}: ${fixed(rates.at(-1)!, 0)} entries/s`);
  }
  const fillStarted = performance.now();
  const bulk = store.sqlite.prepare(
    "INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms, error_kind, error, matched) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  const fill = store.sqlite.transaction((n: number) => {
    for (let i = 0; i < n; i++, written++) {
      const r = written % 50 === 0 ? failed : ok;
      const checkedAt = start + Math.floor(written / keys.length) * 10_000 + (written % keys.length);
      bulk.run(keys[written % keys.length]!, checkedAt, r.ok ? 1 : 0, r.status, 5 + (written % 200) / 10, r.errorKind, r.error, r.matched);
    }
  });
  let lastReport = fillStarted;
  while (written < entries) {
    fill(Math.min(200_000, entries - written));
    if (performance.now() - lastReport > 15_000) {
      lastReport = performance.now();
      console.log(`filled ${written} entries...`);
    }
  }
  const fillRate = (entries - runs * sample) / ((performance.now() - fillStarted) / 1000);
  store.sqlite.pragma("wal_checkpoint(TRUNCATE)");

  const bytes = store.sqlite
    .prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name IN ('health_check_data_entries', 'health_check_data_entries_by_service')`)
    .get() as { n: number };
  const count = (store.sqlite.prepare("SELECT count(*) AS n FROM health_check_data_entries").get() as { n: number }).n;

  const timeReads = (read: (key: number) => void) => {
    const times: number[] = [];
    for (let i = 0; i < reads; i++) {
      const key = keys[(i * 7919) % keys.length]!;
      const t0 = performance.now();
      read(key);
      times.push(performance.now() - t0);
    }
    return times.sort((a, b) => a - b);
  };
  const newest = timeReads((key) => {
    if (listEntries(store, key, { limit: 100 }).entries.length === 0) throw new Error("empty page");
  });
  // A cursor halfway down the service's history, as if the client had followed `next` many times.
  const deepCursor = new Map(
    keys.map((key) => {
      const { entries: page } = listEntries(store, key, { limit: 1000 });
      return [key, encodeCursor(Number(page[Math.floor(page.length / 2)]!.id))];
    }),
  );
  const deep = timeReads((key) => {
    if (listEntries(store, key, { limit: 100, before: deepCursor.get(key)! }).entries.length === 0) throw new Error("empty page");
  });

  // Retention with its cutoff a tenth of the way into the history: the oldest million entries go.
  const span = Math.ceil(entries / services) * 10_000;
  const cutoff = start + span / 10;
  const batches: number[] = [];
  const checkpointer = startCheckpointer(store, silentLogger); // as the daemon runs
  const retention = new Retention(store, {
    entriesDays: 30,
    rollupDays: 365,
    now: () => cutoff + 30 * 86_400_000,
    log: silentLogger,
    onBatch: (ms) => batches.push(ms),
  });
  const retentionStarted = performance.now();
  const pass = await retention.runOnce();
  const retentionSeconds = (performance.now() - retentionStarted) / 1000;
  await checkpointer.stop();
  batches.sort((a, b) => a - b);

  console.log(`fill: ${count} entries over ${keys.length} services (bulk fill ${fixed(fillRate, 0)} entries/s)`);
  console.log(`insert rate (healthd write path, batches of ${batchSize}, median of ${runs}): ${fixed(median(rates), 0)} entries/s`);
  console.log(`bytes per entry on disk (table + index): ${fixed(bytes.n / count, 1)}`);
  console.log(`newest page (100 entries): p50 ${fixed(percentile(newest, 50), 3)} ms, p99 ${fixed(percentile(newest, 99), 3)} ms`);
  console.log(`deep page (100 entries, cursor halfway): p50 ${fixed(percentile(deep, 50), 3)} ms, p99 ${fixed(percentile(deep, 99), 3)} ms`);
  console.log(
    `retention: ${pass.entries} entries deleted in ${fixed(retentionSeconds)} s (${fixed(pass.entries / retentionSeconds, 0)}/s), ` +
      `${batches.length} batches, batch p50 ${fixed(percentile(batches, 50))} ms, worst stall ${fixed(pass.worstBatchMs)} ms`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
