/**
 * Runs every service's check on its schedule. One timer waits for the earliest planned run in a heap;
 * when it fires, every due service starts, unless its previous run is still going (the tick is skipped and
 * counted, never queued behind it) or the global bound on checks in flight is reached (the run waits for a
 * free slot, and its lag shows it).
 *
 * A wake-up also starts the runs planned soon after, up to `batchSize` of them, a little early: at everyday
 * loads what a wake-up costs (the timer, the caches it finds cold, the write batch its checks' results share)
 * is a large part of what a check costs, and checks started together share their turns of the event loop and
 * one transaction.
 * A run starts at most a tenth of its interval early, and at most `batchWindowMs`, two seconds (cron runs,
 * which name a time, never early): two runs of a service are never closer than nine tenths of its interval,
 * nothing starts late for it, and at two-second resolution the spread over an interval is unchanged. At 100
 * services at 20 s, two seconds rather than one carry 12 checks a wake-up rather than 6, for 14 to 32 % less
 * CPU a check. At 1,000 services (50 checks a second) a wake-up of up to 100 rather than 32 takes all of its
 * window's, one wake-up and one transaction every two seconds: a quarter to a third less CPU a check
 * (docs/benchmarks.md). The bound matters to a busier daemon: at 10,000 services at 10 s a wake-up's one-second
 * window plans a thousand runs, and it pulls forward no more than 100 of them.
 *
 * Where a run may start early and the daemon's tick runs anyway (a client connected), the scheduler starts it
 * on the last tick before its planned time when that tick falls within the run's early window; otherwise on a
 * wake-up of its own at the planned time, which starts the window's runs after it too (an Alarm riding the
 * tick, tick.ts). It never keeps the tick going: at 100 services at 20 s that is a wake-up every two seconds,
 * not one every second.
 *
 * A check changed while its run is going runs within a second all the same: the run of the check it replaces is
 * superseded, left to end on its own (it still counts against the bound), and no longer current (isCurrent), so
 * its result is not kept; without this the changed check's first run was skipped as a tick "while the previous
 * run is going", and it was first checked half an interval later (2.5 minutes at 5).
 *
 * A service new to this scheduler (handed over from another node, say) runs no sooner than half an interval
 * after its last check, which another node may have started early, and never at a planned time within the
 * early window from now: the node it comes from, stopping, may have started that run early and been stopped
 * before storing it (an interrupted check is not stored).
 */
import type { Logger } from "../../platform/log.ts";
import { sameCheck, type ActiveCheck, type ScheduledService as AnyService } from "../../domain/model.ts";
import { systemClock, type Clock } from "../../platform/clock.ts";
import { Alarm, earlyWindowMs, type SharedTick } from "../../platform/tick.ts";
import { TimeHeap } from "./heap.ts";
import { firstRun, nextRun, periodOf, scheduleOf, type Schedule } from "../../domain/schedule.ts";

/** What the scheduler runs: checks healthd makes itself (a heartbeat is told, and has no schedule of its own). */
export type ScheduledService = AnyService<ActiveCheck>;

export interface SchedulerOptions {
  /** Run one check. The signal aborts when the scheduler stops. */
  readonly run: (service: ScheduledService, signal: AbortSignal) => Promise<void>;
  /** At most this many checks run at once. Default 256. */
  readonly maxInFlight?: number;
  readonly clock?: Clock;
  readonly log: Logger;
  /** Runs planned at most this long after a due one may start with it. Default 2000 ms; 0 starts each at its time. */
  readonly batchWindowMs?: number;
  /** At most this many runs start early on one wake-up. Default 100. */
  readonly batchSize?: number;
  /** Told when a run starts, with how late it is against its plan (ms; 0 when it starts early). */
  readonly onStart?: (service: ScheduledService, lagMs: number) => void;
  /** Told when a tick is skipped because the service's previous run is still going. */
  readonly onSkip?: (service: ScheduledService) => void;
  /** Told when the last run in flight has finished and none waits: a wake-up's checks are all done. */
  readonly onIdle?: () => void;
  /**
   * Asked as each run is due: false holds it (it is not started, and the next follows the plan). A node whose
   * lease may have passed holds the runs another node may be making.
   */
  readonly mayStart?: (service: ScheduledService) => boolean;
  /** The daemon's tick, ridden (Tick.ride): runs that may start early share its ticks (see the top of this file). */
  readonly tick?: SharedTick;
}

interface Job {
  readonly service: ScheduledService;
  readonly schedule: Schedule;
  /** How early a run may start to share a wake-up: a tenth of its interval, at most the window; cron never. */
  readonly earlyMs: number;
  /** The planned time of the job's next run; heap entries for other times are stale. */
  plannedAt: number | undefined;
  /** The planned run is a first run off the schedule's grid (a new or changed service, checked soon). */
  offGrid: boolean;
}

/** Whether a new or changed service is first checked soon, or at its next planned time. */
export type Soon = boolean | ((service: ScheduledService, known: boolean) => boolean);

export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #clock: Clock;
  readonly #maxInFlight: number;
  readonly #jobs = new Map<number, Job>();
  readonly #heap = new TimeHeap<Job>();
  readonly #running = new Map<number, Promise<void>>();
  /** Runs of checks since changed or removed, going until they end on their own: counted, never waited behind. */
  readonly #superseded = new Set<Promise<void>>();
  readonly #waiting: { job: Job; plannedAt: number }[] = [];
  readonly #waitingKeys = new Set<number>();
  readonly #stop = new AbortController();
  /** For the earliest planned run; a wake-up with nothing due (past an hour, or stale) arms it again. */
  readonly #alarm: Alarm;
  #skipped = 0;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#maxInFlight = options.maxInFlight ?? 256;
    this.#alarm = new Alarm(this.#clock, () => this.#fire(), options.tick);
  }

  /** Services scheduled now. */
  get size(): number {
    return this.#jobs.size;
  }

  get inFlight(): number {
    return this.#running.size + this.#superseded.size;
  }

  /** Whether `service` is scheduled as it is: false once its check changed or it was removed (a run's result then has nowhere to go). */
  isCurrent(service: ScheduledService): boolean {
    return this.#jobs.get(service.key)?.service === service;
  }

  get skipped(): number {
    return this.#skipped;
  }

  /** The services scheduled now, for metrics. */
  services(): ScheduledService[] {
    return Array.from(this.#jobs.values(), (job) => job.service);
  }

  /**
   * Schedule these services. A service whose check is unchanged (sameCheck) keeps its plan. A new or
   * changed one is first checked within a second, then on its schedule; with `soon: false` (the daemon
   * starting) it waits for its next planned time instead, so a restart is not a burst of every check at once.
   * `soon` may decide per service; `known` says whether it was scheduled already (its check changed).
   */
  upsert(services: readonly ScheduledService[], { soon = true }: { soon?: Soon } = {}): void {
    if (this.#stop.signal.aborted) return;
    const now = this.#clock.now();
    for (const service of services) {
      const old = this.#jobs.get(service.key);
      if (old && sameCheck(old.service.check, service.check)) continue;
      this.#supersede(service.key);
      const identity = `${service.serverId}/${service.serviceId}`;
      const schedule = scheduleOf(service.check, identity);
      const early = typeof soon === "function" ? soon(service, old !== undefined) : soon;
      const period = periodOf(service.check, now);
      // A cron pattern names a time of day; its runs share whole seconds anyway.
      const earlyMs = schedule.kind === "cron" ? 0 : earlyWindowMs(period, this.#options.batchWindowMs);
      const notBefore = Math.max(now + earlyMs, (service.lastCheckedAt ?? -Infinity) + period / 2);
      const plannedAt = early ? firstRun(identity, now) : nextRun(schedule, notBefore);
      const job: Job = { service, schedule, earlyMs, plannedAt, offGrid: early };
      this.#jobs.set(service.key, job);
      if (plannedAt !== undefined) this.#heap.push(plannedAt, job);
    }
    this.#arm();
  }

  /**
   * Run a scheduled service within a second (the console's "run now"), then on its schedule again. False when
   * this node does not schedule it (another node owns it, or it is paused or a heartbeat).
   */
  runSoon(key: number): boolean {
    const old = this.#jobs.get(key);
    if (!old || this.#stop.signal.aborted) return false;
    const now = this.#clock.now();
    const job: Job = { ...old, plannedAt: firstRun(`${old.service.serverId}/${old.service.serviceId}`, now), offGrid: true };
    this.#jobs.set(key, job);
    if (job.plannedAt !== undefined) this.#heap.push(job.plannedAt, job);
    this.#arm();
    return true;
  }

  /** Stop scheduling these services at once. A run already going finishes; its result has nowhere to go. */
  remove(keys: readonly number[]): void {
    for (const key of keys) {
      this.#jobs.delete(key);
      this.#supersede(key);
    }
  }

  /** The run going for `key`, or waiting for a slot, no longer holds up the next: its check changed or went. */
  #supersede(key: number): void {
    if (this.#waitingKeys.delete(key)) this.#waiting.splice(this.#waiting.findIndex((w) => w.job.service.key === key), 1);
    const run = this.#running.get(key);
    if (run === undefined) return;
    this.#running.delete(key);
    this.#superseded.add(run);
  }

  /** Make the schedule exactly `services`: what is absent is removed. */
  replaceAll(services: readonly ScheduledService[], options?: { soon?: Soon }): void {
    const keep = new Set(services.map((s) => s.key));
    this.remove([...this.#jobs.keys()].filter((key) => !keep.has(key)));
    this.upsert(services, options);
  }

  /** Stop the timer, abort the checks in flight and wait for them to settle. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#alarm.clear();
    this.#jobs.clear();
    this.#waiting.length = 0;
    this.#waitingKeys.clear();
    await Promise.allSettled([...this.#running.values(), ...this.#superseded]);
  }

  #current(job: Job): boolean {
    return this.#jobs.get(job.service.key) === job;
  }

  #arm(): void {
    if (this.#stop.signal.aborted) return;
    // Drop stale entries from the top so the timer waits for a real run.
    for (;;) {
      const top = this.#heap.peekTime();
      if (top === undefined) return;
      const job = this.#heap.pop()!;
      if (this.#current(job) && job.plannedAt === top) {
        this.#heap.push(top, job);
        break;
      }
    }
    const at = this.#heap.peekTime()!;
    if (at < this.#alarm.at) this.#alarm.set(at, at - this.#heap.peek()!.earlyMs);
  }

  #fire(): void {
    const now = this.#clock.now();
    let early = this.#options.batchSize ?? 100;
    for (;;) {
      const top = this.#heap.peekTime();
      if (top === undefined) break;
      if (top > now) {
        // Stale entries are dropped by #arm; a stale top here only ends the batch a little sooner.
        const job = this.#heap.peek()!;
        if (early === 0 || top - now >= job.earlyMs) break;
        early--;
      }
      const job = this.#heap.pop()!;
      if (!this.#current(job) || job.plannedAt !== top) continue;
      // Fixed rate: the next run follows the plan, not the end of this run; missed grid points are not made up.
      // After a first run off the grid, the grid's next point may be a moment away (and come while that run
      // is still going, to be skipped): a point less than half an interval after it is passed over.
      const after = job.offGrid ? top + periodOf(job.service.check, top) / 2 : Math.max(top, now);
      job.offGrid = false;
      job.plannedAt = nextRun(job.schedule, after);
      if (job.plannedAt !== undefined) this.#heap.push(job.plannedAt, job);
      this.#due(job, top);
    }
    this.#arm();
  }

  #due(job: Job, plannedAt: number): void {
    const { key } = job.service;
    if (this.#options.mayStart?.(job.service) === false) return;
    if (this.#running.has(key) || this.#waitingKeys.has(key)) {
      this.#skipped++;
      this.#options.onSkip?.(job.service);
      return;
    }
    if (this.inFlight < this.#maxInFlight) this.#start(job, plannedAt);
    else {
      this.#waiting.push({ job, plannedAt });
      this.#waitingKeys.add(key);
    }
  }

  #start(job: Job, plannedAt: number): void {
    const { service } = job;
    this.#options.onStart?.(service, Math.max(0, this.#clock.now() - plannedAt));
    const run = this.#options
      .run(service, this.#stop.signal)
      .catch((error: unknown) => this.#options.log.error("check run failed", { server: service.serverId, service: service.serviceId, error }))
      .finally(() => {
        if (this.#running.get(service.key) === run) this.#running.delete(service.key);
        this.#superseded.delete(run);
        this.#startWaiting();
        if (this.inFlight === 0) this.#options.onIdle?.();
      });
    this.#running.set(service.key, run);
  }

  #startWaiting(): void {
    while (this.inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const { job, plannedAt } = this.#waiting.shift()!;
      this.#waitingKeys.delete(job.service.key);
      if (!this.#current(job) || this.#running.has(job.service.key)) continue;
      if (this.#options.mayStart?.(job.service) !== false) this.#start(job, plannedAt);
    }
  }
}
