/**
 * How long to wait before connecting again after failed connections: doubling from `baseMs` to `maxMs`, each
 * wait drawn between half and all of it (jitter, so that nodes and connections that failed together do not
 * come back together). A pooler that accepts and closes fails every connection at once; without this, each
 * failure is retried at once and the retries multiply.
 */
export class Backoff {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #now: () => number;
  readonly #random: () => number;
  #failures = 0;
  #until = 0;

  /** `now`: monotonic ms (Clock.monotonic). */
  constructor({ baseMs = 250, maxMs = 5000, now, random = Math.random }: { baseMs?: number; maxMs?: number; now: () => number; random?: () => number }) {
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
    this.#now = now;
    this.#random = random;
  }

  /** Milliseconds left before the next try, 0 when it may go now. */
  get waitMs(): number {
    return Math.max(0, this.#until - this.#now());
  }

  /** A try failed: answers how long to wait before the next. */
  failed(): number {
    const ceiling = Math.min(this.#maxMs, this.#baseMs * 2 ** Math.min(this.#failures, 30));
    this.#failures++;
    const wait = ceiling / 2 + (this.#random() * ceiling) / 2;
    this.#until = Math.max(this.#until, this.#now() + wait);
    return wait;
  }

  succeeded(): void {
    this.#failures = 0;
    this.#until = 0;
  }
}
