/**
 * npm run bench:write — the write path alone on SQLite, against SQLite's own floor for the same rows.
 *
 * SERVICES services (1,000), batches of PER results (80: what a daemon at 1,000 services at 20 s commits about
 * every 1.6 s), each of PER services picked at random, BATCHES batches a run (600), RUNS runs (3). The file
 * starts as a daemon's some days old would: HISTORY_ENTRIES entries a service (500) and HISTORY_HOURS hours of
 * rollups (24), so that each service's newest entry and its rollup of the hour sit on pages of their own, as
 * they do in a file in use (a new file packs several services on a page, and commits fewer pages). Latencies
 * are LATENCY: "spread" (log-normal around 80 ms: an hour's sketch spans some 30 buckets) or "flat" (3 to 9 ms).
 *
 * Each batch goes through healthd's write path (Store.recordResults: the batch's reads, the policy, entries,
 * states and rollups in one transaction), and the same rows go to a second file of the same schema through
 * plain prepared statements, one row each, in a transaction of their own: the floor, what SQLite itself costs
 * for those rows and pages. The two write every batch, taking turns to go first, so the machine's speed moves
 * both alike. Printed per run and as medians: µs a result for each, their ratio, WAL frames a commit (a frame per
 * page the commit changed, however many rows it took), and where each one's time goes by statement
 * (better-sqlite3's calls timed by wrapping them; the rest is JavaScript). Checkpoints are made between
 * batches, outside the timed part, as the daemon's worker thread makes them beside its writes. The second half
 * of each run is measured, so that V8 has optimized what runs every batch. It runs healthd's sources through
 * tsx, whose esbuild names every function it makes (a `__name` call per closure, which the built dist/ does
 * not have): under 1 % of a profile's samples, to healthd's account.
 */
import Database from "better-sqlite3";
import { statSync } from "node:fs";
import { performance } from "node:perf_hooks";
import type { CheckRun } from "../src/domain/batch.ts";
import { hourMs } from "../src/policy/rollup.ts";
import { add } from "../src/policy/sketch.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { sketchToJson } from "../src/store/queries/rows.ts";
import { KyselyStore } from "../src/store/kysely-store.ts";
import type { SqliteBackend } from "../src/store/sqlite/backend.ts";
import { open } from "../test/support/raw.ts";
import { benchDatabase } from "./database.ts";
import { fixed, median } from "./stats.ts";

const services = count("SERVICES", 1000, 1);
const per = count("PER", 80, 1);
const batches = count("BATCHES", 600, 2);
const runs = count("RUNS", 3, 1);
/** Entries each service has before the batches, and hours of rollups: a daemon some days old, not a new file. */
const historyEntries = count("HISTORY_ENTRIES", 500, 0);
const historyHours = count("HISTORY_HOURS", 24, 0);
/** Latencies: "spread" (log-normal around 80 ms, as a site on the internet answers) or "flat" (3 to 9 ms, as bench/target.ts does). */
const latency = process.env.LATENCY ?? "spread";
if (latency !== "spread" && latency !== "flat") throw new Error(`LATENCY must be spread or flat (got ${latency})`);
if (per > services) throw new Error(`PER (${per}) must be at most SERVICES (${services}): a batch holds each service once`);

function count(name: string, fallback: number, least: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} must be a whole number from ${least} up (got ${process.env[name]})`);
  return value;
}

/** Time spent in better-sqlite3's calls, by writer and statement (its SQL's first words), while `timing` names the writer. */
const statementMs = new Map<string, number>();
let timing: "healthd" | "floor" | undefined;
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database.Database, source: string) {
  const statement = prepare.call(this, source) as Database.Statement;
  const table = /\b(?:into|from|update)\s+"?(\w+)"?/i.exec(source)?.[1];
  const name = table ? `${source.trim().split(/\s/)[0]!.toUpperCase()} ${table}` : source.trim().slice(0, 30); // COMMIT, PRAGMA data_version
  for (const method of ["run", "all", "get"] as const) {
    const call = statement[method].bind(statement) as (...args: unknown[]) => unknown;
    (statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      if (!timing) return call(...args);
      const started = performance.now();
      try {
        return call(...args);
      } finally {
        const key = `${timing} ${name}`;
        statementMs.set(key, (statementMs.get(key) ?? 0) + performance.now() - started);
      }
    };
  }
  return statement;
} as typeof prepare;

interface Run {
  readonly healthdUs: number;
  readonly floorUs: number;
  readonly healthdFrames: number;
  readonly floorFrames: number;
  readonly statementUs: Map<string, number>;
}

const results: Run[] = [];
for (let run = 1; run <= runs; run++) {
  const result = await oneRun(run);
  results.push(result);
  console.log(
    `run ${run}/${runs}: healthd ${fixed(result.healthdUs)} µs a result (${fixed(result.healthdFrames)} frames a commit), ` +
      `floor ${fixed(result.floorUs)} µs (${fixed(result.floorFrames)} frames), ratio ${fixed(result.healthdUs / result.floorUs, 2)}`,
  );
}
const healthd = median(results.map((r) => r.healthdUs));
const floor = median(results.map((r) => r.floorUs));
for (const [writer, total] of [["healthd", healthd], ["floor", floor]] as const) {
  const names = [...results[0]!.statementUs.keys()].filter((key) => key.startsWith(`${writer} `));
  const statements = names.map((key) => [key.slice(writer.length + 1), median(results.map((r) => r.statementUs.get(key) ?? 0))] as const).sort((a, b) => b[1] - a[1]);
  const inSqlite = statements.reduce((sum, [, us]) => sum + us, 0);
  console.log(`${writer}'s time by statement (µs a result, medians): ${statements.map(([name, us]) => `${name} ${fixed(us)}`).join(", ")}; the rest (JavaScript) ${fixed(total - inSqlite)}`);
}
console.log(
  `median ${services} services, batches of ${per}: healthd ${fixed(healthd)} µs a result (${fixed(median(results.map((r) => r.healthdFrames)))} frames a commit), ` +
    `floor ${fixed(floor)} µs (${fixed(median(results.map((r) => r.floorFrames)))} frames), ratio ${fixed(median(results.map((r) => r.healthdUs / r.floorUs)), 2)}`,
);

async function oneRun(run: number): Promise<Run> {
  const mine = benchDatabase("sqlite", "write");
  const theirs = benchDatabase("sqlite", "write-floor");
  // "write", not "serve": no checkpoint worker, so that the WAL's growth counts each commit's frames.
  const store = await open(mine.target, { mode: "write" });
  const bare = await open(theirs.target, { mode: "write" });
  try {
    const document = serverDocument.parse({ services: Array.from({ length: services }, (_, i) => ({ id: `svc-${i}`, check: { url: "http://127.0.0.1:9/" } })) });
    for (const s of [store, bare]) await s.applyServers(new Map([["bench", document]]), { now: Date.now() });
    const keys = (await store.scheduledServices()).map((s) => s.key);
    const db = sqliteOf(store);
    const floor = floorWriter(sqliteOf(bare));
    let at = Date.now() - batches * 2000;
    for (const d of [db, floor.db]) fillHistory(d, at);
    for (const d of [db, floor.db]) d.pragma("wal_autocheckpoint = 0");
    const frames = (target: string) => statSync(`${target}-wal`).size / (4096 + 24);
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    // Log-normal (σ 0.3) around 80 ms: an hour of a service's checks spans some 30 buckets of its sketch.
    const latencyOf = (i: number) => (latency === "flat" ? 3 + (i % 7) : 80 * Math.exp(0.3 * Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())));
    const writers = {
      healthd: { write: (batch: CheckRun[], now: number) => store.recordResults(batch, now), target: mine.target, ms: 0, frames: 0 },
      floor: { write: (batch: CheckRun[]) => floor.write(batch), target: theirs.target, ms: 0, frames: 0 },
    };
    const measuredFrom = Math.floor(batches / 2);
    statementMs.clear();
    for (let b = 0; b < batches; b++) {
      const chosen = new Set<number>();
      while (chosen.size < per) chosen.add(keys[Math.floor(random() * keys.length)]!);
      at += 2000;
      const batch: CheckRun[] = [...chosen].map((serviceKey, i) => ({
        serviceKey,
        outcome: { ok: true, status: 200, latencyMs: latencyOf(i), matched: 0, errorKind: null, error: null, checkedAt: at + i },
      }));
      if (b % 10 === 0) for (const d of [db, floor.db]) d.pragma("wal_checkpoint(TRUNCATE)");
      // Each goes first every other batch: neither always finds the caches the other left.
      for (const name of b % 2 === 0 ? (["healthd", "floor"] as const) : (["floor", "healthd"] as const)) {
        const writer = writers[name];
        const before = frames(writer.target);
        timing = b >= measuredFrom ? name : undefined;
        const started = performance.now();
        await writer.write(batch, at + 100);
        const ms = performance.now() - started;
        timing = undefined;
        if (b < measuredFrom) continue;
        writer.ms += ms;
        writer.frames += frames(writer.target) - before;
      }
    }
    if (run === 1) {
      const pages = (d: Database.Database) =>
        (d.prepare("SELECT name, count(*) AS pages FROM dbstat WHERE name IN ('health_check_data_entries', 'health_check_data_entries_by_service', 'service_states', 'service_rollups') GROUP BY name ORDER BY name").all() as { name: string; pages: number }[])
          .map((r) => `${r.name} ${r.pages}`)
          .join(", ");
      console.log(`pages after run 1: healthd ${pages(db)}; floor ${pages(floor.db)}`);
    }
    const commits = batches - measuredFrom;
    const usAResult = (ms: number) => (1000 * ms) / (commits * per);
    return {
      healthdUs: usAResult(writers.healthd.ms),
      floorUs: usAResult(writers.floor.ms),
      healthdFrames: writers.healthd.frames / commits,
      floorFrames: writers.floor.frames / commits,
      statementUs: new Map([...statementMs].map(([name, ms]) => [name, usAResult(ms)])),
    };
  } finally {
    await store.close();
    await bare.close();
    mine.cleanUp();
    theirs.cleanUp();
  }
}

/**
 * Each service's history before `before`: historyEntries entries, interleaved across services as checks make
 * them (so that each service's newest entries sit on a leaf of the per-service index of their own), and
 * historyHours hourly rollups whose sketches span 30 buckets. A fixture, written in SQL as bench:store's fill is.
 */
function fillHistory(db: Database.Database, before: number): void {
  const sketch = `{${Array.from({ length: 30 }, (_, i) => `"${100 + i}":${6 + (i % 5)}`).join(",")}}`;
  const firstHour = Math.floor(before / hourMs) * hourMs - historyHours * hourMs;
  // A series of `count` numbers (a recursive one always makes its first: a fill of 0 is not run at all).
  const series = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) ";
  db.transaction(() => {
    if (historyEntries > 0) {
      db.prepare(
        series +
          "INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms, matched) " +
          "SELECT s.key, ? + n.i * 20000, 1, 200, 80, 0 FROM n, services s ORDER BY n.i, s.key",
      ).run(historyEntries, before - historyEntries * 20000);
    }
    if (historyHours > 0) {
      db.prepare(
        series + "INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch) SELECT s.key, ? + n.i * ?, 180, 0, 14400, ? FROM n, services s",
      ).run(historyHours, firstHour, hourMs, sketch);
    }
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
}

function sqliteOf(store: unknown): Database.Database {
  if (!(store instanceof KyselyStore) || store.backend.engine !== "sqlite") throw new Error("bench:write needs a SQLite store opened by openStore");
  return (store.backend as SqliteBackend).sqlite;
}

/**
 * The floor: the rows a batch makes (an entry, the service's state, its rollup of the hour), written by plain
 * prepared statements one row at a time, with nothing read and nothing decided: SQLite's own cost of them.
 */
function floorWriter(db: Database.Database) {
  const entry = db.prepare(
    "INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms, error_kind, error, matched, location, type, kind, exit_code, duration_ms, body, answers) " +
      "VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL) RETURNING id",
  );
  const state = db.prepare(
    "INSERT INTO service_states (service_key, status, consecutive_failures, consecutive_passes, last_checked_at, last_entry_id, incident_open_since, failing_since, " +
      "incident_id, incident_failures, down_sent, last_reminded_at, cert_warned_expiry, last_verdict_at, last_ping_at, open_runs, last_duration_ms, last_finish_at, " +
      "missed_due_at, slow_streak, slow_sent, domain_warned_expiry) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL) " +
      "ON CONFLICT (service_key) DO UPDATE SET status = excluded.status, consecutive_failures = excluded.consecutive_failures, " +
      "consecutive_passes = excluded.consecutive_passes, last_checked_at = excluded.last_checked_at, last_entry_id = excluded.last_entry_id",
  );
  const rollup = db.prepare(
    "INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch, silenced_checks, silenced_failures, slow_checks) " +
      "VALUES (?, ?, 1, ?, ?, ?, 0, 0, 0) ON CONFLICT (service_key, hour) DO UPDATE SET checks = checks + 1, " +
      "failures = failures + excluded.failures, latency_sum = latency_sum + excluded.latency_sum, sketch = excluded.sketch",
  );
  // The sketch each rollup row carries, kept as healthd keeps it, so that the rows are as large as healthd's.
  const sketches = new Map<string, Map<number, number>>();
  const sketchOf = (serviceKey: number, hour: number, latencyMs: number) => {
    const id = `${serviceKey}:${hour}`;
    const sketch = sketches.get(id) ?? new Map<number, number>();
    sketches.set(id, sketch);
    add(sketch, latencyMs);
    return sketchToJson(sketch);
  };
  // Prepared, as healthd's are, so that the timing counts them as statements.
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const write = (batch: readonly CheckRun[]) => {
    begin.run();
    for (const run of batch) {
      if (run.kind !== undefined) continue;
      const o = run.outcome;
      const { id } = entry.get(run.serviceKey, o.checkedAt, o.ok ? 1 : 0, o.status, o.latencyMs, o.matched) as { id: number };
      state.run(run.serviceKey, o.ok ? "up" : "down", o.ok ? 0 : 1, o.ok ? 1 : 0, o.checkedAt, id);
      const hour = Math.floor(o.checkedAt / hourMs) * hourMs;
      rollup.run(run.serviceKey, hour, o.ok ? 0 : 1, o.latencyMs, sketchOf(run.serviceKey, hour, o.latencyMs));
    }
    commit.run();
  };
  return { db, write };
}
