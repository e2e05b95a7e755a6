/**
 * A command healthd wraps (`silence -- CMD`, `run -- CMD`): run with healthd's environment, its output passed
 * through, the signals a wrapper receives passed on to it, and its exit code answered as a shell would.
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";

/** Signals a wrapper passes on: the command decides what they mean, and healthd waits for it to exit. */
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"] as const;

export interface Finished {
  /** The command's exit code: 128 + the signal's number when a signal ended it, 127 when it was not found, 126 when it could not be started. */
  readonly code: number;
  /** Why it could not be started, if it could not. */
  readonly problem: string | null;
  /** The last `keepBytes` of its output (stdout and stderr as they came), when asked for. */
  readonly tail: Buffer;
}

/**
 * Run `command`. With `keepBytes`, its output goes through pipes (passed on to healthd's own stdout and stderr
 * as it comes) so that its tail can be kept; without, the command has healthd's terminal.
 */
export async function runWrapped(command: readonly string[], keepBytes?: number): Promise<Finished> {
  const child = spawn(command[0]!, command.slice(1), { stdio: keepBytes === undefined ? "inherit" : ["inherit", "pipe", "pipe"] });
  let tail = Buffer.alloc(0);
  const keep = (into: NodeJS.WriteStream) => (chunk: Buffer) => {
    into.write(chunk);
    tail = Buffer.concat([tail, chunk]);
    if (tail.length > 2 * keepBytes!) tail = tail.subarray(tail.length - keepBytes!);
  };
  child.stdout?.on("data", keep(process.stdout));
  child.stderr?.on("data", keep(process.stderr));
  const pass = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of forwarded) process.on(signal, pass);
  try {
    const { code, problem } = await new Promise<{ code: number; problem: string | null }>((resolve) => {
      child.once("error", (error: NodeJS.ErrnoException) => {
        const notFound = error.code === "ENOENT";
        resolve({ code: notFound ? 127 : 126, problem: `cannot run ${command[0]}: ${notFound ? "command not found" : error.message}` });
      });
      // "close", not "exit": the command's last output has been read from the pipes by then.
      child.once("close", (status, signal) => resolve({ code: status ?? 128 + (signal ? constants.signals[signal] : 0), problem: null }));
    });
    return { code, problem, tail: keepBytes === undefined ? tail : tail.subarray(Math.max(0, tail.length - keepBytes)) };
  } finally {
    for (const signal of forwarded) process.off(signal, pass);
  }
}
