/**
 * npm run bench:pings — how fast healthd takes pings: CLIENTS (50) clients on keep-alive connections ping
 * KEYS (1,000) heartbeats in turn for DURATION (5) seconds after a second of warm-up, against the built executable,
 * and against a bare node:http server answering "OK" in the same way (a process of its own, as healthd is),
 * measured alternately in the same run, RUNS (3) times each. Prints, per engine (ENGINES: sqlite,postgres),
 * the median pings per second and answer times p50/p99, the bare server's, and the ratio of the two: the figure
 * that holds across machines, and how many pings each commit stored. Every ping is stored (the bench checks the
 * count of entries after each run).
 * BIN measures another build.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { sql } from "kysely";
import { serverDocument } from "../src/domain/schema/index.ts";
import { KyselyStore } from "../src/store/kysely-store.ts";
import { open } from "../test/support/raw.ts";
import { benchDatabase } from "./database.ts";
import { listening } from "./proc.ts";
import { fixed, median, percentile } from "./stats.ts";

const clients = Number(process.env.CLIENTS ?? 50);
const keyCount = Number(process.env.KEYS ?? 1000);
const seconds = Number(process.env.DURATION ?? 5);
const runs = Number(process.env.RUNS ?? 3);
const engines = (process.env.ENGINES ?? "sqlite,postgres").split(",");
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

const bare = `require("node:http").createServer((q, s) => { s.setHeader("content-type", "text/plain; charset=utf-8"); s.end("OK"); })
  .listen(0, "127.0.0.1", function () { console.error("listening url=http://127.0.0.1:" + this.address().port); });`;

interface Load {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly answered: number;
}

/** CLIENTS loops, each with one request at a time, for a second of warm-up and then DURATION counted. */
async function load(url: string, paths: readonly string[]): Promise<Load> {
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  const times: number[] = [];
  let answered = 0;
  let counting = false;
  let stop = false;
  let next = 0;
  const loop = async () => {
    while (!stop) {
      const path = paths[next++ % paths.length]!;
      const t0 = performance.now();
      const answer = await pool.request({ path, method: "GET" });
      await answer.body.text();
      if (answer.statusCode !== 200) throw new Error(`${path} answered ${answer.statusCode}`);
      answered++;
      if (counting) times.push(performance.now() - t0);
    }
  };
  const loops = Array.from({ length: clients }, loop);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  counting = true;
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  counting = false;
  const elapsed = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  await pool.close();
  times.sort((a, b) => a - b);
  return { perSecond: times.length / elapsed, p50: percentile(times, 50), p99: percentile(times, 99), answered };
}

async function serve(args: readonly string[], script?: string): Promise<{ child: ChildProcess; url: string }> {
  const child = script
    ? spawn(process.execPath, ["-e", script])
    : spawn(process.execPath, [bin, "serve", "--port", "0", ...args], { env: { ...process.env, HEALTHD_NTFY_URL: "http://127.0.0.1:9" } });
  const url = await listening(child);
  child.stderr!.resume();
  return { child, url };
}

/** The mean number of pings each transaction stored, from the daemon's own metrics (warm-up included). */
async function pingsPerCommit(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
  return value("healthd_store_batch_results_total") / value("healthd_store_batch_seconds_count");
}

async function stopped(child: ChildProcess): Promise<void> {
  child.kill("SIGTERM");
  if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
}

for (const engine of engines) {
  const { target: db, cleanUp } = benchDatabase(engine, "pings");
  try {
    const store = await open(db, { mode: "write" });
    const services = Array.from({ length: keyCount }, (_, i) => ({ id: `job${i}`, check: { type: "heartbeat", periodSeconds: 86_400 } }));
    await store.applyServers(new Map([["jobs", serverDocument.parse({ services })]]), { now: Date.now() });
    const paths = (await store.services({ serverId: "jobs" })).map((s) => `/ping/${(s.check as { pingKey: string }).pingKey}`);
    const entries = async () =>
      Number((await sql<{ n: number }>`select count(*) as n from health_check_data_entries`.execute((store as KyselyStore).backend.db)).rows[0]!.n);

    const healthd: Load[] = [];
    const baseline: Load[] = [];
    const perCommit: number[] = [];
    for (let run = 0; run < runs; run++) {
      const b = await serve([], bare);
      baseline.push(await load(b.url, ["/ping"]));
      await stopped(b.child);
      const h = await serve(["--db", db]);
      const before = await entries();
      const measured = await load(h.url, paths);
      perCommit.push(await pingsPerCommit(h.url));
      await stopped(h.child); // stores what it took before it exits
      const stored = (await entries()) - before;
      if (stored !== measured.answered) throw new Error(`${measured.answered} pings answered OK, ${stored} stored`);
      healthd.push(measured);
    }
    await store.close();
    const m = (list: Load[], key: keyof Load) => median(list.map((l) => l[key]));
    console.log(
      `${engine}: ${clients} clients, ${keyCount} keys: healthd ${fixed(m(healthd, "perSecond"), 0)} pings/s (p50 ${fixed(m(healthd, "p50"), 2)} ms, p99 ${fixed(m(healthd, "p99"), 2)} ms), ` +
        `bare node:http ${fixed(m(baseline, "perSecond"), 0)} answers/s (p50 ${fixed(m(baseline, "p50"), 2)} ms, p99 ${fixed(m(baseline, "p99"), 2)} ms): ` +
        `ratio ${fixed(m(healthd, "perSecond") / m(baseline, "perSecond"), 2)} (median of ${runs}; every ping stored, ${fixed(median(perCommit), 1)} a commit)`,
    );
  } finally {
    cleanUp();
  }
}
