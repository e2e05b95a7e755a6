/**
 * The daemon's one periodic wake-up, once a second, for what must happen every second while it is going on:
 * runs that may start a little early (the scheduler's Alarm), the API's head deadline while a connection has
 * yet to send one, the change watch where the filesystem does not say when the database is written, and the
 * event-loop delay, which is how late each tick fires. Waking up is most of what an idle daemon costs (about
 * 0.8 ms of CPU a wake-up on the project's machine, whatever little it then does), so these share the one timer
 * rather than each having its own, and it runs only while one of them listens: a daemon with no HTTP, TCP or
 * DNS checks and no client waits without it (docs/benchmarks.md, "What an idle daemon's CPU is").
 */
import { createHistogram, performance, type RecordableHistogram } from "node:perf_hooks";
import type { Clock } from "./clock.ts";

/** A source of periodic calls: `listener` is called at each one until the answered function is called. */
export type Pulse = (listener: () => void) => () => void;

export class Tick {
  /** How late each tick fired, in nanoseconds (at least 1: a histogram holds no zeros). */
  readonly delays: RecordableHistogram = createHistogram();
  readonly #listeners = new Set<() => void>();
  readonly #riders = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #due = 0;

  constructor(readonly everyMs = 1000) {}

  /**
   * Ticks run while anything listens. The last listener's leaving stops them at the next tick, not at once: an
   * Alarm leaves each time it rings and comes back as it is set again, and the tick keeps its phase for it.
   */
  on: Pulse = (listener) => {
    this.#listeners.add(listener);
    if (!this.#timer) {
      this.#due = performance.now() + this.everyMs;
      this.#timer = setInterval(() => this.#fire(), this.everyMs);
      this.#timer.unref(); // a tick keeps nothing alive: the server and the checks do
    }
    return () => void this.#listeners.delete(listener);
  };

  /**
   * Called at each tick while others listen; never makes it run. For what comes every few seconds (the node's
   * heartbeat, the problems look): with a tick when one comes anyway, on a wake-up of its own when none does.
   */
  ride: Pulse = (listener) => {
    this.#riders.add(listener);
    return () => void this.#riders.delete(listener);
  };

  /** The tick as a SharedTick whose listeners ride it (see ride). */
  get riding(): SharedTick {
    return { on: this.ride, everyMs: this.everyMs, ridden: true };
  }

  /** Whether it is ticking. */
  get running(): boolean {
    return this.#timer !== undefined;
  }

  #fire(): void {
    if (this.#listeners.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    const now = performance.now();
    this.delays.record(Math.max(1, Math.round((now - this.#due) * 1e6)));
    // An interval is re-armed from when it fires, not from when it was due: a late tick does not hurry the next.
    this.#due = now + this.everyMs;
    for (const listener of this.#listeners) listener();
    for (const rider of this.#riders) rider();
  }
}

/** What an Alarm shares: the daemon's tick, and how often it comes. */
export interface SharedTick {
  readonly on: Pulse;
  readonly everyMs: number;
  /** Its listeners only hear ticks that run anyway (Tick.riding): listening keeps no tick going. */
  readonly ridden?: boolean;
}

// A timer further out than this rings then (setTimeout overflows past 2^31 ms): its owner looks again (an Alarm
// waiting to listen sets itself again).
const maxTimerMs = 3_600_000;

/**
 * A timer for a moment that may come a little early, so that it rings with the tick rather than on a wake-up
 * of its own: set for `at` and `earliest`, it rings on the last tick before `at` when that tick comes after
 * `earliest`, and otherwise at `at` (no tick in the window, or one that comes late). At everyday loads a
 * wake-up costs more than most of what is done in it (the caches it finds cold): the scheduler's wake-ups,
 * shared with the tick's, took 6 to 12 % off a check at 100 services at 20 s (docs/benchmarks.md). It listens
 * to the tick only while it is set with a window (`earliest` before `at`): otherwise no tick can ring it. And,
 * as listening keeps the tick going, only from two ticks before `at` (a timer of its own until then): only the
 * last tick before `at` can ring it, and a daemon whose next check is an hour away would otherwise tick all hour.
 */
export class Alarm {
  readonly #clock: Clock;
  readonly #ring: () => void;
  readonly #tick: SharedTick | undefined;
  readonly #onTick: () => void;
  #stopListening: (() => void) | undefined;
  #handle: unknown;
  #at = Infinity;
  #earliest = Infinity;

  constructor(clock: Clock, ring: () => void, tick?: SharedTick) {
    this.#clock = clock;
    this.#ring = ring;
    this.#tick = tick;
    this.#onTick = () => this.#ticked(tick!.everyMs);
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
    const waitMs = Math.max(0, at - this.#clock.now());
    const tick = earliest < at ? this.#tick : undefined;
    if (tick && !tick.ridden && waitMs > 2 * tick.everyMs) {
      // Too early to listen: set again (and so listen) two ticks before `at`.
      this.#unlisten();
      this.#handle = this.#clock.setTimeout(() => this.set(this.#at, this.#earliest), Math.min(waitMs - 2 * tick.everyMs, maxTimerMs));
      return;
    }
    this.#handle = this.#clock.setTimeout(() => this.#rang(), Math.min(waitMs, maxTimerMs));
    if (tick) this.#stopListening ??= tick.on(this.#onTick);
    else this.#unlisten();
  }

  /** It rings no more until it is set again (nor listens to the tick). */
  clear(): void {
    this.#clock.clearTimeout(this.#handle);
    this.#at = this.#earliest = Infinity;
    this.#unlisten();
  }

  #unlisten(): void {
    this.#stopListening?.();
    this.#stopListening = undefined;
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
