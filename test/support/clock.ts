/** A fake clock for tests where time itself is the subject: timers fire only when the test advances it. */
import type { Clock } from "../../src/platform/clock.ts";
import type { SharedTick } from "../../src/platform/tick.ts";

export class FakeClock implements Clock {
  #now: number;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  monotonic(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Move time forward, firing due timers in order at their own times, letting promises settle between. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      const due = [...this.#timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = Math.max(this.#now, due[1].at);
      due[1].fn();
    }
    this.#now = end;
    await settle();
  }
}

/** Let every pending promise callback run (one turn of the event loop, not a wait on time). */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The daemon's tick on a fake clock, running: its riders are called every `everyMs` from now, as Tick's are. */
export function fakeTick(clock: FakeClock, everyMs = 1000): SharedTick & { readonly times: number[]; readonly listening: () => number } {
  const listeners = new Set<() => void>();
  const times: number[] = [];
  const fire = () => {
    times.push(clock.now());
    for (const listener of [...listeners]) listener(); // each once, as Tick's riders are
    clock.setTimeout(fire, everyMs);
  };
  clock.setTimeout(fire, everyMs);
  return {
    everyMs,
    running: true,
    woke: () => {}, // a running tick's riders wait for its next tick, as Tick's do
    times,
    listening: () => listeners.size,
    ride: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
