/** Waiting for what the daemon says happened, instead of sleeping. */
import type { EventEmitter } from "node:events";

/**
 * Resolve with the first `event` whose arguments satisfy `accept`. The guard only turns a hang into a clear
 * failure; no test passes because time went by.
 */
export function nextEvent<T extends unknown[]>(
  emitter: EventEmitter,
  event: string,
  accept: (...args: T) => boolean = () => true,
  guardMs = 15_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`no ${event} event came within ${guardMs} ms`));
    }, guardMs);
    const listener = (...args: unknown[]) => {
      if (!accept(...(args as T))) return;
      clearTimeout(guard);
      emitter.off(event, listener);
      resolve(args as T);
    };
    emitter.on(event, listener);
  });
}

/**
 * Poll `read` (the daemon's API, from another process) until `accept` holds. The bound only turns a hang into
 * a clear failure; the wait ends as soon as the answer does.
 */
export async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean, what: string, guardMs = 15_000): Promise<T> {
  const deadline = Date.now() + guardMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${guardMs} ms (last: ${JSON.stringify(value)?.slice(0, 500)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
