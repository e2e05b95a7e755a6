/** What the benchmarks read of a healthd process they started: its URL once it listens, and its use of the machine. */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

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
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
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
