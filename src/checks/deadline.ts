/**
 * A check's one deadline (its `timeoutMs`, or the daemon stopping), shared by the controllers that wait on
 * several steps in turn (udp, tls, dns): each step waits through `until`, which rejects with `timedOut` once
 * the deadline has passed; `over` says so to a step that was already under way; `clear` when the check ends.
 */
import type { Clock } from "../platform/clock.ts";
import { onStop } from "./stopping.ts";

/** What `until` rejects with when the deadline passes: compare with ===. */
export const timedOut = Object.freeze(new Error("timed out"));

export class Deadline {
  readonly #clock: Clock;
  #timer: unknown;
  #expired: Promise<never>;
  #forget: () => void;
  #over = false;
  /** What a server sent that was not the answer (garbage, another id): said when the deadline passes. */
  lastProblem: string | undefined;
  constructor(clock: Clock, ms: number, signal?: AbortSignal) {
    this.#clock = clock;
    let reject!: (error: unknown) => void;
    this.#expired = new Promise<never>((_, r) => (reject = r));
    this.#expired.catch(() => {});
    const abort = () => {
      this.#over = true;
      reject(timedOut);
    };
    this.#timer = clock.setTimeout(abort, ms);
    this.#forget = onStop(signal, abort);
  }

  until<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.#expired]);
  }

  /** Whether the deadline has passed, or the check ended: a step still under way makes nothing more. */
  get over(): boolean {
    return this.#over;
  }

  clear(): void {
    this.#over = true;
    this.#clock.clearTimeout(this.#timer);
    this.#forget();
  }
}
