/**
 * Stores finished checks in small batches: one transaction per batch, committed within `flushMs` of the
 * first check in it finishing. Each entry is written with its service's new state (and, later, the
 * notifications it calls for), so a crash never leaves an entry without its state or the reverse.
 */
import type { Entry } from "./model.ts";
import type { Logger } from "./log.ts";
import { initialState, transition, type IncidentState, type Transition } from "./notify/incident.ts";
import { renderNotification } from "./notify/message.ts";
import type { Outcome } from "./checks/http.ts";
import type { Store } from "./store/db.ts";
import { entryFromRow, readStates, recordChecks, type Finished } from "./store/entries.ts";
import { addRollups } from "./store/rollups.ts";
import type { ScheduledService } from "./store/servers.ts";
import { rollupDeltas } from "./rollup/deltas.ts";

export interface Recorded {
  readonly service: ScheduledService;
  readonly entry: Entry;
  readonly state: IncidentState;
  readonly notify: Transition | null;
}

export interface RecorderOptions {
  readonly log: Logger;
  /** The topic of services without `notifyTopic`; null when none is configured. */
  readonly defaultTopic: string | null;
  /** Told of each batch once it is committed. */
  readonly onRecorded?: (batch: readonly Recorded[]) => void;
  /** Longest a finished check waits to be written. Default 100 ms (the promise is within one second). */
  readonly flushMs?: number;
  /** A batch this large is written at once. Default 500. */
  readonly maxBatch?: number;
  /**
   * Finished checks kept while the store cannot be written (disk full, read-only); beyond it the oldest are
   * dropped and counted. Default 50,000.
   */
  readonly maxPending?: number;
  /** Told of each failed write, and of dropped results. */
  readonly onWriteFailed?: (error: Error) => void;
  readonly onDropped?: (count: number) => void;
}

interface Pending {
  readonly service: ScheduledService;
  readonly finished: Finished;
  readonly notify: Transition | null;
}

export class Recorder {
  readonly #store: Store;
  readonly #options: RecorderOptions;
  readonly #states: Map<number, IncidentState>;
  #pending: Pending[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writeError: Error | null = null;

  constructor(store: Store, options: RecorderOptions) {
    this.#store = store;
    this.#options = options;
    this.#states = readStates(store);
  }

  /** Why results cannot be stored right now, or null when they can. */
  get writeError(): Error | null {
    return this.#writeError;
  }

  /** The state of each service the recorder has seen, for metrics. */
  state(key: number): IncidentState | undefined {
    return this.#states.get(key);
  }

  /** Take a finished check: its state transition happens now, in the order checks finish. */
  push(service: ScheduledService, outcome: Outcome): void {
    const before = this.#states.get(service.key) ?? initialState;
    const { state, notify } = transition(before, outcome, service.check);
    this.#states.set(service.key, state);
    const { serverId, serviceId, check } = service;
    const notification = notify
      ? {
          serverId,
          serviceId,
          kind: notify,
          topic: check.notifyTopic ?? this.#options.defaultTopic,
          message: renderNotification(notify, { serverId, serviceId, url: check.url }, outcome, before, state),
        }
      : undefined;
    const finished = { serviceKey: service.key, checkedAt: outcome.checkedAt, result: outcome, state, notification };
    this.#pending.push({ service, notify, finished });
    // While the store is failing, the retry timer alone writes: no attempt per finished check.
    if (this.#pending.length >= this.#maxBatch && !this.#writeError) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), this.#options.flushMs ?? 100);
  }

  /** Forget deleted services (their rows are gone by cascade). */
  forget(keys: readonly number[]): void {
    for (const key of keys) this.#states.delete(key);
  }

  /** Write everything pending, batch after batch (the daemon is stopping); stops at the first failure. */
  flushAll(): void {
    while (this.#pending.length > 0 && !this.#writeError) this.flush();
    if (this.#pending.length > 0) this.#options.log.error("stopping with check results that could not be stored", { lost: this.#pending.length });
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  get #maxBatch(): number {
    return this.#options.maxBatch ?? 500;
  }

  /** Write what is pending now, a batch per transaction; a long backlog continues on the next turn. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const batch = this.#pending.splice(0, this.#maxBatch);
    let ids: (number | undefined)[];
    try {
      ids = this.#store.transaction(() => {
        const stored = recordChecks(this.#store, batch.map((p) => p.finished));
        addRollups(this.#store, rollupDeltas(batch.filter((_, i) => stored[i] !== undefined).map((p) => p.finished)));
        return stored;
      });
    } catch (error) {
      this.#failed(error as Error, batch);
      return;
    }
    if (this.#writeError) {
      this.#options.log.info("check results are stored again", { was: this.#writeError.message });
      this.#writeError = null;
    }
    if (this.#pending.length > 0) this.#timer = setTimeout(() => this.flush(), 0);
    const recorded: Recorded[] = [];
    batch.forEach((p, i) => {
      const id = ids[i];
      if (id === undefined) return;
      const { result, checkedAt } = p.finished;
      const entry = entryFromRow({
        id,
        checked_at: checkedAt,
        ok: result.ok ? 1 : 0,
        status: result.status,
        latency_ms: result.latencyMs,
        error_kind: result.errorKind,
        error: result.error,
        matched: result.matched,
      });
      recorded.push({ service: p.service, entry, state: p.finished.state, notify: p.notify });
    });
    this.#options.onRecorded?.(recorded);
  }

  #failed(error: Error, batch: Pending[]): void {
    if (this.#writeError?.message !== error.message) {
      this.#options.log.error("cannot store check results; checks go on and their results are kept for a retry", {
        pending: batch.length + this.#pending.length,
        error: error.message,
      });
    }
    this.#writeError = error;
    this.#options.onWriteFailed?.(error);
    this.#pending = batch.concat(this.#pending);
    const max = this.#options.maxPending ?? 50_000;
    if (this.#pending.length > max) {
      const dropped = this.#pending.length - max;
      this.#pending.splice(0, dropped);
      this.#options.log.warn("dropped the oldest check results: the store has been failing too long", { dropped });
      this.#options.onDropped?.(dropped);
    }
    this.#timer ??= setTimeout(() => this.flush(), 1000);
  }
}
