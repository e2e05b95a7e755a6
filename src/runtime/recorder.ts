/**
 * The write buffer between the checks and the store: finished checks are stored in small batches, one
 * transaction per batch, committed once no check is running any more (caughtUp) or within `flushMs` of the
 * first check in it finishing, whichever comes first. The store decides each service's state inside that
 * transaction; the recorder only carries results there, in order.
 *
 * While the store cannot be written (disk full, database gone) results wait and are retried. Past
 * `maxPending` the oldest are dropped as entries but folded, per service, into runs of passes and failures
 * that still count in the service's state: a DOWN or RECOVERED they called for is still recorded. A batch
 * refused for anything else is written one result at a time: a result the database cannot take (refused
 * alone, while others are stored) is dropped, so one bad result never holds back the others.
 *
 * A heartbeat's ping is different: its sender waits for the answer, which must mean it is stored. It is
 * committed (commitRun) with the results waiting beside it, in a write started at the end of the turn it came
 * in (pings arriving while a write is in flight join the next one: many share one commit), and its promise
 * settles with that commit. A ping that cannot be stored is refused to its sender, who retries, and is not
 * kept: kept and stored later, it would be stored twice.
 */
import { nextTurn, type Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { Outcome, ScheduledService } from "../domain/model.ts";
import type { CheckRun, ResultRun } from "../domain/batch.ts";
import { StoreUnavailable } from "../store/errors.ts";
import type { RecordedRun, ResultStore } from "../store/store.ts";

/** A committed result: what the store decided of it (entry null for a folded run), with its service. */
export interface Recorded extends RecordedRun {
  readonly service: ScheduledService;
}

export interface RecorderOptions {
  readonly log: Logger;
  /** The time a batch is stored at (rollups of hours that have settled are marked changed). */
  readonly clock: Clock;
  /** The location of this node, which runs the checks it is handed. Default: the default location. */
  readonly location?: string;
  /** Told of each batch once it is committed. */
  readonly onRecorded?: (batch: readonly Recorded[]) => void;
  /** Longest a finished check waits to be written. Default 100 ms (the promise is within one second). */
  readonly flushMs?: number;
  /** A batch this large is written at once. Default 500. */
  readonly maxBatch?: number;
  /**
   * The longest a write waits for the senders the last commit answered (#gathered). Default: half that
   * commit's time, at most 10 ms. A test that is about who shares a commit, not about time, sets a long one.
   */
  readonly gatherMs?: number;
  /** Finished checks kept while the store cannot be written; beyond it the oldest are folded. Default 50,000. */
  readonly maxPending?: number;
  /** Told how long each batch stored whole took, from the store's call to its commit, and of how many runs. */
  readonly onWritten?: (ms: number, runs: number) => void;
  /** Told of each failed write, and of results that could not be kept as entries. */
  readonly onWriteFailed?: (error: Error) => void;
  readonly onDropped?: (count: number) => void;
}

interface Pending {
  readonly service: ScheduledService;
  readonly run: CheckRun;
  /** Someone waits for this run's commit (a ping): settled with it, never kept past a failed write. */
  readonly waiter?: Waiter;
}

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/** A run's service was deleted before the run could be stored: there is nothing to store it in. */
export class RunGone extends Error {
  constructor(service: ScheduledService) {
    super(`${service.serverId}/${service.serviceId} is gone`);
  }
}

/** Folded runs kept per service at most; a service flapping through a longer outage loses its oldest runs. */
const maxRunsPerService = 100;

export class Recorder {
  readonly #store: ResultStore;
  readonly #options: RecorderOptions;
  #pending: Pending[] = [];
  /** Runs folded from dropped results, per service, oldest first; all older than anything pending. */
  #folded = new Map<number, (Pending & { readonly run: ResultRun })[]>();
  #timer: unknown;
  /** The flushMs timer is to be armed at the end of this turn of the event loop, if anything still waits. */
  #bounding = false;
  #writing: Promise<void> | undefined;
  /** A write queued behind the one in flight and not started: whatever comes meanwhile joins it. */
  #queued: Promise<void> | undefined;
  /** A write is to start at the end of this turn of the event loop (a run is waited for). */
  #committing = false;
  /** The last commit: how many waiting senders it answered, how many runs waited behind it, when (monotonic ms), its cost. */
  #answered = { senders: 0, behind: 0, at: -Infinity, writeMs: 0 };
  /** A write waiting for those senders to send again (#gathered): it starts once `enough` runs wait. */
  #gathering: { readonly enough: number; readonly start: () => void } | undefined;
  #writeError: Error | null = null;
  #foldWarned = false;

  constructor(store: ResultStore, options: RecorderOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** Why results cannot be stored right now, or null when they can. */
  get writeError(): Error | null {
    return this.#writeError;
  }

  /** Results waiting to be stored. */
  get pending(): number {
    return this.#pending.length + [...this.#folded.values()].reduce((n, runs) => n + runs.length, 0);
  }

  /** Take a finished check; it is stored with the others of its batch, in the order checks finish. */
  push(service: ScheduledService, outcome: Outcome): void {
    const { location } = this.#options;
    this.pushRun(service, { serviceKey: service.key, outcome, ...(location === undefined ? {} : { location }) });
  }

  /** Take any run (a finished check, a heartbeat's ping or deadline), in order. */
  pushRun(service: ScheduledService, run: CheckRun): void {
    this.#take({ service, run });
  }

  /**
   * Take a run someone waits for (a heartbeat's ping): it is written with what waits beside it in a write
   * started at the end of this turn (or the next one, when one is in flight), and the promise settles when
   * that write commits. It rejects when the run cannot be stored (the store unavailable, or refusing it), and
   * the run is then forgotten: its sender is told, and retries.
   */
  commitRun(service: ScheduledService, run: CheckRun): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#take({ service, run, waiter: { resolve, reject } });
      if (this.#gathering && this.#pending.length >= this.#gathering.enough) this.#gathering.start();
      if (this.#committing) return;
      this.#committing = true;
      nextTurn(() => {
        this.#committing = false;
        void this.flush();
      });
    });
  }

  #take(pending: Pending): void {
    this.#pending.push(pending);
    const max = this.#options.maxPending ?? 50_000;
    if (this.#pending.length > max) this.#fold(this.#pending.length - max);
    // While the store is failing, the retry timer alone writes: no attempt per finished check. A waited-for
    // run has its write started at the end of its turn (commitRun).
    if (this.#pending.length >= this.#maxBatch && !this.#writeError) void this.flush();
    else if (!pending.waiter) this.#bound();
  }

  /**
   * Write what waits within flushMs. The timer is armed at the end of this turn of the event loop, and only if
   * something still waits then: a wake-up's checks mostly answer in one turn, and caughtUp writes them in it.
   * A timer armed and cleared in the same turn would still wake the daemon at its time: Node re-arms its one
   * system timer only in its timers phase, so a cleared timer's moment stands (an idle wake-up 100 ms after
   * every batch at everyday loads, seen with strace; docs/benchmarks.md).
   */
  #bound(): void {
    if (this.#timer || this.#bounding) return;
    this.#bounding = true;
    nextTurn(() => {
      this.#bounding = false;
      if (this.pending > 0) this.#timer ??= this.#options.clock.setTimeout(() => void this.flush(), this.#options.flushMs ?? 100);
    });
  }

  /**
   * Every check that was running has finished: write what waits now rather than when the timer fires. At
   * everyday loads a wake-up's checks finish within milliseconds of each other, and the batch they make is
   * written while that wake-up's caches are warm, rather than on a wake-up of its own `flushMs` later.
   */
  caughtUp(): void {
    if (this.#pending.length > 0 && !this.#writeError) void this.flush();
  }

  /** Write everything pending, batch after batch (the daemon is stopping); stops at the first failure. */
  async flushAll(): Promise<void> {
    this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#writing;
    while (this.pending > 0) {
      await this.flush();
      if (this.#writeError) break;
    }
    this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.pending > 0) this.#options.log.error("stopping with check results that could not be stored", { lost: this.pending });
  }

  get #maxBatch(): number {
    return this.#options.maxBatch ?? 500;
  }

  /**
   * Write one batch now (after the one being written, if any, joining the write queued behind it); a longer
   * backlog continues on the next turn.
   */
  flush(): Promise<void> {
    this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#queued) return this.#queued;
    const queued = (this.#writing ?? Promise.resolve()).then(() => {
      if (this.#queued === queued) this.#queued = undefined;
      return this.#write();
    });
    this.#queued = queued;
    this.#writing = queued;
    void queued.finally(() => {
      if (this.#writing === queued) this.#writing = undefined;
    });
    return queued;
  }

  /**
   * Group commit for senders that wait. Right after a commit, the senders it answered (clients in a loop, a
   * burst of cron jobs) send again within a millisecond or two; a write started then carries the first few,
   * and the rest wait behind it for another: twice the commits for the same pings (25 a commit for 50
   * senders, bench:pings). So the write after a commit that answered senders waits until they have sent
   * again, or for half that commit's cost (at most 10 ms), whichever comes first: a lone ping long after the
   * last one never waits.
   */
  #gathered(): Promise<void> | undefined {
    const { senders, behind, at, writeMs } = this.#answered;
    const enough = senders + behind;
    const left = at + (this.#options.gatherMs ?? Math.min(writeMs / 2, 10)) - this.#options.clock.monotonic();
    // Nothing waits: nothing to write, so nothing to wait for (a flush on its timer, the daemon stopping).
    if (senders === 0 || left <= 0 || this.#pending.length === 0 || this.#pending.length >= enough) return undefined;
    return new Promise((resolve) => {
      const timer = this.#options.clock.setTimeout(() => start(), left);
      const start = () => {
        this.#options.clock.clearTimeout(timer);
        this.#gathering = undefined;
        resolve();
      };
      this.#gathering = { enough, start };
    });
  }

  async #write(): Promise<void> {
    await this.#gathered();
    const folded: Pending[] = [...this.#folded.values()].flat();
    this.#folded.clear();
    const batch = folded.concat(this.#pending.splice(0, this.#maxBatch));
    if (batch.length === 0) return;
    let recorded: (RecordedRun | undefined)[];
    let complete = true;
    let writtenMs: number | undefined;
    try {
      const { clock } = this.#options;
      const started = clock.monotonic();
      recorded = await this.#store.recordResults(batch.map((p) => p.run), clock.now());
      writtenMs = clock.monotonic() - started;
    } catch (error) {
      if (error instanceof StoreUnavailable) return this.#failed(error, batch);
      // Perhaps something in the batch (a value the database refuses): each result alone, so that one refused
      // result is dropped and said rather than hold back every service's for ever.
      ({ recorded, complete } = await this.#oneByOne(batch, error as Error));
    }
    if (complete && this.#writeError) {
      this.#options.log.info("check results are stored again", { was: this.#writeError.message });
      this.#writeError = null;
      this.#foldWarned = false;
    }
    if (complete && this.#pending.length > 0) this.#timer ??= this.#options.clock.setTimeout(() => void this.flush(), 0);
    const done: Recorded[] = [];
    batch.forEach((p, i) => {
      const r = recorded[i];
      if (r) done.push({ service: p.service, ...r }); // added before the spread: see http.ts's send
    });
    // Told outside the write's try, each on its own: a listener that throws must not make a stored batch look
    // refused (it would be stored again, one result at a time), nor keep the other from hearing of it.
    this.#tell(() => this.#options.onRecorded?.(done));
    if (writtenMs !== undefined) this.#tell(() => this.#options.onWritten?.(writtenMs, batch.length));
    // Answered once committed and told: whoever asks next sees what the answer acknowledged. Those the write
    // did not reach (refused, or waiting in #failed) were told already.
    let senders = 0;
    batch.forEach((p, i) => {
      if (i >= recorded.length || !p.waiter) return;
      senders++;
      if (recorded[i]) p.waiter.resolve();
      else p.waiter.reject(new RunGone(p.service));
    });
    const at = this.#options.clock.monotonic();
    this.#answered = { senders, behind: this.#pending.length, at, writeMs: writtenMs ?? 0 };
  }

  #tell(listener: () => void): void {
    try {
      listener();
    } catch (error) {
      this.#options.log.error("a listener of stored results failed", { error });
    }
  }

  /**
   * Write a batch the store refused one result at a time. When some are stored, those refused alone are
   * dropped, logged and counted. When none is (the first ten refused, or all), the failure is the store's own
   * (a permission taken away, a table gone), not the results': the batch waits whole, as in an outage. If the
   * store becomes unavailable meanwhile, what is not stored waits. In both of these the write is not complete.
   */
  async #oneByOne(batch: Pending[], error: Error): Promise<{ recorded: (RecordedRun | undefined)[]; complete: boolean }> {
    const recorded: (RecordedRun | undefined)[] = [];
    const refused: { pending: Pending; error: Error }[] = [];
    for (const [i, p] of batch.entries()) {
      if (refused.length === recorded.length && refused.length === 10) break;
      try {
        recorded.push((await this.#store.recordResults([p.run], this.#options.clock.now()))[0]);
      } catch (alone) {
        if (alone instanceof StoreUnavailable) {
          // Those refused so far wait too, in their order: the next try tells them apart again.
          this.#failed(alone, [...refused.map((r) => r.pending), ...batch.slice(i)]);
          return { recorded, complete: false };
        }
        refused.push({ pending: p, error: alone as Error });
        recorded.push(undefined);
        p.waiter?.reject(alone as Error);
      }
    }
    if (refused.length === recorded.length) {
      this.#failed(error, batch);
      return { recorded: [], complete: false };
    }
    if (refused.length > 0) {
      this.#options.log.error("the store refuses these check results; they are dropped, the others of their batch are stored", {
        dropped: refused.length,
        services: refused.slice(0, 10).map(({ pending: p }) => `${p.service.serverId}/${p.service.serviceId}`),
        error: refused[0]!.error.message,
      });
      this.#options.onDropped?.(refused.reduce((n, { pending: p }) => n + ((p.run.kind === undefined && p.run.folded) || 1), 0));
    }
    return { recorded, complete: true };
  }

  #failed(error: Error, batch: Pending[]): void {
    if (this.#writeError?.message !== error.message) {
      this.#options.log.error("cannot store check results; checks go on and their results are kept for a retry", {
        pending: batch.length + this.pending,
        error: error.message,
      });
    }
    this.#writeError = error;
    this.#options.onWriteFailed?.(error);
    // A run someone waits for is refused to them, not kept: they retry, and a kept one would be stored twice.
    // Those waiting behind the batch too: while the store cannot be written, no answer waits for it.
    const all = batch.concat(this.#pending);
    for (const p of all) p.waiter?.reject(error);
    this.#pending = all.filter((p) => !p.waiter);
    const max = this.#options.maxPending ?? 50_000;
    if (this.#pending.length > max) this.#fold(this.#pending.length - max);
    this.#timer ??= this.#options.clock.setTimeout(() => void this.flush(), 1000);
  }

  /**
   * Fold the `count` oldest results into their services' runs. A heartbeat's ping or deadline among them is
   * not a result to count: it is dropped (and counted as dropped).
   */
  #fold(count: number): void {
    let lost = 0;
    for (const p of this.#pending.splice(0, count)) {
      if (p.run.kind !== undefined) {
        lost++;
        p.waiter?.reject(this.#writeError ?? new Error("too many results wait to be stored"));
        continue;
      }
      const { serviceKey, outcome, folded = 1 } = p.run;
      const runs = this.#folded.get(serviceKey) ?? [];
      const last = runs.at(-1);
      if (last && last.run.outcome.ok === outcome.ok) {
        runs[runs.length - 1] = { service: p.service, run: { serviceKey, outcome, folded: (last.run.folded ?? 1) + folded } };
      } else {
        runs.push({ service: p.service, run: { serviceKey, outcome, folded } });
        if (runs.length > maxRunsPerService) lost += runs.shift()!.run.folded ?? 1;
      }
      this.#folded.set(serviceKey, runs);
    }
    if (!this.#foldWarned || lost > 0) {
      this.#foldWarned = true;
      this.#options.log.warn("the store has been failing too long: the oldest results are kept only as counts in their services' state", {
        pending: this.#pending.length,
        ...(lost > 0 ? { lostRuns: lost } : {}),
      });
    }
    this.#options.onDropped?.(count);
  }
}
