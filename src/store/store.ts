/**
 * The store: what healthd asks of a database, in its own words, by role. Two engines stand behind it (SQLite,
 * the embedded default, and PostgreSQL), built from the same Kysely queries; nothing outside src/store/ knows
 * which one it talks to, imports a driver or writes SQL.
 *
 * The store reads and writes; it decides nothing. Where a write depends on a decision (what a result means,
 * whether the graph of dependsOn stays whole, who runs which check), it reads the facts in its transaction,
 * asks the Policy it was opened with, and writes the answer in the same transaction: the database stays the
 * authority for every fact it stores, and several nodes agree. It answers domain values: times are Unix ms.
 */
import type { Entry, IncidentState, Rollup, ScheduleChange, ScheduledService, ServerDocument, ServiceDocument } from "../domain/model.ts";
import type { AnnouncementInput, AnnouncementPatch, Severity } from "../domain/schema/announcement.ts";
import type { PageSection, StatusPageDocument } from "../domain/schema/status-page.ts";
import type { CheckRun, LocationResult, Upstream } from "../domain/batch.ts";
import type { AckOutcome, IncidentDelivery, ApplyOptions, ApplyResult, ChannelStore, EntryQuery, Incident, IncidentQuery, NamedEntry, NewSilence, NodeRecord, Notification, NotificationStatus, RecordedRun, ServerRecord, ServiceFilter, Silence, StoredService, UptimeCount, WatchOptions } from "./records.ts";

export type * from "./records.ts";

export type Engine = "sqlite" | "postgres";

/** Servers, their services and their checks: what PUT, GET and DELETE on /services read and write. */
export interface ConfigurationStore {
  /** Every server (by id), or the one named. */
  servers(serverId?: string): Promise<ServerRecord[]>;
  /** The services of one server (or one of them), or of all, by server and then creation order. */
  services(filter?: ServiceFilter): Promise<StoredService[]>;
  /** Find a service's key; `serverExists` says which 404 to give when it is not there. */
  findService(serverId: string, serviceId: string): Promise<{ key: number } | { key: undefined; serverExists: boolean }>;
  /**
   * Make each server exactly its document (PUT), in one transaction; `prune` deletes the servers not named.
   * The services it creates or changes get their owners among the live nodes in the same transaction. Throws
   * DependenciesRefused when the graph of dependsOn would not stay whole (nothing is written).
   */
  applyServers(servers: ReadonlyMap<string, ServerDocument>, options: ApplyOptions): Promise<ApplyResult>;
  /**
   * PUT of one service of an existing server, by the whole-server PUT's rules; undefined when the server does
   * not exist.
   */
  putService(serverId: string, service: ServiceDocument, now: number): Promise<{ outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange } | undefined>;
  deleteServer(serverId: string): Promise<ScheduleChange | undefined>;
  deleteService(serverId: string, serviceId: string, now: number): Promise<ScheduleChange | undefined>;
  /**
   * The checks to run (not paused): all of them, those `node` owns, or those of `keys`. With `heartbeats`,
   * every heartbeat (of `keys`), whoever owns it and paused too: what a ping may name.
   */
  scheduledServices(filter?: { readonly node?: string; readonly keys?: readonly number[]; readonly heartbeats?: boolean }): Promise<ScheduledService[]>;
  /** The server whose slug URLs' ping key this is, if any. */
  serverByPingKey(pingKey: string): Promise<string | undefined>;
  /** Give a server a new ping key for its slug URLs (the old one stops working at once); undefined when there is no such server. */
  renewServerPingKey(serverId: string): Promise<string | undefined>;
  /** Give a heartbeat a new ping key (the old one stops working at once); undefined when it is not a heartbeat. */
  renewPingKey(serviceKey: number): Promise<string | undefined>;
  /** What the services named by `refs` (full names) and everything upstream of them say of themselves. */
  upstream(refs: readonly string[]): Promise<Map<string, Upstream>>;
}

/** Results: stored through the policy, read back a page at a time. */
export interface ResultStore {
  /**
   * Store finished checks in one transaction: the policy decides from what it reads (see BatchFacts), this
   * writes what it decided. Answers one element per run, in order: undefined for a run whose service is gone.
   */
  recordResults(runs: readonly CheckRun[], now: number): Promise<(RecordedRun | undefined)[]>;
  /** A page of a service's entries, newest first. */
  readEntries(serviceKey: number, query: EntryQuery): Promise<{ entries: Entry[]; next: number | null }>;
  /** Entries stored after `afterId`, oldest first, of one server or service or of all. */
  entriesAfter(afterId: number, filter: ServiceFilter, limit?: number): Promise<NamedEntry[]>;
  /** The id of the newest entry, or 0. */
  lastEntryId(): Promise<number>;
}

/** What the status page, badges, /stats and /metrics read. */
export interface ReadModelStore {
  /** Every service's stored state, by key. */
  serviceStates(): Promise<Map<number, IncidentState>>;
  /** The latest result of each location of these services, by service. */
  locationResults(keys: readonly number[]): Promise<Map<number, Map<string, LocationResult>>>;
  /** A service's hourly rollups from `sinceHour` (Unix ms) on. */
  rollups(serviceKey: number, sinceHour: number): Promise<Rollup[]>;
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
  /**
   * Rollups of `serviceKeys` summed per service and UTC day or hour, or over the whole span, from `since` to
   * before `until` (Unix ms), with their sketches merged: a service page's chart, the monthly reports.
   */
  rollupSums(query: { readonly since: number; readonly until: number; readonly per: "day" | "hour" | "span"; readonly serviceKeys: readonly number[] }): Promise<RollupSum[]>;
}

/** What people are told: announcements with their updates, and named status pages. */
export interface AnnouncementStore {
  announcements(query: AnnouncementQuery): Promise<Announcement[]>;
  /** Add one; or name the servers it names that do not exist (nothing is written then). */
  addAnnouncement(announcement: AnnouncementInput & { readonly startsAt: number }, now: number): Promise<Announcement | { readonly unknownServers: string[] }>;
  /** Add an update; undefined when there is no such announcement, "full" when it has as many as it may. */
  addAnnouncementUpdate(id: number, update: { readonly message: string; readonly severity?: Severity | undefined }, now: number): Promise<Announcement | "full" | undefined>;
  /** Change some of its fields; undefined when there is none of that id, or the servers it would name that do not exist. */
  patchAnnouncement(id: number, patch: AnnouncementPatch, now: number): Promise<Announcement | undefined | { readonly unknownServers: string[] }>;
  deleteAnnouncement(id: number): Promise<boolean>;
  /** Every named page, by slug; the one of `slug`; or the one whose hostnames include `host`. */
  statusPages(query?: { readonly slug?: string; readonly host?: string }): Promise<StatusPage[]>;
  /**
   * Create or replace a named page; or, writing nothing, what it names that does not exist ("server" or
   * "server/service", as named), or the hostnames another page has.
   */
  putStatusPage(
    slug: string,
    page: StatusPageDocument,
    now: number,
  ): Promise<{ readonly page: StatusPage; readonly created: boolean } | { readonly unknown: string[] } | { readonly takenHostnames: { hostname: string; slug: string }[] }>;
  deleteStatusPage(slug: string): Promise<boolean>;
  /** Set a page's logo (null: remove it); false when there is no such page. */
  putStatusPageLogo(slug: string, logo: { readonly type: string; readonly bytes: Buffer } | null, now: number): Promise<boolean>;
  statusPageLogo(slug: string): Promise<{ readonly type: string; readonly bytes: Buffer; readonly updatedAt: number } | undefined>;
}

export interface AnnouncementQuery {
  readonly now: number;
  readonly id?: number;
  /** true: those shown now; false: those ended or not begun. */
  readonly active?: boolean | undefined;
  /** Only those not ended, or ended after this time (Unix ms). */
  readonly endedAfter?: number;
  readonly limit: number;
}

export interface Announcement {
  readonly id: number;
  readonly title: string;
  /** Markdown. */
  readonly message: string;
  /** As the latest update that set one left it. */
  readonly severity: Severity;
  /** The servers it concerns; null: all. */
  readonly servers: readonly string[] | null;
  readonly startsAt: number;
  readonly endsAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Newest first. */
  readonly updates: readonly AnnouncementUpdate[];
}

export interface AnnouncementUpdate {
  readonly id: number;
  readonly message: string;
  /** The severity it set; null: it left it as it was. */
  readonly severity: Severity | null;
  readonly createdAt: number;
}

export interface StatusPage extends Omit<StatusPageDocument, "servers" | "sections"> {
  readonly slug: string;
  /** Every server it shows anything of, in the order it names them. */
  readonly servers: readonly string[];
  /** What it shows in sections; null: its servers whole. */
  readonly sections: readonly PageSection[] | null;
  /** Its logo's type and when it was last set; null: none. */
  readonly logo: { readonly type: string; readonly updatedAt: number } | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface RollupSum extends Rollup {
  readonly serviceKey: number;
  /** The day's or hour's start (Unix ms), or the span's. */
  readonly at: number;
}

/** Silences and incidents. */
export interface AlertingStore {
  /** Add a silence; or say which of its server and service does not exist. */
  addSilence(silence: NewSilence, now: number): Promise<Silence | "no server" | "no service">;
  /** The silences not ended at `now`: active ones, then future ones, by start. */
  silences(now: number): Promise<Silence[]>;
  /** The silences, ended or not, that overlap `from` to before `until`: what a report leaves out. */
  silencesBetween(from: number, until: number): Promise<Silence[]>;
  /** End one now; false when there is no such silence or it is over. */
  endSilence(id: number, now: number): Promise<boolean>;
  /** A page of incidents, newest first. */
  incidents(query: IncidentQuery): Promise<{ incidents: Incident[]; next: number | null }>;
}

/** Responding to incidents: acknowledging them, escalating those nobody acknowledges. */
export interface RespondingStore {
  incident(id: number): Promise<Incident | undefined>;
  /** The notifications of these incidents, one per channel, oldest first: each with its delivery's status. */
  incidentDeliveries(incidentIds: readonly number[]): Promise<IncidentDelivery[]>;
  /** The open incident of a service, if it has one. */
  openIncident(serverId: string, serviceId: string): Promise<Incident | undefined>;
  /**
   * Acknowledge an incident still open and unacknowledged, queueing its `ack` notification, in one transaction;
   * of two asked at once, one wins (the other hears "already acknowledged").
   */
  acknowledge(id: number, ack: { readonly by: string; readonly note: string | null; readonly at: number }): Promise<AckOutcome>;
  /** Send the escalation steps due at `now`, each once across the cluster; answers how many, and when the next is due. */
  escalate(now: number): Promise<{ sent: number; nextAt: number | undefined }>;
  /** The secret that signs acknowledgement links: the cluster's, made by the first node that asks. */
  ackSecret(): Promise<string>;
}

/** Scoped tokens of the API, found by the SHA-256 of their secret (see src/http/access.ts). */
export interface TokenStore {
  /** Store a new token; "name taken" when another has its name (nothing is written then). */
  createToken(token: NewToken, now: number): Promise<TokenRecord | "name taken">;
  /** Every token, oldest first. */
  tokens(): Promise<TokenRecord[]>;
  /** The token whose secret hashes to `hash`, if it exists (not revoked). */
  tokenByHash(hash: string): Promise<TokenRecord | undefined>;
  /** Whether any token exists: then the API needs one. */
  hasTokens(): Promise<boolean>;
  /** Delete it: it stops working at once on every node. False when there is none of that id. */
  revokeToken(id: number): Promise<boolean>;
  /** Start a browser session (hashes of its secret and of its token); expired ones are deleted on the way. */
  createSession(session: { readonly hash: string; readonly tokenHash: string; readonly expiresAt: number }, now: number): Promise<void>;
  /** The token hash of the session whose secret hashes to `hash`, if it has not expired. */
  sessionToken(hash: string, now: number): Promise<string | undefined>;
  endSession(hash: string): Promise<void>;
}

export type Scope = "read" | "write" | "ping" | "admin";

export interface NewToken {
  readonly name: string;
  readonly scope: Scope;
  /** The servers it may use; null: all of them. */
  readonly servers: readonly string[] | null;
  /** The SHA-256 of its secret, hex. */
  readonly hash: string;
}

export interface TokenRecord {
  readonly id: number;
  readonly name: string;
  readonly scope: Scope;
  readonly servers: readonly string[] | null;
  readonly createdAt: number;
}

/** Nodes: every `healthd serve` on the database, and who runs which check. */
export interface ClusterStore {
  /** One daemon serves the database at a time (SQLite): no other node is ever live beside the one serving it. */
  readonly alone: boolean;
  /**
   * Register this node; answers the live node of the same name when that is another process (nothing is
   * written then), unless it is the instance `replacing` (a process known to be gone). On a database served
   * alone, every other node's row is of a node that died, and goes with its checks.
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
   * Spread the checks over the nodes of their pools live at `liveAt` (now, or a moment before: see
   * ClusterNode), as the policy assigns them, one rebalancing at a time; answers how many moved.
   */
  rebalance(liveAt: number): Promise<number>;
}

/** The notification outbox. */
export interface OutboxStore {
  /**
   * Claim what may be sent now for `instance` (a node process): per channel and service only the oldest
   * pending delivery, so that each stays in order, none that a live node is publishing (nor those this process
   * is: `sending`), and per channel at most `room(channel)` (what this process can have in flight to it). The claim is committed
   * (in flight since `now`) before the answer; each comes back as it was before the claim, so that an
   * in-flight mark left by a process that died says the delivery is in doubt.
   */
  claimNotifications(instance: string, now: number, room: (channel: string) => number, sending: readonly number[]): Promise<Notification[]>;
  /** When the next pending notification is due, if any. */
  nextNotificationAt(): Promise<number | undefined>;
  /** Deliveries the destination took, with what it called them: one transaction for them all. */
  markDelivered(delivered: readonly { readonly id: number; readonly remoteId: string }[], now: number): Promise<void>;
  markRetry(id: number, error: string, nextAt: number): Promise<void>;
  /** Make the pending retries of a channel due now (it is back); answers how many. */
  retryNow(channel: string, now: number): Promise<number>;
  /** The destination refused it or it was retried for too long (failed), or it has nowhere to go (unsent). */
  markGivenUp(id: number, status: "failed" | "unsent", error: string): Promise<void>;
  notificationCounts(): Promise<Record<NotificationStatus, number>>;
  /**
   * Queue again the DOWN of each open incident kept unsent for want of a topic, now that there is one (its
   * service's notifyTopic, or the cluster's default when `defaultTopic`). Answers how many.
   */
  requeueUnsent(defaultTopic: boolean, now: number): Promise<number>;
  /** The ntfy topic of notifications whose service names none: the cluster's, as the last node given --ntfy-topic set it. */
  clusterTopic(): Promise<string | null>;
  /** Make `topic` the cluster's default topic; the other nodes are told (the "config" channel). */
  shareTopic(topic: string): Promise<void>;
  /** What became of the DOWN of an incident on a channel (pending, delivered, failed, unsent), if one was written. */
  downStatus(incidentId: number, channel: string): Promise<NotificationStatus | undefined>;
}

/** Bounded storage. */
export interface RetentionStore {
  /** Delete up to `batch` of the oldest entries checked before `cutoff`; answers how many went. */
  pruneEntries(cutoff: number, batch: number): Promise<number>;
  /** Delete the rollups before `cutoff` of up to `services` services after key `afterKey`. */
  pruneRollups(cutoff: number, afterKey: number, services: number): Promise<{ lastKey: number | undefined; deleted: number }>;
}

/** Domain registrations as RDAP told them (domains/watcher.ts looks them up, at most once a day each). */
export interface DomainStore {
  /**
   * The registered domains of the unpaused checks `node` owns that warn of their expiry, not looked up since
   * `since`; of the services `keys` only, when given.
   */
  domainsToLookUp(node: string, since: number, keys?: readonly number[]): Promise<string[]>;
  /** What a lookup found: the expiry, or the problem that kept it from being known. */
  saveRegistration(domain: string, found: { expiresAt: number | null; problem: string | null }, now: number): Promise<void>;
}

export interface Store
  extends ConfigurationStore, ChannelStore, ResultStore, ReadModelStore, AlertingStore, RespondingStore, AnnouncementStore, TokenStore, ClusterStore, OutboxStore, RetentionStore, DomainStore {
  readonly engine: Engine;
  /** Where the data lives, fit to print: the file, or the URL without its password. */
  readonly location: string;
  /**
   * Call `listener` when another process may have changed the configuration (servers, services, checks) or,
   * with `of: "entries"`, stored results; for a change of configuration with the services it started and
   * stopped, when that is known (else anything may have changed). SQLite: a look at data_version when the WAL
   * file is written, and at each `pulse` (default: a timer of its own, once a second) until such a write has
   * been seen or where one goes unseen (sqlite/change-watch.ts); PostgreSQL: LISTEN/NOTIFY, reconnecting after
   * a second while it is down. Answers a function that stops.
   */
  watch(listener: (change?: ScheduleChange) => void, options?: WatchOptions): () => void;
  /** What is wrong with the database but does not stop the daemon (e.g. its file was deleted). */
  problems(): string[];
  close(): Promise<void>;
}
