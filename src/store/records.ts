/**
 * The records the store answers and the queries it takes: what a server, a service, an entry, an incident, a
 * silence, a notification, a node and a token look like coming out of the database (store.ts names the roles
 * that answer them). Domain values: times are Unix ms.
 */
import type { Entry, IncidentState, MaintenanceWindow, NotificationBody, NotificationKind, ScheduleChange, ServiceStatus, StoredCheck } from "../domain/model.ts";
import type { ChannelDocument } from "../domain/schema/channel.ts";
import type { NotificationEvent } from "../domain/notification.ts";
import type { Pulse } from "../platform/tick.ts";
import type { IncidentChange } from "../domain/batch.ts";

export interface WatchOptions {
  readonly of?: Channel;
  readonly pulse?: Pulse;
}

/** What a watcher follows: changes of configuration, stored results, or nodes and who runs which check. */
export type Channel = "config" | "entries" | "cluster";

export interface ServerRecord {
  readonly id: string;
  readonly name: string;
  readonly maintenance: readonly MaintenanceWindow[];
  /** Where its services' notifications go when their checks name no channels; null: the default. */
  readonly channels: readonly string[] | null;
  /** The first segment of its slug URLs, /ping/{pingKey}/{serviceId}. */
  readonly pingKey: string;
  /** Whether a slug URL's ?create=1 may make a heartbeat, and the check it makes (null: a daily one). */
  readonly autoProvision: boolean;
  readonly heartbeatDefaults: Readonly<Record<string, unknown>> | null;
  /** More of its services than this failing within one interval send one grouped DOWN (0: never). */
  readonly groupThreshold: number;
  /** Escalation steps of its services whose checks have none; absent: none. */
  readonly escalate?: readonly { readonly afterMinutes: number; readonly channels: readonly string[] }[];
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ServiceFilter {
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
  /** Only these services, by key (those a committed batch touched: the status page's memory reads them again). */
  readonly keys?: readonly number[] | undefined;
}

/** A service as stored: its check, its state (null before its first check) and its last entry. */
export interface StoredService {
  readonly key: number;
  readonly serverId: string;
  readonly serverName: string;
  readonly id: string;
  readonly name: string;
  /** Its labels, lowercase, as its document gave them ([] when none). */
  readonly tags: readonly string[];
  readonly check: StoredCheck;
  readonly state: {
    readonly status: ServiceStatus;
    readonly consecutiveFailures: number;
    /** When it was last checked (a heartbeat: its last entry); null when only a start or a log came so far. */
    readonly lastCheckedAt: number | null;
    readonly incidentOpenSince: number | null;
    /** The open incident's first failed check (its stored startedAt), or null. */
    readonly incidentStartedAt: number | null;
    /** A heartbeat's: its last ping, the start of its latest run going, its last run's duration, its last finish and missed period. */
    readonly lastPingAt: number | null;
    readonly lastStartAt: number | null;
    readonly lastDurationMs: number | null;
    readonly lastFinishAt: number | null;
    readonly missedDueAt: number | null;
    /** Slow passes in a row (its last check passed slower than slowMs when above 0). */
    readonly slowStreak: number;
  } | null;
  /** When the service was created or last changed (a heartbeat's first due time counts from it). */
  readonly changedAt: number;
  /** When the service was created: its life, which a status page's uptime covers while it is younger than the window. */
  readonly createdAt: number;
  readonly lastEntry: Entry | null;
}

/** An entry with the ids of its server and service, as `healthd tail` shows it. */
export interface NamedEntry extends Entry {
  readonly server: string;
  readonly service: string;
}

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
  /** Live while lastSeenAt + leaseMs is in the future (src/policy/lease.ts). */
  readonly leaseMs: number;
}

export interface ApplyOptions {
  readonly now: number;
  /** Delete stored servers that `servers` does not name. Default false. */
  readonly prune?: boolean;
  /** Work out what would change and change nothing. Default false. */
  readonly dryRun?: boolean;
  /** Channels to create or replace first (a servers file's `channels:`); with `prune`, the others are deleted. */
  readonly channels?: ReadonlyMap<string, ChannelDocument>;
}

/** What applying documents changed, server by server, and what the scheduler must follow. */
export interface ApplyResult {
  readonly servers: readonly ServerChange[];
  readonly channels: readonly ChannelChange[];
  readonly schedule: ScheduleChange;
}

export interface ChannelChange {
  readonly name: string;
  readonly outcome: "created" | "updated" | "unchanged" | "deleted";
}

/** A channel as stored: its document (secrets as written) and when it was made and last changed. */
export interface StoredChannel {
  readonly name: string;
  readonly doc: ChannelDocument;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Channels: PUT, GET and DELETE on /channels. */
export interface ChannelStore {
  /** Every stored channel, or the one named (not the built-in ntfy channel, which is the daemon's). */
  channels(name?: string): Promise<StoredChannel[]>;
  putChannel(name: string, doc: ChannelDocument, now: number): Promise<{ created: boolean; changed: boolean }>;
  /** Deletes a channel no check or server names; answers whether it existed, or who names it (then nothing is deleted). */
  deleteChannel(name: string): Promise<{ deleted: boolean; namedBy: string[] }>;
  /** The cluster's default channels (serve --channel); null: ntfy. */
  clusterChannels(): Promise<string[] | null>;
  /** Make `names` the cluster's default channels; the other nodes are told. */
  shareChannels(names: readonly string[] | null): Promise<void>;
}

export interface ServerChange {
  readonly serverId: string;
  readonly outcome: "created" | "updated" | "unchanged" | "deleted";
  /** What of the server itself changed: "name", "maintenance" (empty unless updated). */
  readonly fields: readonly string[];
  readonly services: {
    readonly created: readonly string[];
    /** Services whose name or check changed, with the fields that did. */
    readonly updated: readonly { readonly id: string; readonly fields: readonly string[] }[];
    readonly deleted: readonly string[];
  };
}

/** What the store made of a finished check, as the policy decided it. */
export interface RecordedRun {
  /** The stored entry; null for a folded run. */
  readonly entry: Entry | null;
  readonly state: IncidentState;
  /** Every notification it queued, in order. */
  readonly notices: readonly NotificationKind[];
  /** The incident it opened or closed. */
  readonly incident: IncidentChange | null;
  /** A silence, a maintenance window or a pause covered it: it queued nothing. */
  readonly silenced: boolean;
  /** The services it depends on that had an open incident. */
  readonly blockedBy: readonly string[];
  /** A heartbeat's: when healthd should look at it again (its next deadline). */
  readonly wakeAt?: number | null | undefined;
}

export interface EntryQuery {
  readonly limit: number;
  /** Only entries older than this one (the id a previous page's `next` gave). */
  readonly before?: number | undefined;
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

export interface Silence {
  readonly id: number;
  readonly serverId: string;
  readonly serviceId: string | null;
  readonly startsAt: number;
  readonly endsAt: number;
  readonly reason: string | null;
  readonly createdAt: number;
}

export interface IncidentQuery extends ServiceFilter {
  readonly limit: number;
  /** Only incidents older than this one (the id a previous page's `next` gave). */
  readonly before?: number | undefined;
  /** true: only open ones; false: only closed ones. */
  readonly open?: boolean | undefined;
  /** Only those open, or closed after this time (Unix ms). */
  readonly endedAfter?: number | undefined;
  /** Only those that started (their first failed check) before this time (Unix ms). */
  readonly startedBefore?: number | undefined;
}

export interface Incident {
  readonly id: number;
  readonly serverId: string;
  readonly serviceId: string;
  /** Its first failed check: its outage counts from here to closedAt (policy/outage.ts). */
  readonly startedAt: number;
  /** The check that crossed notifyThreshold and opened it (its DOWN is due then, or when a silence ends). */
  readonly openedAt: number;
  /** The first passing check that closed it. */
  readonly closedAt: number | null;
  /** Checks that failed while it was open (so far). */
  readonly failures: number;
  readonly firstError: string | null;
  /** Its DOWN was published. */
  readonly notified: boolean;
  /** Who acknowledged it (a token's name, "link" or "ntfy"), when, and with what note; null: nobody yet. */
  readonly acknowledged?: { readonly by: string; readonly at: number; readonly note: string | null } | null;
}

/** One notification of an incident to one channel, as the outbox holds it: what an operator's timeline shows. */
export interface IncidentDelivery {
  readonly incidentId: number;
  readonly kind: string;
  readonly channel: string;
  readonly status: "pending" | "delivered" | "failed" | "unsent";
  readonly createdAt: number;
  readonly deliveredAt: number | null;
  readonly attempts: number;
  readonly lastError: string | null;
}

/** What an acknowledgement came to. */
export type AckOutcome =
  | { readonly outcome: "acknowledged"; readonly incident: Incident }
  | { readonly outcome: "already acknowledged" | "closed"; readonly incident: Incident }
  | { readonly outcome: "unknown" };

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
  /** What the destination called the message (ntfy's id, a Matrix event id...). */
  readonly remoteId: string | null;
  /** The channel this delivery goes to. */
  readonly channel: string;
  /** What templates may say of it; null for notifications written before channels. */
  readonly event: NotificationEvent | null;
  /** The incident it speaks of (DOWN, RECOVERED and reminders). */
  readonly incidentId: number | null;
}
