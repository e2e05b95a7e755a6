/**
 * npm run bench:heartbeats — what heartbeats cost while nobody pings, and how punctual their deadlines are.
 * 1. Idle: HEARTBEATS (10,000) heartbeat services with periods spread evenly from 60 s to a day, never pinged,
 *    served by the built daemon; after WARMUP (45) s (the heap settling after loading them) its CPU (user +
 *    system, from /proc) and wake-ups are measured over IDLE_SECONDS (120) s, beside the same daemon with no
 *    service at all, alternating, RUNS (3) times: the median, as a share of one core. The deadlines that come
 *    due in the window (a missed entry each, in the database) are part of the cost, and counted.
 * 2. Deadlines: FAST (200) heartbeats with periods of 2 to 10 s and a grace of 1 s, never pinged, for
 *    FAST_SECONDS (30) s: how late each missed entry is stored after its period's due time + grace (p50, p99,
 *    max), and whether each one falls in its own period.
 * SQLite (the deadlines are the node's own; PostgreSQL adds only the write). BIN measures another build.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open } from "../test/support/raw.ts";
import { cpuSeconds, listening, rssMb, wakeUps } from "./proc.ts";
import { fixed, median, percentile } from "./stats.ts";

const heartbeats = Number(process.env.HEARTBEATS ?? 10_000);
const warmup = Number(process.env.WARMUP ?? 45);
// /proc counts CPU in 10 ms ticks: over 45 s one tick is 0.022 % of a core, over 120 s 0.008 % (as in everyday.ts).
const idleSeconds = Number(process.env.IDLE_SECONDS ?? 120);
const runs = Number(process.env.RUNS ?? 3);
const fast = Number(process.env.FAST ?? 200);
const fastSeconds = Number(process.env.FAST_SECONDS ?? 30);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "healthd-bench-heartbeats-"));
const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));

/** A fixed sequence of numbers in [0, 1): the same services in every run. */
function random(seed: number): () => number {
  return () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
}

async function serve(db: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, "serve", "--db", db, "--port", "0"], { env: { ...process.env, HEALTHD_NTFY_URL: "http://127.0.0.1:9" } });
  await listening(child);
  child.stderr!.resume();
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill("SIGTERM");
  if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
}

async function create(db: string, services: readonly object[]): Promise<void> {
  const store = await open(db, { mode: "write" });
  for (let i = 0; i < services.length; i += 1000) {
    await store.applyServers(new Map([[`jobs-${i / 1000}`, serverDocument.parse({ services: services.slice(i, i + 1000) })]]), { now: Date.now() });
  }
  await store.close();
}

interface Idle {
  readonly cpu: number;
  readonly wakeUps: number;
  readonly rss: number;
  /** Missed entries stored in the window. */
  readonly missed: number;
}

/** Missed entries stored between `from` and `to`, read once the daemon is stopped (another connection is a change it would read). */
const missedBetween = async (db: string, from: number, to: number) => {
  const store = await open(db, { mode: "read" });
  try {
    const counted = await sql<{ n: number }>`select count(*) as n from health_check_data_entries where kind = 'missed' and checked_at >= ${from} and checked_at < ${to}`.execute(
      store.backend.db,
    );
    return Number(counted.rows[0]!.n);
  } finally {
    await store.close();
  }
};

/** CPU share of one core, wake-ups a second and RSS of a daemon serving `db`, over the idle window. */
async function idle(db: string): Promise<Idle> {
  const child = await serve(db);
  let window: Omit<Idle, "missed"> & { from: number; to: number };
  try {
    await sleep(warmup);
    const [cpu0, wake0, t0, from] = [cpuSeconds(child.pid!), wakeUps(child.pid!), performance.now(), Date.now()];
    await sleep(idleSeconds);
    const elapsed = (performance.now() - t0) / 1000;
    const [cpu, wake, rss] = [cpuSeconds(child.pid!) - cpu0, wakeUps(child.pid!) - wake0, rssMb(child.pid!)];
    window = { cpu: cpu / elapsed, wakeUps: wake / elapsed, rss, from, to: Date.now() };
  } finally {
    await stop(child);
  }
  const { from, to, ...measured } = window;
  return { ...measured, missed: await missedBetween(db, from, to) };
}

try {
  const next = random(42);
  const periods = Array.from({ length: heartbeats }, () => Math.round(60 + next() * (86_400 - 60)));
  const db = join(dir, "idle.db");
  await create(db, periods.map((periodSeconds, i) => ({ id: `job${i}`, check: { type: "heartbeat", periodSeconds } })));
  const loaded: Idle[] = [];
  const empty: Idle[] = [];
  for (let run = 0; run < runs; run++) {
    loaded.push(await idle(db));
    empty.push(await idle(join(dir, `empty.db`)));
  }
  const m = (list: Idle[], key: keyof Idle) => median(list.map((l) => l[key]));
  console.log(
    `idle: ${heartbeats} heartbeats (periods 60 s to 1 d), nothing pinging: ${fixed(m(loaded, "cpu") * 100, 3)} % of a core, ${fixed(m(loaded, "wakeUps"), 1)} wake-ups/s, ` +
      `RSS ${fixed(m(loaded, "rss"), 0)} MB, ${fixed(m(loaded, "missed"), 0)} missed deadlines stored in the window; ` +
      `no services: ${fixed(m(empty, "cpu") * 100, 3)} %, ${fixed(m(empty, "wakeUps"), 1)} wake-ups/s, RSS ${fixed(m(empty, "rss"), 0)} MB; ` +
      `the heartbeats' own cost ${fixed((m(loaded, "cpu") - m(empty, "cpu")) * 100, 3)} % (median of ${runs}, ${idleSeconds} s windows after ${warmup} s)`,
  );

  const fastDb = join(dir, "fast.db");
  const fastPeriods = Array.from({ length: fast }, (_, i) => 2 + (i % 9));
  await create(fastDb, fastPeriods.map((periodSeconds, i) => ({ id: `job${i}`, check: { type: "heartbeat", periodSeconds, graceSeconds: 1 } })));
  const child = await serve(fastDb);
  await sleep(fastSeconds);
  await stop(child);
  const store = await open(fastDb, { mode: "read" });
  const rows = (
    await sql<{ service: string; created: number; checked_at: number }>`
      select s.id as service, s.updated_at as created, e.checked_at from health_check_data_entries e join services s on s.key = e.service_key
      where e.kind = 'missed' order by s.key, e.checked_at`.execute(store.backend.db)
  ).rows;
  await store.close();
  const late: number[] = [];
  const seen = new Map<string, number>();
  let wrong = 0;
  for (const r of rows) {
    const k = (seen.get(r.service) ?? 0) + 1;
    seen.set(r.service, k);
    const period = fastPeriods[Number(r.service.slice(3))]! * 1000;
    const due = Number(r.created) + k * period + 1000;
    const lateness = Number(r.checked_at) - due;
    if (lateness < 0 || lateness >= period) wrong++;
    late.push(lateness);
  }
  late.sort((a, b) => a - b);
  console.log(
    `deadlines: ${fast} heartbeats (periods 2 to 10 s, grace 1 s) for ${fastSeconds} s: ${rows.length} missed entries stored ` +
      `${fixed(percentile(late, 50), 0)} ms after due + grace at p50, ${fixed(percentile(late, 99), 0)} ms at p99, ${fixed(late.at(-1) ?? NaN, 0)} ms at most; ` +
      `${wrong} not in their own period`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
