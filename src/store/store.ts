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
  /** The checks to schedule: all of them, or those of some services. */
  scheduledServices(keys?: readonly number[]): Promise<ScheduledService[]>;
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
  /** Checks and failures per service and UTC day (or hour) from `since` (Unix ms) to before `until`. */
  uptimeCounts(since: number, until: number, per: "day" | "hour"): Promise<UptimeCount[]>;
  /**
   * A number that moves whenever results are added to an hour that ended more than two minutes ago (results
   * kept through an outage, or stored late by another node): memory that keeps past hours reads them again.
   */
  rollupRevision(): Promise<number>;

  // The notification outbox.
  /** What may be sent now: per topic only the oldest pending notification, so a topic stays in order. */
  dueNotifications(now: number): Promise<Notification[]>;
  /** When the next pending notification is due, if any. */
  nextNotificationAt(): Promise<number | undefined>;
  /** A publish is starting: committed first, so that a crash before its answer is known leaves a trace. */
  markInFlight(id: number, now: number): Promise<void>;
  markDelivered(id: number, ntfyId: string, now: number): Promise<void>;
  markRetry(id: number, error: string, nextAt: number): Promise<void>;
  /** ntfy refused it (failed), or there is no topic to send it to (unsent). */
  markGivenUp(id: number, status: "failed" | "unsent", error: string): Promise<void>;
  notificationCounts(): Promise<Record<NotificationStatus, number>>;
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

/** What a watcher follows: changes of configuration, or stored results. */
export type Channel = "config" | "entries";

export interface ApplyOptions {
  readonly now: number;
  /** Delete stored servers that `servers` does not name. Default false. */
  readonly prune?: boolean;
  /** Work out what would change and change nothing. Default false. */
  readonly dryRun?: boolean;
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
}

export interface RecordedRun {
  /** The stored entry; null for a folded run. */
  readonly entry: Entry | null;
  readonly state: IncidentState;
  readonly notify: Transition | null;
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

export interface EntryFilter {
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
}

export interface RollupTotals {
  readonly checks: number;
  readonly failures: number;
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
  readonly status: "up" | "down" | "unknown";
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

export type NotificationStatus = "pending" | "delivered" | "failed" | "unsent";

export interface Notification {
  readonly id: number;
  readonly createdAt: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly kind: Transition;
  /** The service's notifyTopic; null means the daemon's default topic, resolved when it is sent. */
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
}

/** The store cannot take this now (database unreachable, read-only, disk full): try again later. */
export class StoreUnavailable extends Error {
  constructor(
    message: string,
    /** A short code for logs and metrics: SQLITE_FULL, ECONNREFUSED, 57P01, ... */
    readonly code: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
