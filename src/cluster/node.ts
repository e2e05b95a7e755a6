/**
 * This process as a node of the cluster: it registers in the database, heartbeats, keeps the list of live
 * nodes, and rebalances who runs which check whenever that list changes (a node joins, leaves or dies). It
 * learns of other nodes' changes through the store's "cluster" channel (PostgreSQL NOTIFY) and of deaths by
 * arming a timer at the moment the next lease runs out. With SQLite there is one node, and all of it is cheap.
 *
 * A node that cannot heartbeat for longer than its lease is fenced: it stops running checks, since the
 * others are taking them over; it joins again when the database answers.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { UsageError } from "../config.ts";
import type { Logger } from "../log.ts";
import type { NodeRecord, Store } from "../store/store.ts";

export interface ClusterOptions {
  readonly name: string;
  readonly location: string;
  readonly leaseMs: number;
  readonly version: string;
  readonly log: Logger;
  /** Which checks this node runs may have changed: read them again. */
  readonly onOwnership: () => void;
  /** The node could not heartbeat for longer than its lease: it must run no checks until it is back. */
  readonly onFenced: () => void;
  readonly now?: () => number;
}

export class ClusterNode {
  readonly instance = randomUUID();
  readonly #store: Store;
  readonly #options: ClusterOptions;
  readonly #now: () => number;
  readonly #startedAt: number;
  #live: readonly NodeRecord[] = [];
  #lastBeat: number;
  #fenced = false;
  #timer: NodeJS.Timeout | undefined;
  #stopWatching: (() => void) | undefined;
  #ticking: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(store: Store, options: ClusterOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#startedAt = this.#now();
    this.#lastBeat = this.#startedAt;
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

  /**
   * Register (refused when a live node has the name, unless that is a process of this host that is gone: a
   * restart after a crash), take a share of the checks, and start heartbeating.
   */
  async start(): Promise<void> {
    let taken = await this.#register();
    if (taken && taken.host === hostname() && (taken.pid === process.pid || !running(taken.pid))) taken = await this.#register(taken.instance);
    if (taken) {
      const seen = Math.round((this.#now() - taken.lastSeenAt) / 1000);
      throw new UsageError(
        `another live node is named ${taken.name} (location ${taken.location}, seen ${seen} s ago); ` +
          "give this one another name with --node (HEALTHD_NODE), or stop the other first",
      );
    }
    this.#live = await this.#store.liveNodes(this.#now());
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
    const moved = await this.#store.rebalance(this.#now());
    if (moved > 0) {
      this.#options.log.debug("checks rebalanced", { moved });
      this.#options.onOwnership();
    }
  }

  /** Leave the cluster: the checks this node ran go to the others at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#stopWatching?.();
    await this.#ticking;
    await this.#store.leaveNode(this.#options.name, this.instance).catch((error: unknown) => {
      this.#options.log.warn("could not leave the cluster cleanly; the others take over when this node's lease runs out", { error });
    });
  }

  #register(replacing?: string): Promise<NodeRecord | undefined> {
    const now = this.#now();
    const { name, location, leaseMs, version } = this.#options;
    const node = { name, instance: this.instance, host: hostname(), pid: process.pid, location, version, startedAt: this.#startedAt, lastSeenAt: now, leaseMs };
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
    try {
      if (!(await this.#store.heartbeat(this.#options.name, this.instance, now))) {
        const taken = await this.#register();
        if (taken) throw new Error(`node ${taken.name} was taken over by another process while this one was away`);
      }
      this.#lastBeat = now;
      const live = await this.#store.liveNodes(now);
      const changed = members(live) !== members(this.#live);
      this.#live = live;
      if (this.#fenced) {
        this.#fenced = false;
        this.#options.log.info("the database answers again; this node runs checks again");
        await this.rebalance();
        this.#options.onOwnership();
      } else if (changed) {
        await this.rebalance();
      }
      if (notified) this.#options.onOwnership();
    } catch (error) {
      if (!this.#fenced && now - this.#lastBeat > this.#options.leaseMs) {
        this.#fenced = true;
        this.#options.log.error("cannot heartbeat for longer than the lease; this node stops running checks until it can", { error });
        this.#options.onFenced();
      }
    }
  }

  /** Next tick: a third of the lease from now, or just after the next other node's lease runs out. */
  #arm(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    const now = this.#now();
    let at = now + this.#options.leaseMs / 3;
    for (const node of this.#live) {
      if (node.instance !== this.instance) at = Math.min(at, Math.max(now, node.lastSeenAt + node.leaseMs + 50));
    }
    this.#timer = setTimeout(() => this.#tick(), at - now);
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
