/**
 * The daemon's one periodic wake-up, once a second. Waking up is most of what an idle daemon costs (about
 * 0.8 ms of CPU a wake-up on the project's machine, whatever little it then does), so what must happen every
 * second or every few seconds shares this one timer rather than each having its own: the SQLite change watch,
 * the problems look and the event-loop delay, which is how late each tick fires (docs/benchmarks.md, "What an
 * idle daemon's CPU is").
 */
import { createHistogram, performance, type RecordableHistogram } from "node:perf_hooks";

/** A source of periodic calls: `listener` is called at each one until the answered function is called. */
export type Pulse = (listener: () => void) => () => void;

export class Tick {
  /** How late each tick fired, in nanoseconds (at least 1: a histogram holds no zeros). */
  readonly delays: RecordableHistogram = createHistogram();
  readonly #listeners = new Set<() => void>();
  readonly #timer: NodeJS.Timeout;
  #due: number;

  constructor(readonly everyMs = 1000) {
    this.#due = performance.now() + everyMs;
    this.#timer = setInterval(() => this.#fire(), everyMs);
    this.#timer.unref(); // a tick keeps nothing alive: the server and the checks do
  }

  on: Pulse = (listener) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  stop(): void {
    clearInterval(this.#timer);
  }

  #fire(): void {
    const now = performance.now();
    this.delays.record(Math.max(1, Math.round((now - this.#due) * 1e6)));
    // An interval is re-armed from when it fires, not from when it was due: a late tick does not hurry the next.
    this.#due = now + this.everyMs;
    for (const listener of this.#listeners) listener();
  }
}

/** A pulse of its own, for a process that has no Tick (healthd tail -f). */
export const every =
  (ms: number): Pulse =>
  (listener) => {
    const timer = setInterval(listener, ms);
    return () => clearInterval(timer);
  };
