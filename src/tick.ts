/**
 * The daemon's one periodic wake-up, once a second. Waking up is most of what an idle daemon costs (about
 * 0.8 ms of CPU a wake-up on the project's machine, whatever little it then does), so what must happen every
 * second or every few seconds shares this one timer rather than each having its own: the SQLite change watch,
 * the problems look, the API's head deadline, and the event-loop delay, which is how late each tick fires
 * (docs/benchmarks.md, "What an idle daemon's CPU is").
 */
import { createHistogram, performance, type RecordableHistogram } from "node:perf_hooks";

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

/** A pulse of its own, for a process that has no Tick (healthd tail -f). */
export const every =
  (ms: number): Pulse =>
  (listener) => {
    const timer = setInterval(listener, ms);
    return () => clearInterval(timer);
  };
