/**
 * This process as a node of the cluster: it registers in the database, heartbeats, keeps the list of live
 * nodes, and rebalances who runs which check whenever that list changes (a node joins, leaves or dies). It
 * learns of other nodes' changes through the store's "cluster" channel (PostgreSQL NOTIFY) and of deaths by
 * arming a timer at the moment the next lease runs out. With SQLite there is one node, and all of it is cheap.
 *
 * The lease: the others take this node's checks over once its heartbeat is older than its lease. So this node
 * starts no run of a check another node could be running: once its lease may have passed, by its own
 * monotonic clock since the heartbeat it last saw confirmed (a paused process, a slow link, a database
 * outage), it holds the runs of checks that another node, live when it last reached the database, can run.
 * It keeps running the checks no other node can take over (it was alone, or the last of its location, or the
 * database itself turns everyone away, so that no node can take anything over): a monitor must not go blind
 * because its database does. When it reaches the database again it reads what it owns before it starts held
 * runs again, and for three leases it counts as live the nodes that were live when it last reached the
 * database: those cut off with it (the database was down for all) heartbeat again meanwhile, each after its own
 * connection backoff, and keep their checks.
 *
 * On a database one daemon serves alone (SQLite), no other node can take anything over: the lease guards
 * nothing there, and only says how long the node counts as live. It is three minutes at least, a heartbeat a
 * minute rather than every five seconds: each is a write transaction, 2 to 7 % of a check's CPU at 100
 * services at 20 s (docs/benchmarks.md).
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../../platform/clock.ts";
import { UsageError } from "../../platform/config.ts";
import type { Logger } from "../../platform/log.ts";
import { leaseEnd } from "../../policy/lease.ts";
import { StoreUnavailable } from "../../store/errors.ts";
import type { ClusterStore, NodeRecord, Store } from "../../store/store.ts";
import { Alarm, earlyWindowMs, type SharedTick } from "../../platform/tick.ts";

export interface ClusterOptions {
  readonly name: string;
  readonly location: string;
  readonly leaseMs: number;
  readonly version: string;
  readonly log: Logger;
  /** The wall clock, as written in heartbeats; the monotonic one for the lease (a paused process or a changed wall clock does not stop it). */
  readonly clock: Clock;
  /**
   * The daemon's tick, ridden (Tick.ride): a heartbeat comes with the last tick before it is due while the tick
   * runs, or with another timer's wake-up (the scheduler's) while it does not, rather than on a wake-up of its
   * own; a heartbeat does not make the tick run.
   */
  readonly tick?: SharedTick;
}

/** How long rebalanceSoon waits for more changes. */
const rebalanceDelayMs = 5000;
/** The shortest lease on a database served alone (see the top of this file). */
const aloneLeaseMs = 180_000;

export class ClusterNode {
  readonly instance = randomUUID();
  readonly #store: ClusterStore & Pick<Store, "watch">;
  readonly #options: ClusterOptions;
  /** The lease: the one asked for, or on a database served alone at least aloneLeaseMs. */
  readonly #leaseMs: number;
  readonly #now: () => number;
  readonly #monotonic: () => number;
  readonly #startedAt: number;
  #live: readonly NodeRecord[] = [];
  /** Whether another node of the live ones can run a check of the pool of every location, or of this one's. */
  #othersAnywhere = false;
  #othersHere = false;
  /** When (monotonic) the last heartbeat this node saw confirmed was sent: its lease runs from there. */
  #heldFrom: number;
  #lapsed = false;
  /** The last heartbeat failed because the database turns everyone away (StoreUnavailable.down). */
  #databaseDown = false;
  /** When (wall clock) the last heartbeat the database confirmed was sent. */
  #reachedAt: number;
  /** Back from a lapse: until then (monotonic), nodes live at #reachedAt as it was before the lapse count as live. */
  #presume: { readonly liveAt: number; readonly until: number } | undefined;
  /** The next tick of this node: a heartbeat, or a look at the live nodes when another's lease runs out. */
  readonly #alarm: Alarm;
  #stopWatching: (() => void) | undefined;
  /** A rebalance asked for by rebalanceSoon, waiting. */
  #soon: unknown;
  #ticking: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Told when which checks this node runs may have changed (see start). */
  #onOwnership: () => void | Promise<void> = () => {};

  constructor(store: ClusterStore & Pick<Store, "watch">, options: ClusterOptions) {
    this.#store = store;
    this.#options = options;
    this.#leaseMs = store.alone ? Math.max(options.leaseMs, aloneLeaseMs) : options.leaseMs;
    this.#now = () => options.clock.now();
    this.#monotonic = () => options.clock.monotonic();
    this.#startedAt = this.#now();
    this.#reachedAt = this.#startedAt;
    this.#heldFrom = this.#monotonic();
    this.#alarm = new Alarm(options.clock, () => this.#tick(), options.tick);
  }

  get name(): string {
    return this.#options.name;
  }

  get location(): string {
    return this.#options.location;
  }

  /** The live nodes as of the last heartbeat. */
  get live(): readonly NodeRecord[] {
    return this.#live;
  }

  /** Whether this node's lease holds: its last confirmed heartbeat was sent less than a lease ago. */
  get leaseHeld(): boolean {
    return this.#monotonic() - this.#heldFrom < this.#leaseMs;
  }

  /**
   * Whether this node may start a run of a check (with these `locations`) now: while its lease holds, or when
   * no other node can run it: none that was live when this one last reached the database could, or the
   * database turns everyone away (then no node can take anything over).
   */
  mayRun(locations: readonly string[] | null): boolean {
    return this.leaseHeld || this.#databaseDown || !(locations === null ? this.#othersAnywhere : this.#othersHere);
  }

  /** What /healthz should say of this node, when its lease has run out. */
  problem(): string | undefined {
    if (!this.#lapsed) return undefined;
    if (!this.#othersAnywhere) return "this node cannot heartbeat and its lease has run out; no other node can take its checks over, so it keeps running them all";
    if (this.#databaseDown) return "this node cannot heartbeat and its lease has run out; the database turns every node away, so none can take its checks over and it keeps running them all";
    return "this node cannot heartbeat and its lease has run out: it runs only the checks no other live node can take over";
  }

  /**
   * Register (refused when a live node has the name, unless that is a process of this host that is gone: a
   * restart after a crash), take a share of the checks, and start heartbeating. `onOwnership` is told whenever
   * which checks this node runs may have changed, and reads them again (its promise settles once it has).
   */
  async start(onOwnership: () => void | Promise<void>): Promise<void> {
    this.#onOwnership = onOwnership;
    const sentAt = this.#monotonic();
    let taken = await this.#register();
    if (taken && taken.host === hostname() && (taken.pid === process.pid || !running(taken.pid))) taken = await this.#register(taken.instance);
    if (taken) {
      const seen = Math.round((this.#now() - taken.lastSeenAt) / 1000);
      throw new UsageError(
        `another live node is named ${taken.name} (location ${taken.location}, seen ${seen} s ago); ` +
          "give this one another name with --node (HEALTHD_NODE), or stop the other first",
      );
    }
    this.#see(await this.#store.liveNodes(this.#now()));
    this.#heldFrom = sentAt;
    await this.rebalance();
    this.#stopWatching = this.#store.watch(() => this.#tick(true), { of: "cluster" });
    this.#arm();
  }

  /** The node that does the cluster's housekeeping (retention): the longest-running live one. */
  isHousekeeper(): boolean {
    const [first] = [...this.#live].sort((a, b) => a.startedAt - b.startedAt || (a.name < b.name ? -1 : 1));
    return first === undefined || first.name === this.#options.name;
  }

  /** Spread the checks over the live nodes again; tells onOwnership when anything moved. */
  async rebalance(): Promise<void> {
    const presumed = this.#presume && this.#monotonic() < this.#presume.until ? this.#presume.liveAt : undefined;
    const moved = await this.#store.rebalance(presumed ?? this.#now());
    if (moved > 0) {
      // Alone (SQLite, or the one live node), the checks "moved" from a previous run of this daemon or from a
      // node gone (whose leaving is said already) to this one: nothing was balanced, and an operator reading
      // "12 moved" looks for a second node that is not there.
      const level = this.#live.length > 1 ? "info" : "debug";
      this.#options.log[level](`rebalanced the checks: ${moved} moved`, { moved, nodes: this.#live.map((n) => n.name).join(",") });
      this.#onOwnership();
    }
  }

  /** A node joining or leaving is what an operator looks for first when checks move. */
  #sayWhoCameAndWent(before: readonly NodeRecord[], after: readonly NodeRecord[]): void {
    const had = new Set(before.map((n) => n.instance));
    const has = new Set(after.map((n) => n.instance));
    for (const n of after) if (!had.has(n.instance) && n.instance !== this.instance) this.#options.log.info(`node ${n.name} joined`, { node: n.name, location: n.location, host: n.host });
    for (const n of before) if (!has.has(n.instance) && n.instance !== this.instance) this.#options.log.info(`node ${n.name} left (stopped, or its lease ran out)`, { node: n.name, location: n.location });
  }

  /**
   * Rebalance a few seconds from now, once for a burst of changes. Deletions take services from some nodes
   * only, and a change of configuration places the services it starts without counting what each node runs
   * (Policy.place): the shares drift, and this makes them exact again, off the path of the request.
   */
  rebalanceSoon(): void {
    if (this.#stopped || this.#soon || !this.#othersAnywhere) return;
    this.#soon = this.#options.clock.setTimeout(() => {
      this.#soon = undefined;
      this.#ticking = this.#ticking
        .then(() => this.rebalance())
        .catch((error: unknown) => this.#options.log.error("cannot rebalance the checks after a change", { error }));
    }, rebalanceDelayMs);
  }

  /** Leave the cluster: the checks this node ran go to the others at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#alarm.clear();
    this.#options.clock.clearTimeout(this.#soon);
    this.#stopWatching?.();
    await this.#ticking;
    await this.#store.leaveNode(this.#options.name, this.instance).catch((error: unknown) => {
      this.#options.log.warn("could not leave the cluster cleanly; the others take over when this node's lease runs out", { error });
    });
  }

  #register(replacing?: string): Promise<NodeRecord | undefined> {
    const now = this.#now();
    const { name, location, version } = this.#options;
    const node = { name, instance: this.instance, host: hostname(), pid: process.pid, location, version, startedAt: this.#startedAt, lastSeenAt: now, leaseMs: this.#leaseMs };
    return this.#store.registerNode(node, now, replacing);
  }

  /**
   * Heartbeat, look at who is live, and rebalance when that changed. One at a time. `notified`: another node
   * announced a change (a node joined or left, checks moved), which may concern this node's checks.
   */
  #tick(notified = false): void {
    this.#ticking = this.#ticking.then(() => this.#beat(notified)).finally(() => this.#arm());
  }

  async #beat(notified: boolean): Promise<void> {
    if (this.#stopped) return;
    const now = this.#now();
    const sentAt = this.#monotonic();
    try {
      if (!(await this.#store.heartbeat(this.#options.name, this.instance, now))) {
        const taken = await this.#register();
        if (taken) throw new Error(`node ${taken.name} was taken over by another process while this one was away`);
      }
      const live = await this.#store.liveNodes(now);
      const changed = members(live) !== members(this.#live);
      if (changed) this.#sayWhoCameAndWent(this.#live, live);
      this.#see(live);
      if (!this.leaseHeld) {
        // The others may have taken this node's checks over meanwhile: read what it owns before it runs them.
        // Those cut off with it have not heartbeated yet: for three leases (time for them to get past their own
        // connection backoff), the nodes live when it last reached the database keep their checks (before, the
        // first node back took every check, then gave them back).
        this.#presume = { liveAt: this.#reachedAt, until: sentAt + 3 * this.#leaseMs };
        await this.rebalance();
        await this.#onOwnership();
      } else if (changed || (this.#presume && sentAt >= this.#presume.until)) {
        // A node that died while the database was away is taken over once the grace is over.
        if (this.#presume && sentAt >= this.#presume.until) this.#presume = undefined;
        await this.rebalance();
      }
      this.#heldFrom = sentAt;
      this.#reachedAt = now;
      this.#databaseDown = false;
      if (this.#lapsed) {
        this.#lapsed = false;
        this.#options.log.info("the database answers again; this node's lease holds again and it runs all its checks");
      }
      if (notified) void this.#onOwnership();
    } catch (error) {
      this.#databaseDown = error instanceof StoreUnavailable && error.down;
      if (!this.#lapsed && !this.leaseHeld) {
        this.#lapsed = true;
        this.#options.log.error(
          !this.#othersAnywhere
            ? "cannot heartbeat for longer than the lease; no other node can take over, so this node keeps running its checks"
            : this.#databaseDown
              ? "cannot heartbeat for longer than the lease; the database turns every node away, so none can take over and this node keeps running its checks"
              : "cannot heartbeat for longer than the lease: until it can, this node starts no check another live node can take over",
          { error },
        );
      }
    }
  }

  #see(live: readonly NodeRecord[]): void {
    this.#live = live;
    const others = live.filter((n) => n.instance !== this.instance);
    this.#othersAnywhere = others.length > 0;
    this.#othersHere = others.some((n) => n.location === this.#options.location);
  }

  /**
   * Next tick: a third of the lease from now (a heartbeat may come a tenth of that early, at most two seconds,
   * with a wake-up that comes anyway), or just after the next other node's lease runs out (not before: that
   * node is live until then).
   */
  #arm(): void {
    if (this.#stopped) return;
    const now = this.#now();
    const beat = now + this.#leaseMs / 3;
    let at = beat;
    for (const node of this.#live) {
      if (node.instance !== this.instance) at = Math.min(at, Math.max(now, leaseEnd(node) + 50));
    }
    this.#alarm.set(at, at === beat ? beat - earlyWindowMs(this.#leaseMs / 3) : at);
  }
}

/** Whether a process of this host is running (signal 0 only asks). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // it runs, as another user
  }
}

const members = (nodes: readonly NodeRecord[]) =>
  nodes
    .map((n) => `${n.name}@${n.instance}`)
    .sort()
    .join(",");
