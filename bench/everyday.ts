/**
 * npm run bench:everyday — what healthd costs at the loads most people run: CPU time per check with 0, 100 and
 * 1,000 services at INTERVAL (20) s against a local target, beside two naive checkers at the same request
 * rate in the same run (bench/naive.ts: node:http with agent: false, and a new undici Client per request, each
 * a fresh connection with one timer per request), and the floor: a fresh node:net connection per request with
 * no HTTP parser, a second's requests started together. CPU per check is the process's CPU time (user + system,
 * from /proc) over the window divided by the requests the target received from it; idle CPU is healthd with
 * no services, as a share of one core; wake-ups are the voluntary context switches of all healthd's threads
 * per second, a count steadier than a time. Each figure is the median of RUNS (3), the variants alternating
 * within a run. Windows: each daemon's after WARMUP (60) s, IDLE_SECONDS (120) idle and SECONDS (30) per load;
 * each naive loop's after NAIVE_WARMUP (10) s of the same, the floor's the median of FLOOR_SLICES (5) such
 * windows one after the other. With services, the daemon is measured twice: in its first minutes (from WARMUP
 * s to FIRST_MINUTES (5) minutes after the PUT: minutes 1 to 5, as the targets say, with its first SECONDS of
 * them printed beside) and settled (SETTLED_SECONDS (60) from then, once it has made WARMUP_CHECKS (4,800)
 * checks), which is what it costs for the weeks it runs. V8 optimizes a function once it has run often enough,
 * so at 100 services at 20 s the daemon goes on compiling for minutes, at 1,000 ten times sooner; the targets
 * hold both ways. Load goes to 127.0.0.1 only; it stops by itself. BIN measures another build (e.g. a worktree
 * of an older commit) for before/after numbers; LOADS (100,1000) picks the loads.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { cpuSeconds, putServices, rssMb, serveHealthd, wakeUps } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 3);
const interval = Number(process.env.INTERVAL ?? 20);
// /proc counts CPU in 10 ms ticks: over 30 s one tick is 0.033 % of a core, a sixth of the idle target, so an
// idle daemon's 0.167 and 0.200 % were five and six ticks. Over 120 s a tick is 0.008 %.
const idleSeconds = Number(process.env.IDLE_SECONDS ?? 120);
const warmup = Number(process.env.WARMUP ?? 60);
const seconds = Number(process.env.SECONDS ?? 30);
const naiveWarmup = Number(process.env.NAIVE_WARMUP ?? 10);
// 16 minutes at 100 services, 96 s at 1,000 (where the first minutes end later). At 100 services a daemon is
// still getting cheaper after the 2,400 checks (8 minutes) this waited for until 2026-11-29: in two side-by-side
// runs its CPU per check from minute 13 to 17 was 17 and 28 % under minute 5 to 9's (docs/benchmarks.md).
const warmupChecks = Number(process.env.WARMUP_CHECKS ?? 4800);
// Minutes 1 to 5 as a whole, not only their first window: V8 collects the old generation about once a minute
// at 1,000 services, and a reducing collection after one throws compiled code away (docs/benchmarks.md), so
// one 30 s window measures mostly whether such a collection fell in it.
const firstMinutes = Number(process.env.FIRST_MINUTES ?? 5);
// The floor's CPU for the same 30 s of the same loop varies by up to 2.5 times from one window to the next
// (0.66 to 1.71 ms a check, two floors side by side, the slow window in either), and its first windows are still
// compiling (at 50 a second 0.34 ms in the first, 0.16 to 0.21 from the third): so the median of five, whose
// window ends about as far into its process as the daemon's first one.
const floorSlices = Number(process.env.FLOOR_SLICES ?? 5);
// Longer than the first window: at 100 services a window holds 5 checks a second, and /proc counts CPU in 10 ms ticks.
const settledSeconds = Number(process.env.SETTLED_SECONDS ?? 60);
// NAIVE=0 leaves the naive loops out (the floor stays: the targets divide by it), for before/after runs (BIN).
const withNaive = process.env.NAIVE !== "0";
// LOADS=0 measures the idle daemon alone; LOADS=1000 one load (with its naive loops).
const loads = (process.env.LOADS ?? "100,1000").split(",").map(Number).filter((n) => n > 0);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const origin = `http://127.0.0.1:${port}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function targetCount(): Promise<number> {
  target.send({ count: true });
  const [message] = (await once(target, "message")) as [{ count: number }];
  return message.count;
}

const cpuMs = (pid: number) => cpuSeconds(pid) * 1000;

interface Window {
  seconds: number;
  cpuMs: number;
  /** Requests the target received over the window. */
  checks: number;
  /** Voluntary context switches of all the daemon's threads over the window. */
  wakeUps: number;
  /** CPU ms per check, or NaN with no checks. */
  cpuMsPerCheck: number;
  /** CPU time over the window as a share of one core. */
  share: number;
  wakeUpsPerSecond: number;
  rssMb: number;
}

/** The daemon `pid` over the next `window` seconds, per check the target received. */
async function measure(pid: number, window: number): Promise<Window> {
  await targetCount();
  const [cpu0, wake0] = [cpuMs(pid), wakeUps(pid)];
  await sleep(window * 1000);
  const [cpu, wakes] = [cpuMs(pid) - cpu0, wakeUps(pid) - wake0];
  return windowOf(window, cpu, await targetCount(), wakes, rssMb(pid));
}

/** Two windows one after the other as one (RSS at the end of the second). */
const joined = (a: Window, b: Window): Window =>
  windowOf(a.seconds + b.seconds, a.cpuMs + b.cpuMs, a.checks + b.checks, a.wakeUps + b.wakeUps, b.rssMb);

function windowOf(seconds: number, cpuMs: number, checks: number, wakeUps: number, rssMb: number): Window {
  return { seconds, cpuMs, checks, wakeUps, cpuMsPerCheck: checks > 0 ? cpuMs / checks : NaN, share: cpuMs / (seconds * 1000), wakeUpsPerSecond: wakeUps / seconds, rssMb };
}

/** healthd with `services` services: idle, or in its first minutes (and their first window) and settled (see the top of this file). */
async function healthd(services: number): Promise<{ slice: Window; first: Window; settled: Window }> {
  const served = await serveHealthd(bin);
  try {
    await putServices(served.url, origin, services, interval);
    const started = Date.now();
    // Past the first checks (all within a second of the PUT) and the daemon's start-up work, which a daemon
    // that runs for weeks pays once: in its first minute V8's memory reducer runs major GCs (perf shows them as
    // most of an idle daemon's CPU in its first 30 s) and its background threads compile the hot code.
    await sleep(Math.max(warmup, services > 0 ? interval + 2 : 0) * 1000);
    const pid = served.child.pid!;
    if (services === 0) {
      const idle = await measure(pid, idleSeconds);
      return { slice: idle, first: idle, settled: idle };
    }
    const slice = await measure(pid, seconds);
    const rest = firstMinutes * 60 - (Date.now() - started) / 1000;
    const first = rest > 1 ? joined(slice, await measure(pid, rest)) : slice;
    // The checks made so far, from the rate: each window restarts the target's count.
    const made = () => ((Date.now() - started) / 1000) * (services / interval);
    if (made() < warmupChecks) await sleep(((warmupChecks - made()) / (services / interval)) * 1000);
    return { slice, first, settled: await measure(pid, settledSeconds) };
  } finally {
    await served.stop();
  }
}

/**
 * A naive checker at the rate `services` at `interval` make: CPU ms per check, the median of its slices. The
 * floor is what the targets divide by, so it runs FLOOR_SLICES windows where the others run one.
 */
async function naive(mode: "http" | "undici" | "floor", services: number): Promise<number> {
  await targetCount();
  const slices = mode === "floor" ? floorSlices : 1;
  const child = fork(new URL("./naive.ts", import.meta.url), {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, MODE: mode, TARGET: origin, RATE: String(services / interval), SECONDS: String(seconds), WARMUP: String(naiveWarmup), SLICES: String(slices) },
  });
  const [report] = (await once(child, "message")) as [{ slices: { requests: number; cpuMs: number }[] }];
  await once(child, "exit");
  // The loops count a failed request as made: a target that received fewer than the windows' requests says some failed.
  const received = await targetCount();
  const made = report.slices.reduce((sum, slice) => sum + slice.requests, 0);
  if (received < made) throw new Error(`the target received ${received} of the ${made} requests naive ${mode} made: some failed; look at the target`);
  return median(report.slices.map((slice) => slice.cpuMs / Math.max(1, slice.requests)));
}

type Row = Record<string, number>;
const rows: Row[] = [];
for (let run = 1; run <= runs; run++) {
  const row: Row = {};
  const { settled: idle } = await healthd(0);
  row.idle = idle.share * 100;
  row.wakes = idle.wakeUpsPerSecond;
  for (const services of loads) {
    const { slice, first, settled } = await healthd(services);
    row[`slice ${services}`] = slice.cpuMsPerCheck;
    row[`first ${services}`] = first.cpuMsPerCheck;
    row[`healthd ${services}`] = settled.cpuMsPerCheck;
    row[`rss ${services}`] = settled.rssMb;
    row[`wakes ${services}`] = settled.wakeUpsPerSecond;
    if (withNaive) {
      row[`http ${services}`] = await naive("http", services);
      row[`undici ${services}`] = await naive("undici", services);
    }
    row[`floor ${services}`] = await naive("floor", services);
  }
  rows.push(row);
  console.log(
    `run ${run}/${runs}: idle ${fixed(row.idle!, 3)} % of a core (${fixed(row.wakes!, 1)} wake-ups/s); ` +
      loads
        .map(
          (n) =>
            `${n} services: healthd ${fixed(row[`healthd ${n}`]!, 2)} ms/check settled (first minutes ${fixed(row[`first ${n}`]!, 2)}, ` +
            `their first ${seconds} s ${fixed(row[`slice ${n}`]!, 2)}; ` +
            `${fixed(row[`wakes ${n}`]!, 1)} wake-ups/s, RSS ${fixed(row[`rss ${n}`]!)} MB)` +
            (withNaive ? `, naive http ${fixed(row[`http ${n}`]!, 2)}, naive undici ${fixed(row[`undici ${n}`]!, 2)}` : "") +
            `, floor ${fixed(row[`floor ${n}`]!, 2)}`,
        )
        .join("; "),
  );
}
const med = (key: string) => median(rows.map((r) => r[key]!));
console.log(`median idle CPU: ${fixed(med("idle"), 3)} % of a core (target < 0.2 %), ${fixed(med("wakes"), 1)} wake-ups/s`);
for (const n of loads) {
  const h = med(`healthd ${n}`);
  console.log(
    `median ${n} services at ${interval} s: healthd ${fixed(h, 2)} ms CPU per check settled (in its first minutes ` +
      `${fixed(med(`first ${n}`), 2)}, their first ${seconds} s ${fixed(med(`slice ${n}`), 2)}), ${fixed(med(`wakes ${n}`), 1)} wake-ups/s, ` +
      `RSS ${fixed(med(`rss ${n}`))} MB` +
      "; " + (withNaive ? againstNaive(n, h) : "") + againstFloor(n, h),
  );
}

function againstNaive(n: number, h: number): string {
  return (
    `naive node:http ${fixed(med(`http ${n}`), 2)} ms (healthd/naive ${fixed(h / med(`http ${n}`), 2)}), ` +
    `naive undici ${fixed(med(`undici ${n}`), 2)} ms (healthd/naive ${fixed(h / med(`undici ${n}`), 2)}), `
  );
}

function againstFloor(n: number, h: number): string {
  return (
    `floor ${fixed(med(`floor ${n}`), 2)} ms (healthd/floor ${fixed(h / med(`floor ${n}`), 2)} settled, ` +
    `${fixed(med(`first ${n}`) / med(`floor ${n}`), 2)} in the first minutes, ${fixed(med(`slice ${n}`) / med(`floor ${n}`), 2)} in their first ${seconds} s)`
  );
}
target.kill();
