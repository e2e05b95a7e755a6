/**
 * The daemon's one periodic wake-up, once a second. Waking up is most of what an idle daemon costs (about
 * 0.8 ms of CPU a wake-up on the project's machine, whatever little it then does), so what must happen every
 * second or every few seconds shares this one timer rather than each having its own: the SQLite change watch,
 * the problems look, the API's head deadline, and the event-loop delay, which is how late each tick fires
 * (docs/benchmarks.md, "What an idle daemon's CPU is").
 */
import { createHistogram, performance, type RecordableHistogram } from "node:perf_hooks";
import type { Clock } from "./clock.ts";

/** A source of periodic calls: `listener` is called at each one until the answered function is called. */
export type Pulse = (listener: () => void) => () => void;

export class Tick {
  /** How late each tick fired, in nanoseconds (at least 1: a histogram holds no zeros). */
  readonly delays: RecordableHistogram = createHistogram();
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #due = 0;

  constructor(readonly everyMs = 1000) {}

  /** Ticks run while anything listens: what stops (or never started) leaves no timer behind. */
  on: Pulse = (listener) => {
    this.#listeners.add(listener);
    if (!this.#timer) {
      this.#due = performance.now() + this.everyMs;
      this.#timer = setInterval(() => this.#fire(), this.everyMs);
      this.#timer.unref(); // a tick keeps nothing alive: the server and the checks do
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size > 0) return;
      clearInterval(this.#timer);
      this.#timer = undefined;
    };
  };

  #fire(): void {
    const now = performance.now();
    this.delays.record(Math.max(1, Math.round((now - this.#due) * 1e6)));
    // An interval is re-armed from when it fires, not from when it was due: a late tick does not hurry the next.
    this.#due = now + this.everyMs;
    for (const listener of this.#listeners) listener();
  }
}

/** What an Alarm shares: the daemon's tick, and how often it comes. */
export interface SharedTick {
  readonly on: Pulse;
  readonly everyMs: number;
}

// A timer further out than this rings then (setTimeout overflows past 2^31 ms): its owner looks again.
const maxTimerMs = 3_600_000;

/**
 * A timer for a moment that may come a little early, so that it rings with the tick rather than on a wake-up
 * of its own: set for `at` and `earliest`, it rings on the last tick before `at` when that tick comes after
 * `earliest`, and otherwise at `at` (no tick in the window, or one that comes late). At everyday loads a
 * wake-up costs more than most of what is done in it (the caches it finds cold): the scheduler's wake-ups,
 * shared with the tick's, took 6 to 12 % off a check at 100 services at 20 s (docs/benchmarks.md).
 */
export class Alarm {
  readonly #clock: Clock;
  readonly #ring: () => void;
  readonly #stopListening: () => void;
  #handle: unknown;
  #at = Infinity;
  #earliest = Infinity;

  constructor(clock: Clock, ring: () => void, tick?: SharedTick) {
    this.#clock = clock;
    this.#ring = ring;
    this.#stopListening = tick ? tick.on(() => this.#ticked(tick.everyMs)) : () => {};
  }

  /** When it rings at the latest; Infinity while it is not set. */
  get at(): number {
    return this.#at;
  }

  /** Ring at `at` (clock ms), or on the last tick before it if that is after `earliest`. Replaces what was set. */
  set(at: number, earliest = at): void {
    this.#clock.clearTimeout(this.#handle);
    this.#at = at;
    this.#earliest = earliest;
    this.#handle = this.#clock.setTimeout(() => this.#rang(), Math.min(Math.max(0, at - this.#clock.now()), maxTimerMs));
  }

  clear(): void {
    this.#clock.clearTimeout(this.#handle);
    this.#at = this.#earliest = Infinity;
  }

  /** Clear it, and stop listening to the tick. */
  stop(): void {
    this.clear();
    this.#stopListening();
  }

  #ticked(everyMs: number): void {
    const now = this.#clock.now();
    // Not yet in the window, or the next tick still comes in time.
    if (now <= this.#earliest || now + everyMs <= this.#at) return;
    this.#rang();
  }

  #rang(): void {
    this.clear();
    this.#ring();
  }
}

/** A pulse of its own, for a process that has no Tick (healthd tail -f). */
export const every =
  (ms: number): Pulse =>
  (listener) => {
    const timer = setInterval(listener, ms);
    return () => clearInterval(timer);
  };
