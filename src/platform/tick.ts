/**
 * The daemon's one periodic wake-up, once a second, for what must happen every second while it is going on:
 * the API's head deadline while a connection has yet to send one, the change watch where the filesystem does
 * not say when the database is written, and the event-loop delay, which is how late each tick fires. Waking up
 * is most of what an idle daemon costs (about 0.8 ms of CPU a wake-up on the project's machine, whatever little
 * it then does), so these share the one timer rather than each having its own, and it runs only while one of
 * them listens: a daemon with no client waits without it (docs/benchmarks.md, "What an idle daemon's CPU is").
 * What may come a little early (the scheduler's runs, the node's heartbeat, the problems look) rides it: an
 * Alarm rings with a tick that runs anyway, and on a wake-up of its own when none does.
 */
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import type { Clock, TimerOptions } from "./clock.ts";

/** A source of periodic calls: `listener` is called at each one until the answered function is called. */
export type Pulse = (listener: () => void) => () => void;

export class Tick {
  /** How late each tick fired, in nanoseconds (at least 1: a histogram holds no zeros). */
  readonly delays: RecordableHistogram = createHistogram();
  readonly #listeners = new Set<() => void>();
  readonly #riders = new Set<() => void>();
  readonly #clock: Clock;
  /** Stops the ticks; undefined while they do not run. */
  #stop: (() => void) | undefined;
  #due = 0;

  constructor(clock: Clock, readonly everyMs = 1000) {
    this.#clock = clock;
  }

  /**
   * Ticks run while anything listens. The last listener's leaving stops them at the next tick, not at once: one
   * that comes back soon (a connection closed, the next one opened) finds the tick as it was.
   */
  on: Pulse = (listener) => {
    this.#listeners.add(listener);
    if (!this.#stop) {
      this.#due = this.#clock.monotonic() + this.everyMs;
      // A tick keeps nothing alive: the server and the checks do.
      this.#stop = every(this.#clock, this.everyMs, { unref: true })(() => this.#fire());
    }
    return () => void this.#listeners.delete(listener);
  };

  /**
   * Called at each tick while others listen, and at each other timer's wake-up while none do (woke); never
   * makes it run. For what may come a little early (an Alarm: the scheduler's runs, the node's heartbeat, the
   * problems look): with a wake-up that comes anyway, on one of its own when none does.
   */
  ride: Pulse = (listener) => {
    this.#riders.add(listener);
    return () => void this.#riders.delete(listener);
  };

  /** Whether it is ticking. */
  get running(): boolean {
    return this.#stop !== undefined;
  }

  /**
   * Another timer woke the daemon (an Alarm rang on its own, `waker` its rider): while no tick runs, the other
   * riders hear it as they would a tick, and an Alarm in its window rings with it rather than on its own.
   */
  woke(waker?: () => void): void {
    if (!this.#stop) this.#tellRiders(waker);
  }

  /**
   * Each rider once, as they were when the wake-up came: an Alarm rung sets itself again as it rings, and the
   * scheduler's may be in its window at once (its wake-up took the most runs it may start early); heard again
   * in the same wake-up it would start the rest too.
   */
  #tellRiders(waker?: () => void): void {
    for (const rider of [...this.#riders]) if (rider !== waker) rider();
  }

  #fire(): void {
    if (this.#listeners.size === 0) {
      this.#stop?.();
      this.#stop = undefined;
      return;
    }
    const now = this.#clock.monotonic();
    this.delays.record(Math.max(1, Math.round((now - this.#due) * 1e6)));
    // Each tick is armed from when the last one fired, not from when it was due: a late tick does not hurry the next.
    this.#due = now + this.everyMs;
    for (const listener of this.#listeners) listener();
    this.#tellRiders();
  }
}

/** What an Alarm shares of the daemon's tick: it rides it (Tick.ride), and says when it wakes the daemon itself. */
export type SharedTick = Pick<Tick, "ride" | "everyMs" | "running" | "woke">;

/**
 * How much earlier than planned something periodic may come to share a wake-up (an Alarm's window): a tenth
 * of its period, at most `maxMs`. The scheduler's runs and the node's heartbeat both take it.
 */
export function earlyWindowMs(periodMs: number, maxMs = 2000): number {
  return Math.min(maxMs, periodMs / 10);
}

// setTimeout overflows past 2^31 ms: an Alarm further out than this sets its timer again then.
const maxTimerMs = 3_600_000;

/**
 * A timer for a moment that may come a little early, so that it rings with a wake-up that comes anyway rather
 * than on one of its own: set for `at` and `earliest`, it rings after `earliest` on the last tick before `at`
 * while the tick runs, or while it does not with the first other Alarm of the same tick to ring on its own
 * (Tick.woke), and otherwise at `at`, on its own. At everyday loads a wake-up costs more than most of what
 * is done in it (the caches it finds cold). It rides the tick and never keeps it going: the scheduler's Alarm
 * once did, and at 100 services at 20 s, with a wake-up for runs every two seconds, the tick woke the daemon
 * every second, for 8 % more CPU a check (docs/benchmarks.md).
 */
export class Alarm {
  readonly #clock: Clock;
  readonly #ring: () => void;
  readonly #tick: SharedTick | undefined;
  readonly #onWakeUp: () => void;
  #stopListening: (() => void) | undefined;
  #handle: unknown;
  #at = Infinity;
  #earliest = Infinity;

  constructor(clock: Clock, ring: () => void, tick?: SharedTick) {
    this.#clock = clock;
    this.#ring = ring;
    this.#tick = tick;
    this.#onWakeUp = () => this.#heard();
  }

  /** When it rings at the latest; Infinity while it is not set. */
  get at(): number {
    return this.#at;
  }

  /** Ring at `at` (clock ms), or with a wake-up that comes anyway after `earliest` (see above). Replaces what was set. */
  set(at: number, earliest = at): void {
    this.#clock.clearTimeout(this.#handle);
    this.#at = at;
    this.#earliest = earliest;
    const waitMs = Math.max(0, at - this.#clock.now());
    this.#handle =
      waitMs > maxTimerMs
        ? this.#clock.setTimeout(() => this.set(this.#at, this.#earliest), maxTimerMs)
        : this.#clock.setTimeout(() => {
            this.#rang();
            this.#tick?.woke(this.#onWakeUp);
          }, waitMs);
    // Only a wake-up in its window can ring it early: without a window it hears none.
    if (this.#tick && earliest < at) this.#stopListening ??= this.#tick.ride(this.#onWakeUp);
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

  /** A wake-up that came anyway: a tick, or another Alarm's own. */
  #heard(): void {
    const tick = this.#tick!;
    const now = this.#clock.now();
    // Not yet in the window, or the tick runs and its next one still comes in time.
    if (now <= this.#earliest || (tick.running && now + tick.everyMs <= this.#at)) return;
    this.#rang();
  }

  #rang(): void {
    this.clear();
    this.#ring();
  }
}

/**
 * A pulse of its own every `ms` on `clock`, for a process that has no Tick (healthd tail -f), and the Tick's.
 * Each call is armed from when the last one came, as Node's setInterval does; a listener may stop it.
 */
export const every =
  (clock: Clock, ms: number, options?: TimerOptions): Pulse =>
  (listener) => {
    let handle: unknown;
    const call = () => {
      handle = clock.setTimeout(call, ms, options);
      listener();
    };
    handle = clock.setTimeout(call, ms, options);
    return () => clock.clearTimeout(handle);
  };
