/**
 * The daemon's own shortages, as its checks meet them: out of file descriptors (EMFILE, ENFILE) or memory.
 * Such a check says nothing about its target, so it is not stored and not counted against the service; the
 * shortage is logged once per episode and reported on /healthz while it lasts (and a minute after).
 */
import type { Clock } from "./clock.ts";
import type { Logger } from "./log.ts";

const episodeMs = 60_000;

export class Shortages {
  readonly #log: Logger;
  readonly #clock: Clock;
  #last: { code: string; at: number; checks: number } | undefined;

  constructor(log: Logger, clock: Clock) {
    this.#log = log;
    this.#clock = clock;
  }

  /** A check could not be made for want of `code`. */
  seen(code: string, message: string): void {
    const now = this.#clock.now();
    if (!this.#last || now - this.#last.at > episodeMs) {
      this.#log.error("checks cannot be made: the daemon is short of resources; they are not counted against their services", { code, error: message });
      this.#last = { code, at: now, checks: 0 };
    }
    this.#last = { code, at: now, checks: this.#last.checks + 1 };
  }

  /** What /healthz says while an episode lasts. */
  problem(): string | undefined {
    const last = this.#last;
    if (!last || this.#clock.now() - last.at > episodeMs) return undefined;
    return (
      `${last.checks} checks could not be made for want of the daemon's own resources (${last.code}, last at ` +
      `${new Date(last.at).toISOString()}); raise LimitNOFILE= (ulimit -n) or lower --max-in-flight`
    );
  }
}
