/**
 * npm run bench:phases — where a daemon's CPU goes at an everyday load, for whoever works on CPU per check
 * (bench:everyday says how much; this says where). A daemon with SERVICES (100) services at INTERVAL (20) s
 * against a local target, measured twice, each in a fresh process:
 *
 * 1. Per thread, from /proc/PID/task: CPU per check the target received, in WINDOW (60) s windows after the
 *    first SKIP (30) s, split into the main thread (healthd's own code, Node's sockets, SQLite's statements), in user
 *    and system time (the kernel's part: connect, close, the WAL's writes), and the rest (V8's compiler and
 *    collector threads, libuv's pool, the checkpoint worker: Node does not name them); and, of the main
 *    thread's, the time spent storing results as the daemon counts it (healthd_store_batch_seconds: on SQLite
 *    a batch's statements run synchronously, so that time is CPU).
 * 2. Per phase: the same daemon under V8's sampling profiler (--cpu-prof, a sample a millisecond), each busy
 *    sample of the main thread after SKIP s given to the phase of the frame nearest its leaf that names one
 *    (the table below; the first pattern that matches a frame wins). The profiler itself costs several times
 *    the daemon's CPU, so this run says only shares, never times.
 *
 * SECONDS (180) is each run's length. BIN measures another build (a worktree's dist/main.js). Load goes to
 * 127.0.0.1 only, and stops with the run.
 */
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { metricIn, putServices, scrape, serveHealthd, threadCpuMs } from "./proc.ts";
import { fixed } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 100);
const interval = Number(process.env.INTERVAL ?? 20);
const seconds = Number(process.env.SECONDS ?? 180);
const windowSeconds = Number(process.env.WINDOW ?? 60);
const skip = Number(process.env.SKIP ?? 30);
const bin = process.env.BIN ?? fileURLToPath(new URL("../dist/main.js", import.meta.url));

/** Phases, by a pattern on a frame's "function file": the first that matches the frame nearest the leaf wins. */
const phases: readonly (readonly [string, RegExp])[] = [
  ["garbage collection", /^\(garbage collector\)/],
  ["the policy (decide, rollups)", /^(decide|addToRollups|decideService|quorum|warnings|silencedAt) /],
  ["metrics", /prom-client|^observe|histogram|counter\.js/],
  ["write path (the batch's statements, SQLite)", /^(recordResults|readBatch|writeDecision|bulkInsert|keep|changeMark) |kysely|better-sqlite3|sqlite/],
  ["connect", /connect/i],
  ["close", /destroy|^close |closeSocketHandle/],
  ["parse (the answer)", /onStreamRead|^(push|#readLine|#onLine|#onStatusLine|#onHeader|#onHeadEnd|#framing) /],
  ["the request and the check's own code", /^(probe|runCheck|send\d*|request|evaluate\w*|#take|#settle) /],
  ["timers and scheduler", /processTimers|listOnTimeout|^#(fire|due|start) |scheduler/],
  ["module loading", /esm\/|cjs\/loader|bootstrap\/realm/],
];

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const origin = `http://127.0.0.1:${port}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  console.log(`${services} services at ${interval} s, windows of ${windowSeconds} s after the first ${skip} s`);
  await perThread();
  await perPhase();
} finally {
  target.kill();
}

async function targetCount(): Promise<number> {
  target.send({ count: true });
  const [message] = (await once(target, "message")) as [{ count: number }];
  return message.count;
}

/** A daemon with the services, running, under node's `flags`. */
async function daemon(flags: string[] = []): Promise<{ child: ChildProcess; url: string; stop: () => Promise<void> }> {
  const served = await serveHealthd(bin, flags);
  try {
    await putServices(served.url, origin, services, interval);
  } catch (error) {
    await served.stop();
    throw error;
  }
  return served;
}

async function perThread(): Promise<void> {
  const { child, url, stop } = await daemon();
  try {
    const pid = child.pid!;
    await sleep(skip * 1000);
    // Read before a window's CPU and after it: the scrape's own CPU falls outside every window.
    let stored = await storeBatches(url);
    for (let from = skip; from + windowSeconds <= seconds; from += windowSeconds) {
      await targetCount();
      const before = threadCpuMs(pid);
      await sleep(windowSeconds * 1000);
      const checks = await targetCount();
      const after = threadCpuMs(pid);
      const now = await storeBatches(url);
      const [batches, runs, writeMs] = [now.batches - stored.batches, now.runs - stored.runs, now.ms - stored.ms];
      stored = now;
      let [user, system, rest] = [0, 0, 0];
      for (const [tid, [u, s]] of after) {
        const [u0, s0] = before.get(tid) ?? [0, 0];
        if (tid === pid) (user += u - u0), (system += s - s0);
        else rest += u - u0 + s - s0;
      }
      const per = (ms: number) => fixed(ms / checks, 3);
      console.log(
        `per thread, ${from}-${from + windowSeconds} s: ${per(user + system + rest)} ms CPU per check: main thread ${per(user + system)} ` +
          `(user ${per(user)}, system ${per(system)}), other threads ${per(rest)}; ${checks} checks; ` +
          `of the main thread's, storing results ${per(writeMs)} (${fixed(writeMs / batches, 2)} ms a batch of ${fixed(runs / batches, 1)})`,
      );
    }
  } finally {
    await stop();
  }
}

/**
 * The daemon's own account of storing results (healthd_store_batch_seconds): on SQLite a batch's statements
 * run synchronously, so its time is main-thread CPU.
 */
async function storeBatches(url: string): Promise<{ batches: number; runs: number; ms: number }> {
  const text = await scrape(url);
  const value = (name: string) => metricIn(text, name);
  return { batches: value("healthd_store_batch_seconds_count"), runs: value("healthd_store_batch_results_total"), ms: value("healthd_store_batch_seconds_sum") * 1000 };
}

interface Profile {
  readonly nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

async function perPhase(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-phases-profile-"));
  try {
    const { child, stop } = await daemon(["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", "1000"]);
    const pid = child.pid!;
    await sleep(seconds * 1000);
    await stop();
    // The main thread's profile is named after the process and thread 0; workers write their own.
    const file = readdirSync(dir).find((name) => name.includes(`.${pid}.0.`));
    if (!file) throw new Error(`no profile of the main thread in ${dir}: ${readdirSync(dir).join(", ")}`);
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as Profile;
    const shares = phaseShares(profile, skip * 1e6);
    const busy = [...shares.values()].reduce((sum, n) => sum + n, 0);
    console.log(`per phase, the main thread after ${skip} s (${busy} busy samples; shares only: the profiler costs several times the daemon's CPU):`);
    for (const [phase, count] of [...shares].sort((a, b) => b[1] - a[1])) console.log(`  ${fixed((100 * count) / busy, 1).padStart(5)} %  ${phase}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Busy samples after `skipMicros`, counted by phase. */
function phaseShares(profile: Profile, skipMicros: number): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const phaseOf = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    if (phaseOf.has(id)) return phaseOf.get(id)!;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === "(idle)" || frame.functionName === "(root)") return null;
    // The nearest frame that names a phase, from the leaf up.
    let phase = "the rest (Node's internals, microtasks between the parts, (program))";
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url } = byId.get(at)!.callFrame;
      const found = phases.find(([, pattern]) => pattern.test(`${functionName} ${url}`));
      if (found) {
        phase = found[0];
        break;
      }
    }
    phaseOf.set(id, phase);
    return phase;
  };
  const counts = new Map<string, number>();
  let elapsed = 0;
  profile.samples.forEach((id, i) => {
    elapsed += profile.timeDeltas[i]!;
    if (elapsed < skipMicros) return;
    const phase = classify(id);
    if (phase !== null) counts.set(phase, (counts.get(phase) ?? 0) + 1);
  });
  return counts;
}
