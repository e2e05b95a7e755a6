/**
 * Time, read in this one place. The daemon makes one clock at start and hands it down to what keeps time
 * (the scheduler, the cluster node, delivery, retention, the check controller, the log, the tick, the store's
 * engine); what does a thing at a moment (a store query, a pure decision) is given that moment as a number.
 * Tests where time itself is the subject hand in a fake clock. test/layers.test.ts refuses `Date.now()`,
 * `new Date()`, `performance.now()` and Node's timers anywhere else in src/.
 */
export interface Clock {
  /** The wall clock, Unix ms: what is stored and shown. */
  now(): number;
  /** A clock nobody sets and a paused process does not stop, in ms: durations and leases. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number, options?: TimerOptions): unknown;
  clearTimeout(handle: unknown): void;
}

export interface TimerOptions {
  /** The timer does not keep the process alive on its own (a tick, a periodic look): what it serves does. Default false. */
  readonly unref?: boolean;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms, options) => {
    const timer = setTimeout(fn, ms);
    if (options?.unref) timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A promise settled `ms` from now on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * `fn` at the next turn of the event loop, after its I/O (setImmediate): for work gathered from one turn. It
 * waits for no time, so no clock drives it, fake or not; it is here so that nothing else in src/ calls a timer.
 */
export function nextTurn(fn: () => void): void {
  setImmediate(fn);
}

/** A promise settled at the next turn of the event loop: a long loop lets requests and checks in between. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
