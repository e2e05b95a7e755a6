/**
 * The one store interface: what healthd asks of a database, in its own words. Two engines stand behind it
 * (SQLite, the embedded default, and PostgreSQL), built from the same Kysely queries; nothing outside
 * src/store/ knows which one it talks to, imports a driver or writes SQL.
 *
 * The database is the authority for every fact it stores. In particular a service's state (consecutive
 * failures, open incident) is decided inside the transaction that stores a result, from the state that
 * transaction read: memory may cache it, never own it.
 */
import type { Outcome } from "../checks/http.ts";
import type {
  Entry,
  NamedEntry,
  ScheduleChange,
  ScheduledService,
  ServerDocument,
  ServerSummary,
  ServerView,
  ServiceDocument,
  ServiceView,
  ShownStatus,
} from "../model.ts";
import type { IncidentState, Transition } from "../notify/incident.ts";
import type { NotificationBody } from "../notify/message.ts";
import type { Sketch } from "../rollup/sketch.ts";

export type Engine = "sqlite" | "postgres";

/** An hour is settled this long after it ends; results stored later than that move the rollup revision. */
export const settleMs = 2 * 60_000;

export interface Store {
  readonly engine: Engine;
  /** Where the data lives, fit to print: the file, or the URL without its password. */
  readonly location: string;

  // Servers, services and their checks.
  listServers(): Promise<ServerSummary[]>;
  getServer(serverId: string): Promise<ServerView | undefined>;
  getService(serverId: string, serviceId: string): Promise<ServiceView | undefined>;
  /** Find a service's key; `serverExists` says which 404 to give when it is not there. */
  findService(serverId: string, serviceId: string): Promise<{ key: number } | { key: undefined; serverExists: boolean }>;
  /** Make each server exactly its document (PUT), in one transaction; `prune` deletes the servers not named. */
  applyServers(servers: ReadonlyMap<string, ServerDocument>, options: ApplyOptions): Promise<ApplyResult>;
  /**
   * PUT of one service of an existing server, by the whole-server PUT's rules; undefined when the server does
   * not exist.
   */
  putService(serverId: string, service: ServiceDocument, now: number): Promise<{ outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange } | undefined>;
  deleteServer(serverId: string): Promise<ScheduleChange | undefined>;
  deleteService(serverId: string, serviceId: string, now: number): Promise<ScheduleChange | undefined>;
  /** The checks to run (not paused): all of them, or those `node` owns. */
  scheduledServices(node?: string): Promise<ScheduledService[]>;
  /** Every service's stored state, by key (for metrics, which cache it). */
  serviceStates(): Promise<Map<number, IncidentState>>;

  // Results.
  /**
   * Store finished checks in one transaction: each entry, its service's new state (decided here from the
   * stored state), the hourly rollups and the notifications the transitions call for. Answers one element
   * per run, in order: undefined for a run whose service is gone.
   */
  recordResults(runs: readonly CheckRun[]): Promise<(RecordedRun | undefined)[]>;
  /** A page of a service's entries, newest first. */
  readEntries(serviceKey: number, query: EntryQuery): Promise<{ entries: Entry[]; next: string | null }>;
  /** Entries stored after `afterId`, oldest first, of one server or service or of all. */
  entriesAfter(afterId: number, filter: EntryFilter, limit?: number): Promise<NamedEntry[]>;
  /** The id of the newest entry, or 0. */
  lastEntryId(): Promise<number>;
  /** A service's hourly rollups from `sinceHour` (Unix ms) on, added up. */
  rollupTotals(serviceKey: number, sinceHour: number): Promise<RollupTotals>;

  // What status pages and badges show.
  /** Every service (of one server, or all), by server and then creation order, with its state and last entry. */
  statusServices(serverId?: string): Promise<StatusService[]>;
  /**
   * Checks and failures per service and UTC day (or hour) from `since` (Unix ms) to before `until`, leaving
   * out those made while silenced (uptime does not count them).
   */
  uptimeCounts(since: number, until: number, per: "day" | "hour"): Promise<UptimeCount[]>;
  /**
   * A number that moves whenever results are added to an hour that ended more than two minutes ago (results
   * kept through an outage, or stored late by another node): memory that keeps past hours reads them again.
   */
  rollupRevision(): Promise<number>;

  // Silences and incidents.
  /** Add a silence; or say which of its server and service does not exist. */
  addSilence(silence: NewSilence, now: number): Promise<Silence | "no server" | "no service">;
  /** The silences not ended at `now`: active ones, then future ones, by start. */
  silences(now: number): Promise<Silence[]>;
  /** End one now; false when there is no such silence or it is over. */
  endSilence(id: number, now: number): Promise<boolean>;
  /** A page of incidents, newest first. */
  incidents(query: IncidentQuery, now: number): Promise<{ incidents: Incident[]; next: string | null }>;

  // Nodes: every `healthd serve` on the database, and who runs which check.
  /**
   * Register this node; answers the live node of the same name when that is another process (nothing is
   * written then), unless it is the instance `replacing` (a process known to be gone).
   */
  registerNode(node: NodeRecord, now: number, replacing?: string): Promise<NodeRecord | undefined>;
  /** Answers false when the node's row is no longer this process's. */
  heartbeat(name: string, instance: string, now: number): Promise<boolean>;
  /** A clean stop: the row and the node's ownerships go. */
  leaveNode(name: string, instance: string): Promise<void>;
  /** Every registered node seen in the last day, with how many checks each owns. */
  nodes(now: number): Promise<(NodeRecord & { readonly services: number })[]>;
  liveNodes(now: number): Promise<NodeRecord[]>;
  /**
   * Spread the checks over the nodes of their pools live at `liveAt` (now, or a moment before: see ClusterNode),
   * one rebalancing at a time; answers how many moved.
   */
  rebalance(liveAt: number): Promise<number>;

  // The notification outbox.
  /**
   * Claim what may be sent now for `instance` (a node process): per topic only the oldest pending
   * notification, so a topic stays in order, and none that a live node is publishing. The claim is committed
   * (in flight since `now`) before the answer; each comes back as it was before the claim, so that an
   * in-flight mark left by a process that died says the delivery is in doubt.
   */
  claimNotifications(instance: string, now: number): Promise<Notification[]>;
  /** When the next pending notification is due, if any. */
  nextNotificationAt(): Promise<number | undefined>;
  markDelivered(id: number, ntfyId: string, now: number): Promise<void>;
  markRetry(id: number, error: string, nextAt: number): Promise<void>;
  /** ntfy refused it (failed), or there is no topic to send it to (unsent). */
  markGivenUp(id: number, status: "failed" | "unsent", error: string): Promise<void>;
  notificationCounts(): Promise<Record<NotificationStatus, number>>;
  /**
   * Queue again the DOWN of each open incident kept unsent for want of a topic, now that there is one (its
   * service's notifyTopic, or the daemon's default when `defaultTopic`). Answers how many.
   */
  requeueUnsent(defaultTopic: boolean, now: number): Promise<number>;
  /** The ntfy topic of notifications whose service names none: the cluster's, as the last node given --ntfy-topic set it. */
  clusterTopic(): Promise<string | null>;
  /** Make `topic` the cluster's default topic; the other nodes are told (the "config" channel). */
  shareTopic(topic: string): Promise<void>;
  /** What became of the DOWN of an incident (pending, delivered, failed, unsent), if one was written. */
  downStatus(incidentId: number): Promise<NotificationStatus | undefined>;
  /** Every notification, oldest first (for `healthd copy` and tests). */
  notifications(afterId?: number, limit?: number): Promise<Notification[]>;

  // Bounded storage.
  /** Delete up to `batch` of the oldest entries checked before `cutoff`; answers how many went. */
  pruneEntries(cutoff: number, batch: number): Promise<number>;
  /** Delete the rollups before `cutoff` of up to `services` services after key `afterKey`. */
  pruneRollups(cutoff: number, afterKey: number, services: number): Promise<{ lastKey: number | undefined; deleted: number }>;

  // Living beside other processes.
  /**
   * Call `listener` when another process may have changed the configuration (servers, services, checks) or,
   * with `of: "entries"`, stored results. SQLite: a poll of data_version every `everyMs` (default 1000);
   * PostgreSQL: LISTEN/NOTIFY, reconnecting every `everyMs` while it is down. Answers a function that stops.
   */
  watch(listener: () => void, options?: WatchOptions): () => void;
  /** What is wrong with the database but does not stop the daemon (e.g. its file was deleted). */
  problems(): string[];
  close(): Promise<void>;
}

export interface WatchOptions {
  readonly of?: Channel;
  readonly everyMs?: number;
}

/** What a watcher follows: changes of configuration, stored results, or nodes and who runs which check. */
export type Channel = "config" | "entries" | "cluster";

/** A `healthd serve` process as the nodes table knows it. */
export interface NodeRecord {
  readonly name: string;
  /** This process, among the processes that have had the name. */
  readonly instance: string;
  /** Where the process runs, and its pid there. */
  readonly host: string;
  readonly pid: number;
  readonly location: string;
  readonly version: string;
  readonly startedAt: number;
  readonly lastSeenAt: number;
  /** Live while lastSeenAt + leaseMs is in the future. */
  readonly leaseMs: number;
}

export interface ApplyOptions {
  readonly now: number;
  /** Delete stored servers that `servers` does not name. Default false. */
  readonly prune?: boolean;
  /** Work out what would change and change nothing. Default false. */
  readonly dryRun?: boolean;
  /** The documents come from a file keyed by server id: error paths start with it. Default false. */
  readonly keyed?: boolean;
}

/** What applying documents changed, server by server, and what the scheduler must follow. */
export interface ApplyResult {
  readonly servers: readonly ServerChange[];
  readonly schedule: ScheduleChange;
}

export interface ServerChange {
  readonly serverId: string;
  readonly outcome: "created" | "updated" | "unchanged" | "deleted";
  readonly services: {
    readonly created: readonly string[];
    /** Services whose name or check changed, with the fields that did. */
    readonly updated: readonly { readonly id: string; readonly fields: readonly string[] }[];
    readonly deleted: readonly string[];
  };
}

/** A finished check handed to the store. */
export interface CheckRun {
  readonly serviceKey: number;
  readonly outcome: Outcome;
  /**
   * Set when this run stands for that many results alike (all passing or all failing, `outcome` the last)
   * that the daemon could not keep while the store was down: they count in the service's state and can open
   * or close its incident, but are not stored as entries.
   */
  readonly folded?: number;
  /** The location of the node that ran it. Default: the default location. */
  readonly location?: string;
}

export interface RecordedRun {
  /** The stored entry; null for a folded run. */
  readonly entry: Entry | null;
  readonly state: IncidentState;
  /** The DOWN or RECOVERED it queued, if any. */
  readonly notify: Transition | null;
  /** Every notification it queued, in order (reminders and CERT warnings included). */
  readonly notices: readonly NotificationKind[];
  /** The incident it opened or closed. */
  readonly incident: IncidentChange | null;
  /** A silence, a maintenance window or a pause covered it: it queued nothing. */
  readonly silenced: boolean;
  /** The services it depends on that had an open incident. */
  readonly blockedBy: readonly string[];
}

export interface IncidentChange {
  readonly id: number;
  readonly opened: boolean;
  readonly closed: boolean;
  /** When it opened, and when it closed (Unix ms). */
  readonly openedAt: number;
  readonly closedAt: number | null;
  /** The error of the result that opened it, or of the last failure before it closed. */
  readonly error: string | null;
  /** Checks failed while it was open (so far). */
  readonly failures: number;
}

export interface EntryQuery {
  readonly limit: number;
  /** Only entries older than this cursor (a previous page's `next`). */
  readonly before?: string | undefined;
  /** Only entries checked at or after this time (Unix ms). */
  readonly since?: number | undefined;
  /** Only entries checked before this time (Unix ms). */
  readonly until?: number | undefined;
  readonly ok?: boolean | undefined;
}

export interface NewSilence {
  readonly serverId: string;
  /** null: every service of the server. */
  readonly serviceId: string | null;
  readonly startsAt: number;
  readonly endsAt: number;
  readonly reason: string | null;
}

/** A silence as the API shows it. */
export interface Silence {
  readonly id: string;
  readonly server: string;
  readonly service: string | null;
  readonly startsAt: string;
  readonly endsAt: string;
  readonly reason: string | null;
  readonly createdAt: string;
}

export interface IncidentQuery {
  readonly limit: number;
  readonly before?: string | undefined;
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
  /** true: only open ones; false: only closed ones. */
  readonly open?: boolean | undefined;
}

/** An incident as the API shows it. */
export interface Incident {
  readonly id: string;
  readonly server: string;
  readonly service: string;
  readonly openedAt: string;
  readonly closedAt: string | null;
  /** Until it closed, or until now while it is open. */
  readonly durationMs: number;
  /** Checks that failed while it was open. */
  readonly failures: number;
  readonly firstError: string | null;
  /** Its DOWN was published. */
  readonly notified: boolean;
}

export interface EntryFilter {
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
}

export interface RollupTotals {
  readonly checks: number;
  readonly failures: number;
  /** Of checks and failures, those made while silenced. */
  readonly silencedChecks: number;
  readonly silencedFailures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
}

export interface StatusService {
  readonly key: number;
  readonly serverId: string;
  readonly serverName: string;
  readonly serviceId: string;
  readonly name: string;
  readonly url: string;
  readonly status: ShownStatus;
  /** With status blocked: the services it depends on that have an open incident. */
  readonly blockedBy?: readonly string[];
  readonly consecutiveFailures: number;
  /** Unix ms, or null before the first check. */
  readonly lastCheckedAt: number | null;
  /** The last entry's latency and error (null when it passed, or before the first check). */
  readonly latencyMs: number | null;
  readonly lastError: string | null;
  readonly incidentOpenSince: number | null;
}

export interface UptimeCount {
  readonly serviceKey: number;
  /** Start of the day or hour, Unix ms. */
  readonly at: number;
  readonly checks: number;
  readonly failures: number;
}

export type NotificationKind = "down" | "recovered" | "reminder" | "cert";

export type NotificationStatus = "pending" | "delivered" | "failed" | "unsent";

export interface Notification {
  readonly id: number;
  readonly createdAt: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly kind: NotificationKind;
  /** The service's notifyTopic; null means the cluster's default topic, resolved when it is sent. */
  readonly topic: string | null;
  readonly message: NotificationBody;
  readonly status: NotificationStatus;
  readonly attempts: number;
  readonly nextAttemptAt: number;
  readonly lastError: string | null;
  /** Set while a publish is under way; still set after a crash means the delivery is in doubt. */
  readonly inFlightSince: number | null;
  readonly deliveredAt: number | null;
  readonly ntfyId: string | null;
  /** The incident it speaks of (DOWN, RECOVERED and reminders). */
  readonly incidentId: number | null;
}

/** The store cannot take this now (database unreachable, read-only, disk full): try again later. */
export class StoreUnavailable extends Error {
  /**
   * The database itself turns everyone away (it is not running, shutting down or starting up), rather than
   * this process's link to it failing: no other node can use it either.
   */
  readonly down: boolean;

  constructor(
    message: string,
    /** A short code for logs and metrics: SQLITE_FULL, ECONNREFUSED, 57P01, ... */
    readonly code: string,
    options?: ErrorOptions & { readonly down?: boolean },
  ) {
    super(message, options);
    this.down = options?.down ?? false;
  }
}

/**
 * A write that would break the graph of dependsOn, refused whole: 400 for the document's own fault (an
 * unknown reference, a cycle: `errors` locates them), 409 when it would leave other services pointing at nothing.
 */
export class DependencyError extends Error {
  constructor(
    readonly status: 400 | 409,
    message: string,
    readonly errors: readonly { readonly path: string; readonly message: string }[],
  ) {
    super(message);
  }
}
