/**
 * Time, read in this one place. The daemon makes one clock at start and hands it down to what keeps time
 * (the scheduler, the cluster node, delivery, retention, the check controller, the log); what does a thing at a
 * moment (a store query, a pure decision) is given that moment as a number. Tests where time itself is the
 * subject hand in a fake clock.
 */
export interface Clock {
  /** The wall clock, Unix ms: what is stored and shown. */
  now(): number;
  /** A clock nobody sets and a paused process does not stop, in ms: durations and leases. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
