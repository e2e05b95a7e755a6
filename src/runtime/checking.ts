/**
 * The checks this node runs: the scheduler starts them, the check controller makes them, the recorder stores
 * their results (the store asks the policy what they mean). Heartbeats are told rather than checked: a ping
 * that names one (on any node) goes to the recorder as it is, and the node that owns a heartbeat keeps its
 * deadlines, at which the recorder is handed a look (the policy says whether a ping is missing). Data flows one
 * way; what happens along it is told on `events`, which the daemon's metrics, log and API listen to. It also
 * keeps what it last saw of each service, for /metrics: a cache, never an authority.
 */
import { EventEmitter } from "node:events";
import { icmpStart } from "../checks/icmp.ts";
import { probe } from "../checks/probe.ts";
import type { IncidentState } from "../domain/model.ts";
import type { Clock } from "../platform/clock.ts";
import type { ClusterNode } from "./cluster/node.ts";
import type { Logger } from "../platform/log.ts";
import { isActive, sameCheck, type Entry, type HeartbeatCheck, type Outcome, type ScheduleChange, type ScheduledService as AnyService } from "../domain/model.ts";
import { type Ping } from "../domain/batch.ts";
import { nextLook, timingOf } from "../policy/heartbeat.ts";
import { Recorder, type Recorded } from "./recorder.ts";
import { Deadlines, type Heartbeat } from "./scheduler/deadlines.ts";
import { periodOf } from "../domain/schedule.ts";
import { Scheduler, type ScheduledService } from "./scheduler/scheduler.ts";
import { Shortages } from "../platform/shortage.ts";
import type { SharedTick } from "../platform/tick.ts";
import type { ConfigurationStore, ResultStore } from "../store/store.ts";


/** What the daemon last saw of a service: its state (from the store) and its last check. */
export interface ServiceSeen {
  readonly state?: IncidentState;
  /** Unix ms. */
  readonly lastCheckedAt?: number;
  readonly latencyMs?: number;
  /** When its TLS certificate expires (Unix ms), for https services that answered. */
  readonly certExpiresAt?: number;
  /** A heartbeat's last ping this node took (Unix ms), and the duration of its last run that finished. */
  readonly lastPingAt?: number;
  readonly lastRunDurationMs?: number;
}

export interface CheckingEvents {
  /** A check started, `lagMs` after its planned time. */
  "check:started": [ScheduledService, number];
  /** A planned run was skipped: the service's previous run was still going. */
  "check:skipped": [ScheduledService];
  /** A check finished (it is handed to the recorder). */
  "check:finished": [ScheduledService, Outcome];
  /** A check could not be made for want of the daemon's own resources (EMFILE, ...). */
  "check:shortage": [string];
  /** A batch of results is committed to the store; `changed`: a service of it changed state, or an incident opened or closed. */
  recorded: [readonly Recorded[], boolean];
  /** A batch of `runs` results was stored in `ms` (its transaction, from the call to the commit). */
  "store:written": [number, number];
  /** A batch could not be stored; it waits for a retry. */
  "store:failed": [Error];
  /** Results that could not be kept as entries. */
  "results:dropped": [number];
}

export interface CheckingOptions {
  readonly clock: Clock;
  readonly log: Logger;
  /** At most this many checks run at once. */
  readonly maxInFlight?: number;
  /** The daemon's tick, ridden (Tick.ride): the scheduler's wake-ups share its ticks when it runs anyway. */
  readonly tick?: SharedTick;
  /** Where database checks read their `${NAME}` passwords, as channels do. Default process.env. */
  readonly env?: NodeJS.ProcessEnv;
}

export class Checking {
  readonly events = new EventEmitter<CheckingEvents>();
  /** What was last seen of each service this node runs (the state the store decided, the last check). */
  readonly facts = new Map<number, ServiceSeen>();
  readonly #store: ConfigurationStore;
  readonly #cluster: ClusterNode;
  readonly #options: CheckingOptions;
  /** Whether this node has asked if its ICMP checks can run: once, when it is first given one. */
  #icmpAsked = false;
  readonly #scheduler: Scheduler;
  readonly #deadlines: Deadlines;
  readonly #recorder: Recorder;
  readonly #shortages: Shortages;
  /** Every heartbeat, whoever owns it, by ping key: a ping may come to any node. */
  #heartbeats = new Map<string, Heartbeat>();
  /** Their ping keys by full name (server/service), for pings by name. */
  #pingKeys = new Map<string, string>();
  /** Their ping keys by the addresses other tools gave them: `push:{pushToken}`, `gatus:{gatusKey}`. */
  #aliases = new Map<string, string>();
  #reconciling = Promise.resolve();

  constructor(store: ConfigurationStore & ResultStore, cluster: ClusterNode, options: CheckingOptions, version: string) {
    this.#store = store;
    this.#cluster = cluster;
    this.#options = options;
    const { clock, log } = options;
    this.#shortages = new Shortages(log.child({ part: "scheduler" }), clock);
    this.#recorder = new Recorder(store, {
      log: log.child({ part: "recorder" }),
      clock,
      location: cluster.location,
      onWritten: (ms, runs) => this.events.emit("store:written", ms, runs),
      onWriteFailed: (error) => this.events.emit("store:failed", error),
      onDropped: (count) => this.events.emit("results:dropped", count),
      onRecorded: (batch) => {
        let changed = false;
        for (const { service, state, incident, wakeAt, entry } of batch) {
          const known = this.facts.get(service.key);
          if (incident || known?.state?.status !== state.status) changed = true;
          this.facts.set(service.key, { ...known, state, ...(entry && pingFacts(entry)) });
          if (wakeAt !== undefined) this.#deadlines.replan(service.key, wakeAt);
        }
        this.events.emit("recorded", batch, changed);
      },
    });
    // Every check says which healthd and which location asks (a site may answer one location differently).
    const userAgent = `healthd/${version} (location ${cluster.location})`;
    this.#scheduler = new Scheduler({
      log: log.child({ part: "scheduler" }),
      clock,
      maxInFlight: options.maxInFlight,
      tick: options.tick,
      run: async (service, signal) => {
        const outcome = await probe(service.check, { signal, userAgent, clock, env: options.env });
        if (signal.aborted) return; // stopping: an interrupted check says nothing about the service
        // Its check changed (or went) while it ran: the result is of a check no longer there, and the new one runs.
        if (!this.#scheduler.isCurrent(service)) return;
        if (!outcome.ok && outcome.shortage) {
          this.#shortages.seen(outcome.shortage, outcome.error);
          this.events.emit("check:shortage", outcome.shortage);
          return;
        }
        this.facts.set(service.key, {
          ...this.facts.get(service.key),
          lastCheckedAt: outcome.checkedAt,
          latencyMs: outcome.latencyMs,
          ...(outcome.certExpiresAt === undefined ? {} : { certExpiresAt: outcome.certExpiresAt }),
        });
        this.events.emit("check:finished", service, outcome);
        this.#recorder.push(service, outcome);
      },
      onStart: (service, lagMs) => this.events.emit("check:started", service, lagMs),
      onSkip: (service) => this.events.emit("check:skipped", service),
      onIdle: () => this.#recorder.caughtUp(),
      mayStart: (service) => cluster.mayRun(service.check.locations),
    });
    // A look at a heartbeat's deadline is a run too: held, as checks are, when another node may be looking.
    this.#deadlines = new Deadlines((service, at) => {
      if (!cluster.mayRun(null)) return this.#deadlines.plan(service, at + 1000);
      this.#recorder.pushRun(service, { kind: "deadline", serviceKey: service.key, at });
    }, clock);
  }

  /** The services scheduled on this node now: the checks it runs and the heartbeats it keeps the deadlines of. */
  services(): AnyService[] {
    return [...this.#scheduler.services(), ...this.#deadlines.services()];
  }

  get inFlight(): number {
    return this.#scheduler.inFlight;
  }

  /** Why results cannot be stored right now, or null when they can. */
  get writeError(): Error | null {
    return this.#recorder.writeError;
  }

  /** What /healthz says while checks cannot be made for want of the daemon's own resources. */
  shortage(): string | undefined {
    return this.#shortages.problem();
  }

  /**
   * A ping for the heartbeat of `pingKey`, taken at `at`: committed with the next batch, which starts at the end
   * of this turn. Resolves once it is stored (false when no heartbeat has that key); rejects when it cannot
   * be stored (RunGone: its heartbeat was deleted meanwhile), and is then not kept: its sender retries.
   */
  async ping(pingKey: string, ping: Ping, at: number): Promise<boolean> {
    const service = this.#heartbeats.get(pingKey);
    if (!service) return false;
    await this.#recorder.commitRun(service, { kind: "ping", serviceKey: service.key, at, ping, location: this.#cluster.location });
    return true;
  }

  /** The ping key of the heartbeat `serverId/serviceId`, if it is one. */
  pingKeyOf(serverId: string, serviceId: string): string | undefined {
    return this.#pingKeys.get(`${serverId}/${serviceId}`);
  }

  /** The ping key of the heartbeat with an Uptime Kuma push token or a Gatus key, if one has it. */
  pingKeyBy(kind: "push" | "gatus", value: string): string | undefined {
    return this.#aliases.get(`${kind}:${value}`);
  }

  /** The heartbeat a ping key names, if any. */
  heartbeat(pingKey: string): Heartbeat | undefined {
    return this.#heartbeats.get(pingKey);
  }

  /**
   * Schedule exactly the checks this node owns, read again (ownership or the configuration changed). A check
   * new to this node runs soon when it is overdue (never checked, or it missed a run: its node died); one
   * handed over by a live node keeps its phase, so it is not run twice in an interval; with `configChanged`,
   * a changed check runs within a second. Heartbeats are read again whoever owns them.
   */
  reconcile(configChanged: boolean): Promise<void> {
    return this.#serially("cannot read the checks this node runs; the schedule stays as it was", async () => {
      const owned = await this.#store.scheduledServices({ node: this.#cluster.name });
      const active = owned.filter((s): s is ScheduledService => isActive(s.check));
      const keep = new Set(owned.map((s) => s.key));
      for (const s of this.services()) if (!keep.has(s.key)) this.facts.delete(s.key);
      const now = this.#options.clock.now();
      const overdue = (s: ScheduledService) => s.lastCheckedAt == null || now - s.lastCheckedAt > 1.5 * periodOf(s.check, now);
      this.#scheduler.replaceAll(active, { soon: (s, known) => (known ? configChanged : overdue(s)) });
      this.#askIcmp(active);
      this.#deadlines.remove(this.#deadlines.services().map((s) => s.key).filter((key) => !keep.has(key)));
      this.#keepDeadlines(owned);
      // Read, then swap in one turn: a ping that comes meanwhile finds its heartbeat (it was answered 404 while
      // the maps stood empty during the read).
      const heartbeats = await this.#store.scheduledServices({ heartbeats: true });
      this.#heartbeats.clear();
      this.#pingKeys.clear();
      this.#aliases.clear();
      for (const s of heartbeats) this.#addHeartbeat(s);
    });
  }

  /**
   * Follow a change of configuration reading only what it changed: the services it started (created or
   * changed) that this node owns run within a second; those it stopped, or that another node owns, leave this
   * node's schedule.
   */
  follow(change: ScheduleChange): Promise<void> {
    return this.#serially("cannot read the changed checks; the schedule stays as it was", async () => {
      const owned = await this.#store.scheduledServices({ node: this.#cluster.name, keys: change.started });
      const gone = [...change.stopped, ...change.started.filter((key) => !owned.some((s) => s.key === key))];
      this.#scheduler.remove(gone);
      this.#deadlines.remove(gone);
      for (const key of gone) this.facts.delete(key);
      const active = owned.filter((s): s is ScheduledService => isActive(s.check));
      this.#scheduler.upsert(active, { soon: true });
      this.#askIcmp(active);
      this.#keepDeadlines(owned);
      const changed = new Set([...change.started, ...change.stopped]);
      const started = await this.#store.scheduledServices({ heartbeats: true, keys: change.started }); // read before the swap, as above
      for (const [pingKey, s] of this.#heartbeats) {
        if (!changed.has(s.key)) continue;
        this.#heartbeats.delete(pingKey);
        this.#pingKeys.delete(`${s.serverId}/${s.serviceId}`);
        for (const alias of aliasesOf(s)) if (this.#aliases.get(alias) === pingKey) this.#aliases.delete(alias);
      }
      for (const s of started) this.#addHeartbeat(s);
    });
  }

  /** Run the check of `key` within a second, if this node runs it (false: it does not; see Scheduler.runSoon). */
  runSoon(key: number): boolean {
    return this.#scheduler.runSoon(key);
  }

  /** Say in the log, at start or when the first one comes, which way ICMP checks run and what to grant for the better one. */
  #askIcmp(services: readonly ScheduledService[]): void {
    if (this.#icmpAsked || !services.some((s) => s.check.type === "icmp")) return;
    this.#icmpAsked = true;
    icmpStart().then(
      (line) => this.#options.log[line.level](line.message, line.fields),
      (error: unknown) => this.#options.log.warn("could not tell how icmp checks will run; each says so when it runs", { error: String(error) }),
    );
  }

  #addHeartbeat(s: AnyService): void {
    this.#heartbeats.set(pingKeyOf(s), s as Heartbeat);
    this.#pingKeys.set(`${s.serverId}/${s.serviceId}`, pingKeyOf(s));
    for (const alias of aliasesOf(s)) this.#aliases.set(alias, pingKeyOf(s));
  }

  /** Keep the deadlines of the heartbeats among `owned`: a new or changed one is looked at at once. */
  #keepDeadlines(owned: readonly AnyService[]): void {
    for (const s of owned) {
      if (isActive(s.check)) continue;
      const kept = this.#deadlines.get(s.key);
      if (kept && sameCheck(kept.check, s.check)) continue;
      this.#deadlines.plan(s as Heartbeat, kept ? null : nextLook(timingOf(s.check as HeartbeatCheck, s.since!), s.beat!));
    }
  }

  #serially(failure: string, work: () => Promise<void>): Promise<void> {
    return (this.#reconciling = this.#reconciling.then(work).catch((error: unknown) => this.#options.log.error(failure, { error })));
  }

  /** Stop starting checks, let those in flight finish, and store every result that can be. */
  async stop(): Promise<void> {
    await this.#reconciling;
    this.#deadlines.stop();
    await this.#scheduler.stop();
    await this.#recorder.flushAll();
  }
}

/** What a heartbeat's entry tells /metrics: a finish's time (as lastPingAt: a start or a log is none), a finished run's duration. */
function pingFacts(entry: Entry): Partial<ServiceSeen> | undefined {
  if (entry.kind === null || entry.kind === "missed" || entry.kind === "too-long" || entry.kind === "start" || entry.kind === "log") return undefined;
  return { lastPingAt: entry.checkedAt, ...(entry.durationMs === null ? {} : { lastRunDurationMs: entry.durationMs }) };
}

const pingKeyOf = (s: AnyService) => (s.check.type === "heartbeat" ? s.check.pingKey! : "");

/** The keys of #aliases a heartbeat has. */
function aliasesOf(s: AnyService): string[] {
  if (s.check.type !== "heartbeat") return [];
  const { pushToken, gatusKey } = s.check;
  return [...(typeof pushToken === "string" ? [`push:${pushToken}`] : []), ...(gatusKey ? [`gatus:${gatusKey}`] : [])];
}
