/** What the benchmarks read of a healthd process they started: its URL once it listens, and its use of the machine. */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The URL from the daemon's "listening" log line; rejects if it exits first, with what it logged. */
export function listening(child: ChildProcess, name = "healthd"): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let log = "";
    child.stderr!.on("data", (d: Buffer) => {
      log += d;
      const m = /listening url=(\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code}: ${log}`)));
  });
}

/** CPU seconds (user + system) of a process so far, from /proc. */
export function cpuSeconds(pid: number): number {
  const [user, system] = ticks(`/proc/${pid}/stat`);
  return (user + system) / 100;
}

/** CPU ms of each of the process's threads so far, by thread id: [user, system]. */
export function threadCpuMs(pid: number): Map<number, readonly [number, number]> {
  const cpu = new Map<number, readonly [number, number]>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [user, system] = ticks(`/proc/${pid}/task/${task}/stat`);
      cpu.set(Number(task), [user * 10, system * 10]);
    } catch {
      // The thread ended between the listing and the read: it counts in neither window's end.
    }
  }
  return cpu;
}

/** User and system time of a /proc stat file, in clock ticks (100 a second). */
function ticks(path: string): [number, number] {
  const fields = readFileSync(path, "utf8").split(") ")[1]!.split(" ");
  return [Number(fields[11]), Number(fields[12])];
}

/**
 * `healthd serve` (`bin`, after node's `flags`) on a SQLite file in a fresh temp folder, sending notifications
 * nowhere; once it listens, its URL. `stop` ends it with SIGINT (so that --cpu-prof writes its profile) and
 * removes the folder.
 */
export async function serveHealthd(bin: string, flags: readonly string[] = []): Promise<{ child: ChildProcess; url: string; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-"));
  const child = spawn(process.execPath, [...flags, bin, "serve", "--db", join(dir, "bench.db"), "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGINT");
      await once(child, "exit");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    return { child, url: await listening(child), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `count` services checking `origin` every `interval` s, through the API, a thousand to a server. */
export async function putServices(url: string, origin: string, count: number, interval: number): Promise<void> {
  for (let s = 0; s * 1000 < count; s++) {
    const services = Array.from({ length: Math.min(1000, count - s * 1000) }, (_, i) => ({
      id: `svc-${i}`,
      check: { url: `${origin}/svc/server-${s}/svc-${i}?i=${interval}`, intervalSeconds: interval, notify: false },
    }));
    const answer = await fetch(`${url}/services/server-${s}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services }) });
    if (answer.status !== 201) throw new Error(`PUT of server-${s} failed: ${answer.status} ${await answer.text()}`);
  }
}

/** A daemon's /metrics exposition, to read values from with metricIn. */
export async function scrape(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

/** The value of `name` in an exposition, summed over its series whatever their labels; 0 when it has none. */
export function metricIn(text: string, name: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "gm"))) sum += Number(m[1]);
  return sum;
}

/** The scheduler's lag histogram in an exposition: cumulative counts by upper bound in ms. */
export function lagBucketsIn(text: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const m of text.matchAll(/^healthd_scheduler_lag_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)) {
    buckets.set(m[1] === "+Inf" ? Infinity : Number(m[1]) * 1000, Number(m[2]));
  }
  return buckets;
}

export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
}

/** Voluntary context switches of all the process's threads: its wake-ups, a count steadier than a time. */
export function wakeUps(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    total += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${task}/status`, "utf8"))?.[1] ?? 0);
  }
  return total;
}
