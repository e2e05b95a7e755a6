/** The built executable, run as users run it. `npm test` builds dist/ first. */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { fileURLToPath } from "node:url";
import type { TestContext } from "node:test";
import { nextEvent } from "./events.ts";

export const healthdBin = fileURLToPath(new URL("../../bin/healthd", import.meta.url));

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run healthd to its end, in `cwd` (default: the test's) with `env` added to the environment. */
export async function runHealthd(args: readonly string[], env: Record<string, string> = {}, cwd?: string): Promise<Run> {
  const child = spawn(process.execPath, [healthdBin, ...args], { cwd, env: { ...process.env, NO_COLOR: "1", ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d));
  child.stderr.on("data", (d: Buffer) => (stderr += d));
  // A guard that turns a command that never ends (a daemon that should have refused to start) into a failure.
  const guard = setTimeout(() => {
    stderr += "\n[test: killed after 60 s; the command did not end by itself]";
    child.kill("SIGKILL");
  }, 60_000);
  const [code] = (await once(child, "close")) as [number | null];
  clearTimeout(guard);
  return { code, stdout, stderr };
}

export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  /** Everything the daemon has logged so far. */
  log(): string;
  /** Resolves when the daemon logs a line matching `pattern` (from now on). */
  waitForLog(pattern: RegExp): Promise<void>;
  /** Lower the running daemon's limit of open files (util-linux prlimit), as a small LimitNOFILE= would. */
  limitFiles(count: number): void;
  /** Send a signal and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Start `healthd serve` on a free port and wait for it to say where it listens. */
export async function serveHealthd(t: TestContext, args: readonly string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [healthdBin, "serve", "--port", "0", ...args], {
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  let log = "";
  const lines = new EventEmitter();
  child.stdout.on("data", (d: Buffer) => (log += d));
  child.stderr.on("data", (d: Buffer) => lines.emit("data", String(d)));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on("data", (d: Buffer) => {
      log += d;
      // Text logs say `listening url=...`; JSON logs carry "url" on the "listening" line.
      const m = /listening url=(\S+)|"message":"listening","url":"([^"]+)"/.exec(log);
      if (m) resolve((m[1] ?? m[2])!);
    });
    void exited.then((code) => reject(new Error(`healthd exited with ${code} before listening:\n${log}`)));
    // A guard that turns a hang into a clear failure (healthd says where it listens at info level).
    setTimeout(() => reject(new Error(`healthd did not say where it listens within 15 s:\n${log}`)), 15_000).unref();
  });
  return {
    child,
    url,
    log: () => log,
    // The soft limit only: it can be raised again, as a test may want once the shortage is seen.
    limitFiles: (count) => execFileSync("prlimit", [`--pid=${child.pid}`, `--nofile=${count}:`]),
    waitForLog: (pattern) => nextEvent<[string]>(lines, "data", (chunk) => pattern.test(chunk)).then(() => undefined),
    stop: async (signal = "SIGTERM") => {
      child.kill(signal);
      return exited;
    },
  };
}
