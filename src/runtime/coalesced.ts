/** Following changes without piling up: the daemon's reload of what another process changed. */
import type { ScheduleChange } from "../domain/model.ts";

/**
 * Changes followed one at a time by `work`: those that come while it runs are merged and followed once after
 * it. A change that does not say what it changed (undefined) stands for any.
 */
export function coalesced(work: (change: ScheduleChange | undefined) => Promise<void>, onError: (error: unknown) => void) {
  let running: Promise<void> | undefined;
  let pending: ScheduleChange | "any" | undefined;
  const merge = (a: typeof pending, b: ScheduleChange | undefined): typeof pending =>
    a === "any" || b === undefined ? "any" : a === undefined ? b : { started: [...a.started, ...b.started], stopped: [...a.stopped, ...b.stopped] };
  const start = (): void => {
    const next = pending;
    pending = undefined;
    running = work(next === "any" ? undefined : next)
      .catch(onError)
      .finally(() => {
        running = undefined;
        if (pending !== undefined) start();
      });
  };
  const run = (change?: ScheduleChange): void => {
    pending = merge(pending, change);
    if (!running) start();
  };
  return { run, settled: async () => { while (running) await running; } };
}
