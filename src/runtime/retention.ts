/**
 * Bounded storage: entries older than `entriesDays` and rollups older than `rollupDays` are deleted in small
 * batches, one short transaction each, yielding to the event loop between batches so checks and requests
 * never wait long behind it. Each batch's duration is reported, so the worst stall can be watched.
 */
import { yieldTurn, type Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { RetentionStore } from "../store/store.ts";

export interface RetentionOptions {
  /** Entries older than this many days are deleted. Default 30. */
  readonly entriesDays: number;
  /** Hourly rollups older than this many days are deleted. Default 365. */
  readonly rollupDays: number;
  /** Entries deleted per transaction. Default 250: at 10M entries a batch of 1000 took 27 ms (p50) in bench:store. */
  readonly batchSize?: number;
  /** Time between passes. Default 10 minutes. */
  readonly everyMs?: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Told of each batch with how long it held the event loop (ms). */
  readonly onBatch?: (ms: number, deleted: number) => void;
  /** Whether this node does the cluster's housekeeping now (nodes sharing a database prune once). Default: yes. */
  readonly isHousekeeper?: () => boolean;
}

export interface RetentionPass {
  readonly entries: number;
  readonly rollups: number;
  readonly worstBatchMs: number;
}

const dayMs = 86_400_000;

export class Retention {
  readonly #store: RetentionStore;
  readonly #options: RetentionOptions;
  #timer: unknown;
  #running: Promise<RetentionPass> | undefined;
  #stopped = false;

  constructor(store: RetentionStore, options: RetentionOptions) {
    this.#store = store;
    this.#options = options;
  }

  start(): void {
    const every = this.#options.everyMs ?? 600_000;
    const pass = () => {
      void (this.#options.isHousekeeper?.() === false ? Promise.resolve() : this.runOnce())
        .catch((error: unknown) => this.#options.log.error("retention pass failed; next one in a while", { error }))
        .finally(() => {
          if (!this.#stopped) this.#timer = this.#options.clock.setTimeout(pass, every);
        });
    };
    // A first pass soon after start, not at start: the daemon has enough to do then.
    this.#timer = this.#options.clock.setTimeout(pass, Math.min(every, 30_000));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** One pass over everything that is due; a second call during a pass joins it. */
  runOnce(): Promise<RetentionPass> {
    this.#running ??= this.#pass().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #pass(): Promise<RetentionPass> {
    const { clock } = this.#options;
    const now = clock.now();
    const batchSize = this.#options.batchSize ?? 250;
    let worst = 0;
    /** Run one batch, timing how long it takes (on SQLite: how long it holds the event loop). */
    const timed = async <T>(work: () => Promise<T>): Promise<T> => {
      const started = clock.monotonic();
      const result = await work();
      const ms = clock.monotonic() - started;
      worst = Math.max(worst, ms);
      this.#options.onBatch?.(ms, typeof result === "number" ? result : 0);
      return result;
    };

    let entries = 0;
    const entriesCutoff = now - this.#options.entriesDays * dayMs;
    while (!this.#stopped) {
      const deleted = await timed(() => this.#store.pruneEntries(entriesCutoff, batchSize));
      entries += deleted;
      if (deleted === 0) break;
      await yieldTurn();
    }

    let rollups = 0;
    const rollupCutoff = now - this.#options.rollupDays * dayMs;
    let afterKey = 0;
    while (!this.#stopped) {
      const { lastKey, deleted } = await timed(() => this.#store.pruneRollups(rollupCutoff, afterKey, 200));
      rollups += deleted;
      if (lastKey === undefined) break;
      afterKey = lastKey;
      await yieldTurn();
    }
    if (entries + rollups > 0) {
      this.#options.log.info("retention pass", { entries, rollups, worstBatchMs: Math.round(worst * 10) / 10 });
    }
    return { entries, rollups, worstBatchMs: worst };
  }
}
