/** healthd's exit codes: 0 ok, 1 a check failed, 2 bad usage or configuration, 3 an internal error. */
import { UsageError } from "../platform/usage.ts";

export const exitCodes = { ok: 0, checkFailed: 1, usage: 2, internal: 3 } as const;

/**
 * Say what stopped a command, the way every healthd command says it, and answer its exit code: 2 for bad usage
 * (and too few open files), 3 for an internal error, with its stack when `debug()` says so (asked only then).
 */
export function failed(error: unknown, debug: () => boolean): number {
  if (error instanceof UsageError) {
    process.stderr.write(`healthd: ${error.message}\n`);
    return exitCodes.usage;
  }
  const e = error as NodeJS.ErrnoException;
  if (e.code === "EMFILE" || e.code === "ENFILE") {
    // Said the same way by bin/healthd, when loading healthd's modules already fails.
    process.stderr.write(
      `healthd: too many open files (${e.code}): raise the limit of open files (ulimit -n 4096, or LimitNOFILE=4096 under systemd) and start again\n`,
    );
    return exitCodes.usage;
  }
  process.stderr.write(
    debug()
      ? `healthd: internal error: ${e.stack ?? String(error)}\n`
      : `healthd: internal error: ${e.message ?? String(error)} (run again with --debug for the details, and report it)\n`,
  );
  return exitCodes.internal;
}
