/**
 * npm run bench:checks — how many checks per second healthd sustains against a local target, against the
 * raw limit: a plain undici loop with the same concurrency and the same connection mode (a fresh connection
 * per request) against the same target, measured in the same run. Then the scheduling figures at a fixed
 * load of 10,000 services at 10 s (1,000 checks/s): lag, skipped runs, RSS and CPU per 1,000 checks.
 *
 * Everything goes to 127.0.0.1, is bounded in time, and stops by itself. Each figure is the median of RUNS.
 * Environment: RUNS (3), SECONDS (8), CONCURRENCY (64), LOAD_SECONDS (30), LOAD_SERVICES (10000).
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "undici";
import { startDaemon } from "../src/daemon.ts";
import { silentLogger } from "../src/log.ts";
import { fixed, median, percentile } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 3);
const seconds = Number(process.env.SECONDS ?? 8);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const loadSeconds = Number(process.env.LOAD_SECONDS ?? 30);
const loadServices = Number(process.env.LOAD_SERVICES ?? 10_000);

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const url = `http://127.0.0.1:${port}/health`;

/** The raw limit: `concurrency` loops, each a fresh connection per request, for `seconds`. */
async function rawUndici(): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const client = new Client(`http://127.0.0.1:${port}`);
      const response = await client.request({ path: "/health", method: "GET", headers: { "user-agent": "bench" } });
      await response.body.text();
      await client.destroy();
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / seconds;
}

interface DaemonRun {
  checksPerSecond: number;
  lags: number[];
  skipped: number;
  rssMb: number;
  cpuMsPer1000: number;
}

/** The daemon as `healthd serve` wires it, with `services` checks at `intervalSeconds` against the target. */
async function daemonRun(services: number, intervalSeconds: number, maxInFlight: number, runSeconds: number): Promise<DaemonRun> {
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-"));
  const daemon = await startDaemon({ db: join(dir, "bench.db"), host: "127.0.0.1", port: 0, log: silentLogger, maxInFlight, ntfy: { url: "http://127.0.0.1:9" } });
  try {
    const perServer = 1000;
    for (let s = 0; s * perServer < services; s++) {
      const count = Math.min(perServer, services - s * perServer);
      const services_ = Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url, intervalSeconds } }));
      const answer = await fetch(`${daemon.url}/services/server-${s}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ services: services_ }),
      });
      if (answer.status !== 201) throw new Error(`PUT failed: ${answer.status} ${await answer.text()}`);
    }
    // New services are all first checked within a second; let that burst pass, then measure steady state.
    await new Promise((r) => setTimeout(r, (intervalSeconds + 2) * 1000));
    const lags: number[] = [];
    let done = 0;
    let skippedBefore = 0;
    const onStart = (_s: unknown, lag: number) => lags.push(lag);
    const onDone = () => done++;
    const skipped = await scrapeSkipped(daemon.url);
    skippedBefore = skipped;
    daemon.events.on("check:started", onStart);
    daemon.events.on("check:done", onDone);
    const cpu = process.cpuUsage();
    let rss = 0;
    const sampler = setInterval(() => (rss = Math.max(rss, process.memoryUsage.rss())), 250);
    await new Promise((r) => setTimeout(r, runSeconds * 1000));
    clearInterval(sampler);
    const used = process.cpuUsage(cpu);
    daemon.events.off("check:started", onStart);
    daemon.events.off("check:done", onDone);
    return {
      checksPerSecond: done / runSeconds,
      lags: lags.sort((a, b) => a - b),
      skipped: (await scrapeSkipped(daemon.url)) - skippedBefore,
      rssMb: rss / 1024 / 1024,
      cpuMsPer1000: ((used.user + used.system) / 1000 / Math.max(done, 1)) * 1000,
    };
  } finally {
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scrapeSkipped(base: string): Promise<number> {
  const text = await (await fetch(base + "/metrics")).text();
  return Number(/^healthd_scheduler_skipped_runs_total (\d+)/m.exec(text)?.[1] ?? NaN);
}

const raw: number[] = [];
const saturated: number[] = [];
for (let i = 0; i < runs; i++) {
  raw.push(await rawUndici());
  // Demand well above what one core can serve, so the bound on checks in flight is the only brake.
  saturated.push((await daemonRun(concurrency * 100, 1, concurrency, seconds)).checksPerSecond);
  console.log(`run ${i + 1}/${runs}: raw undici ${fixed(raw.at(-1)!)} req/s, healthd ${fixed(saturated.at(-1)!)} checks/s`);
}

const loads: DaemonRun[] = [];
for (let i = 0; i < runs; i++) {
  loads.push(await daemonRun(loadServices, 10, 256, loadSeconds));
  const l = loads.at(-1)!;
  console.log(
    `load ${i + 1}/${runs}: ${loadServices} services at 10 s: ${fixed(l.checksPerSecond)} checks/s, lag p50 ${fixed(percentile(l.lags, 50))} ms ` +
      `p99 ${fixed(percentile(l.lags, 99))} ms max ${fixed(l.lags.at(-1) ?? NaN)} ms, skipped ${l.skipped}, RSS ${fixed(l.rssMb)} MB, ` +
      `CPU ${fixed(l.cpuMsPer1000)} ms per 1000 checks`,
  );
}
const m = (f: (l: DaemonRun) => number) => median(loads.map(f));
console.log(
  `load median: ${fixed(m((l) => l.checksPerSecond))} checks/s, lag p50 ${fixed(m((l) => percentile(l.lags, 50)))} ms, ` +
    `p99 ${fixed(m((l) => percentile(l.lags, 99)))} ms, max ${fixed(m((l) => l.lags.at(-1) ?? NaN))} ms, ` +
    `skipped ${m((l) => l.skipped)}, RSS ${fixed(m((l) => l.rssMb))} MB, CPU ${fixed(m((l) => l.cpuMsPer1000))} ms per 1000 checks`,
);
const x = median(saturated);
const y = median(raw);
console.log(`ratio ${fixed(x / y, 2)} (healthd ${fixed(x)} checks/s vs raw undici ${fixed(y)} checks/s)`);
target.disconnect();
target.kill();
