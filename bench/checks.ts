/**
 * npm run bench:checks — how many checks per second healthd sustains against a local target, against the
 * raw limit: a plain undici loop with the same concurrency and the same connection mode (a fresh connection
 * per request) against the same target, measured in the same run. Then the scheduling figures at a fixed
 * load of 10,000 services at 10 s (1,000 checks/s): lag, skipped runs, RSS and CPU per 1,000 checks.
 *
 * healthd runs as users run it: the built executable (`healthd serve`) in its own process, driven through its
 * HTTP API; throughput and skipped runs come from its /metrics, RSS and CPU from /proc, and lag is measured at
 * the target (arrival minus planned time). Everything goes to 127.0.0.1, is bounded in time, and stops by
 * itself. Each figure is the median of RUNS.
 * Environment: RUNS (3), SECONDS (10), CONCURRENCY (64), LOAD_SECONDS (30), LOAD_SERVICES (10000); BIN measures
 * another build (a worktree of an older commit) for before/after figures.
 */
import { spawn, fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Client } from "undici";
import { cpuSeconds, listening, lagBucketsIn, metricIn, rssMb, scrape } from "./proc.ts";
import { fixed, median, percentile } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 3);
const seconds = Number(process.env.SECONDS ?? 10);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const loadSeconds = Number(process.env.LOAD_SECONDS ?? 30);
const loadServices = Number(process.env.LOAD_SERVICES ?? 10_000);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const origin = `http://127.0.0.1:${port}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The raw limit: `concurrency` loops, each a fresh connection per request, for `seconds`. */
async function rawUndici(): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const client = new Client(origin);
      const response = await client.request({ path: "/health", method: "GET", headers: { "user-agent": "bench" } });
      await response.body.text();
      await client.destroy();
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / seconds;
}

interface Served {
  child: ChildProcess;
  url: string;
  dir: string;
}

async function serve(maxInFlight: number): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-"));
  const child = spawn(process.execPath, [
    bin, "serve", "--db", join(dir, "bench.db"), "--port", "0", "--max-in-flight", String(maxInFlight), "--ntfy-url", "http://127.0.0.1:9",
  ]);
  const url = await listening(child);
  return { child, url, dir };
}

async function stop(served: Served): Promise<void> {
  served.child.kill("SIGTERM");
  await once(served.child, "exit");
  rmSync(served.dir, { recursive: true, force: true });
}

async function put(served: Served, services: number, intervalSeconds: number): Promise<void> {
  for (let s = 0; s * 1000 < services; s++) {
    const count = Math.min(1000, services - s * 1000);
    const doc = {
      services: Array.from({ length: count }, (_, i) => ({
        id: `svc-${i}`,
        check: { url: `${origin}/svc/server-${s}/svc-${i}?i=${intervalSeconds}`, intervalSeconds, notify: false },
      })),
    };
    const answer = await fetch(`${served.url}/services/server-${s}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(doc),
    });
    if (answer.status !== 201) throw new Error(`PUT failed: ${answer.status} ${await answer.text()}`);
  }
}

/** Percentiles of the runs started between two scrapes, as the upper bounds of their buckets. */
function bucketPercentiles(before: Map<number, number>, after: Map<number, number>) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => after.get(b)! - (before.get(b) ?? 0));
  const total = counts.at(-1)!;
  const at = (q: number) => bounds[counts.findIndex((c) => c >= q * total)]!;
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}

async function lagsAtTarget(): Promise<number[]> {
  target.send({ lags: true });
  const [message] = (await once(target, "message")) as [{ lags: number[] }];
  return message.lags.sort((a, b) => a - b);
}

interface Measured {
  checksPerSecond: number;
  /** Start lag as the daemon measures it (actual start minus planned), from its histogram: bucket bounds. */
  startLag: { p50: number; p99: number; max: number };
  /** Arrival at the target minus planned time: start lag plus connecting and sending (negative: started early to share a wake-up). */
  lags: number[];
  skipped: number;
  rssMb: number;
  cpuMsPer1000: number;
}

/** Run `services` at `intervalSeconds` in a fresh daemon; measure `runSeconds` after one interval of warm-up. */
async function measure(services: number, intervalSeconds: number, maxInFlight: number, runSeconds: number): Promise<Measured> {
  const served = await serve(maxInFlight);
  try {
    await put(served, services, intervalSeconds);
    // New services are first checked within a second, all at once; measure the steady state after that.
    await sleep((intervalSeconds + 2) * 1000);
    await lagsAtTarget();
    const pid = served.child.pid!;
    const checks0 = metricIn(await scrape(served.url), "healthd_checks_total");
    const skipped0 = metricIn(await scrape(served.url), "healthd_scheduler_skipped_runs_total");
    const buckets0 = lagBucketsIn(await scrape(served.url));
    const cpu0 = cpuSeconds(pid);
    let rss = 0;
    const sampler = setInterval(() => (rss = Math.max(rss, rssMb(pid))), 250);
    await sleep(runSeconds * 1000);
    clearInterval(sampler);
    const checks = metricIn(await scrape(served.url), "healthd_checks_total") - checks0;
    const cpu = cpuSeconds(pid) - cpu0;
    return {
      checksPerSecond: checks / runSeconds,
      startLag: bucketPercentiles(buckets0, lagBucketsIn(await scrape(served.url))),
      lags: await lagsAtTarget(),
      skipped: metricIn(await scrape(served.url), "healthd_scheduler_skipped_runs_total") - skipped0,
      rssMb: rss,
      cpuMsPer1000: (cpu * 1000 * 1000) / Math.max(1, checks),
    };
  } finally {
    await stop(served);
  }
}

const raw: number[] = [];
const saturated: number[] = [];
for (let i = 0; i < runs; i++) {
  raw.push(await rawUndici());
  // Demand far above what the machine can serve (100 services per slot, every second), so the bound on
  // checks in flight, the same as the raw loop's concurrency, is the only brake.
  saturated.push((await measure(concurrency * 100, 1, concurrency, seconds)).checksPerSecond);
  console.log(`run ${i + 1}/${runs}: raw undici ${fixed(raw.at(-1)!)} req/s, healthd ${fixed(saturated.at(-1)!)} checks/s`);
}

const loads: Measured[] = [];
for (let i = 0; i < runs; i++) {
  const l = await measure(loadServices, 10, 256, loadSeconds);
  loads.push(l);
  console.log(
    `load ${i + 1}/${runs}: ${loadServices} services at 10 s: ${fixed(l.checksPerSecond)} checks/s, ` +
      `start lag p50 ≤${l.startLag.p50} ms p99 ≤${l.startLag.p99} ms max ≤${l.startLag.max} ms, ` +
      `arrival lag p50 ${fixed(percentile(l.lags, 50))} ms p99 ${fixed(percentile(l.lags, 99))} ms max ${fixed(l.lags.at(-1) ?? NaN)} ms, ` +
      `skipped ${l.skipped}, RSS ${fixed(l.rssMb)} MB, CPU ${fixed(l.cpuMsPer1000)} ms per 1000 checks`,
  );
}
const m = (f: (l: Measured) => number) => median(loads.map(f));
console.log(
  `load median: ${fixed(m((l) => l.checksPerSecond))} checks/s, start lag p50 ≤${m((l) => l.startLag.p50)} ms, ` +
    `p99 ≤${m((l) => l.startLag.p99)} ms, max ≤${m((l) => l.startLag.max)} ms; arrival lag p50 ${fixed(m((l) => percentile(l.lags, 50)))} ms, ` +
    `p99 ${fixed(m((l) => percentile(l.lags, 99)))} ms, max ${fixed(m((l) => l.lags.at(-1) ?? NaN))} ms, ` +
    `skipped ${m((l) => l.skipped)}, RSS ${fixed(m((l) => l.rssMb))} MB, CPU ${fixed(m((l) => l.cpuMsPer1000))} ms per 1000 checks`,
);
const x = median(saturated);
const y = median(raw);
console.log(`ratio ${fixed(x / y, 2)} (healthd ${fixed(x)} checks/s vs raw undici ${fixed(y)} checks/s)`);
target.disconnect();
target.kill();
