/**
 * The write path's data: what a transaction reads about a batch of results (BatchFacts) and what the policy
 * decides from it (BatchDecision), which the same transaction writes. The store reads and writes; src/policy/
 * decides.
 */
import type { CheckType, DependencyProblem, EntryFields, ErrorKind, GraphNode, HeartbeatProgress, IncidentState, MaintenanceWindow, NotificationBody, NotificationKind, Outcome, Pool, Rollup } from "./model.ts";
import type { EventFields, Routes } from "./notification.ts";

/**
 * What the store is handed to decide about: a finished check, a heartbeat's ping, or a heartbeat's deadline
 * come (healthd looks whether a ping is missing or a run takes too long).
 */
export type CheckRun = ResultRun | PingRun | DeadlineRun;

/** When a run happened: a check's start, a ping's arrival, a deadline's look. */
export const runAt = (run: CheckRun): number => (run.kind === undefined ? run.outcome.checkedAt : run.at);

export interface PingRun {
  readonly kind: "ping";
  readonly serviceKey: number;
  readonly at: number;
  readonly ping: Ping;
  /** The location of the node that took it. */
  readonly location?: string;
}

export interface DeadlineRun {
  readonly kind: "deadline";
  readonly serviceKey: number;
  readonly at: number;
}

/** A ping a job sent: `/ping/{key}[/start|/fail|/log|/{exitCode}]`. */
export interface Ping {
  readonly signal: "start" | "success" | "fail" | "exit" | "log";
  /** With exit: the job's exit code, 0 to 255. */
  readonly exitCode: number | null;
  /** What it sent (POST), its first 10,000 bytes. */
  readonly body: string | null;
  /** Pairs a start with its finish when runs overlap (?rid=); without it a finish pairs with the latest start. */
  readonly runId: string | null;
  /** What the sender measured, in ms (Uptime Kuma's `ping`, Gatus's `duration`): the entry's latency. */
  readonly latencyMs?: number | null;
  /** How it came (kept with its entry; absent from pings not made over HTTP): GET, POST, HEAD... */
  readonly method?: string;
  /** Its User-Agent, its first 200 characters ("" when none). */
  readonly userAgent?: string;
  /** The sender's address (X-Forwarded-For's first, behind a trusted proxy). */
  readonly remoteAddr?: string | null;
  /** http or https (X-Forwarded-Proto behind a trusted proxy). */
  readonly scheme?: string;
}

export interface ResultRun {
  readonly kind?: undefined;
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

/** A location's latest result of a check that runs in several. */
export interface LocationResult {
  readonly location: string;
  readonly checkedAt: number;
  readonly ok: boolean;
  readonly errorKind: ErrorKind | null;
  readonly error: string | null;
}

/** A silence, as a span of time over a server or one of its services. */
export interface SilenceSpan {
  readonly serverId: string;
  /** null: the whole server. */
  readonly serviceId: string | null;
  readonly startsAt: number;
  readonly endsAt: number;
}

/** What a service's dependents need to know of it. */
export interface Upstream {
  /** Its own dependencies, as full names ("serverId/serviceId"). */
  readonly dependsOn: readonly string[];
  readonly incidentOpen: boolean;
  /** Its last check failed. */
  readonly failing: boolean;
}

/** A service as the write path reads it: who it is, and the settings that decide about its results. */
export interface ServiceRecord {
  readonly key: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly serverName: string;
  readonly serviceName: string;
  readonly type: CheckType;
  /** Where its notifications go: its check's channels, else its server's; null: the default (policy/route.ts). */
  readonly channels: readonly string[] | null;
  /** What is checked, as a notification names it: an http check's URL (empty for a heartbeat). */
  readonly url: string;
  readonly notify: boolean;
  readonly notifyThreshold: number;
  readonly notifyTopic: string | null;
  readonly paused: boolean;
  readonly recoverThreshold: number;
  readonly remindEveryMinutes: number | null;
  readonly certWarnDays: number | null;
  /** A pass slower than this is slow (null: never), and whether slow passes notify. */
  readonly slowMs: number | null;
  readonly notifySlow: boolean;
  /** Warn when the registration of `domain` (its host's registered domain) expires in fewer days than this. */
  readonly domainWarnDays: number | null;
  readonly domain: string | null;
  /** Its dependencies, as full names. */
  readonly dependsOn: readonly string[];
  /** Its server's maintenance windows. */
  readonly maintenance: readonly MaintenanceWindow[];
  /** An active check's locations, quorum and schedule (null for a heartbeat). */
  readonly locations: readonly string[] | null;
  readonly quorum: number | null;
  readonly intervalSeconds: number | null;
  readonly cron: string | null;
  /** A heartbeat's expectations, with when the service was created or last changed (its first due time counts from it). */
  readonly heartbeat: HeartbeatTiming | null;
}

export interface HeartbeatTiming {
  readonly periodSeconds: number | null;
  readonly cron: string | null;
  readonly timezone: string | null;
  readonly graceSeconds: number;
  readonly maxRunSeconds: number | null;
  readonly minRunSeconds: number | null;
  /** When its first due time counts from: the service's creation or its last change. */
  readonly since: number;
}

/**
 * Where a service's results have brought it, as its state row keeps it. An incident id below zero is one the
 * batch opens: the store gives it its id when it writes it.
 */
export interface ServiceProgress extends HeartbeatProgress {
  readonly state: IncidentState;
  readonly lastCheckedAt: number | null;
  readonly incidentId: number | null;
  /** Checks failed while the open incident lasts. */
  readonly incidentFailures: number;
  /** The open incident's first error. */
  readonly incidentError: string | null;
  /** The open incident's first failed check, as stored with it (decided when it opened). */
  readonly incidentStartedAt: number | null;
  /** When the open incident was acknowledged (null: not yet, or none open). */
  readonly incidentAckedAt?: number | null;
  /** The channels the open incident's escalation steps went to: its RECOVERED goes there too. */
  readonly incidentEscalatedTo?: readonly string[] | undefined;
  /** The expiry of the certificate the last CERT warning was about. */
  readonly certWarnedExpiry: number | null;
  /** When the last verdict of a check with locations was made. */
  readonly lastVerdictAt: number | null;
  /** Slow passes in a row; and whether a SLOW notice went out for them (a back-to-normal one answers it). */
  readonly slowStreak: number;
  readonly slowSent: boolean;
  /** The registration expiry the last DOMAIN warning was about. */
  readonly domainWarnedExpiry: number | null;
}


export interface ServiceFacts {
  readonly record: ServiceRecord;
  readonly progress: ServiceProgress;
  /** With locations: each location's latest result. */
  readonly latest: ReadonlyMap<string, LocationResult>;
}

export interface BatchFacts {
  readonly runs: readonly CheckRun[];
  /** The batch's services, by key; a run whose service is not here was deleted while it ran. */
  readonly services: ReadonlyMap<number, ServiceFacts>;
  /** The silences of their servers that overlap the batch. */
  readonly silences: readonly SilenceSpan[];
  /** Every service upstream of the batch's services (their dependencies, and theirs), by full name. */
  readonly upstream: ReadonlyMap<string, Upstream>;
  /** The stored rollups of the hours the batch falls in, by `${serviceKey}:${hour}`. */
  readonly rollups: ReadonlyMap<string, Rollup>;
  /** When the registrations of the services' domains expire, where RDAP said (by domain). */
  readonly domains: ReadonlyMap<string, number>;
  /** The stored channels' events and the default channels. */
  readonly routes: Routes;
}

/** The incident a run opened or closed (its id below zero when this batch opens it). */
export interface IncidentChange {
  readonly id: number;
  readonly opened: boolean;
  readonly closed: boolean;
  /** Its first failed check: its outage (policy/outage.ts) counts from here, as its RECOVERED's "down for" does. */
  readonly startedAt: number;
  /** When it opened (the check past notifyThreshold), and when it closed (the first pass that closed it), Unix ms. */
  readonly openedAt: number;
  readonly closedAt: number | null;
  /** The error of the result that opened it, or of the last failure before it closed. */
  readonly error: string | null;
  /** Checks failed while it was open (so far). */
  readonly failures: number;
}

export interface RunDecision {
  /** The entry to store (none for a folded run, or a deadline that found nothing missing). */
  readonly entry: EntryFields | null;
  readonly state: IncidentState;
  /** Every notification it queued, in order. */
  readonly notices: readonly NotificationKind[];
  readonly incident: IncidentChange | null;
  /** A silence, a maintenance window or a pause covered it: it queued nothing. */
  readonly silenced: boolean;
  /** The services it depends on that had an open incident. */
  readonly blockedBy: readonly string[];
  /** A heartbeat's: when healthd should look at it again (its next deadline), as the service is left. */
  readonly wakeAt?: number | null;
}

export type IncidentWrite =
  | {
      readonly kind: "open";
      /** Below zero: what the batch's other writes call it until it has its id. */
      readonly id: number;
      readonly serviceKey: number;
      readonly serverId: string;
      readonly serviceId: string;
      /** Its first failed check, decided here once (decide.ts) and stored with it. */
      readonly startedAt: number;
      readonly openedAt: number;
      readonly firstError: string | null;
      readonly notified: boolean;
    }
  | { readonly kind: "notified"; readonly id: number }
  | { readonly kind: "close"; readonly id: number; readonly closedAt: number; readonly failures: number };

export interface NotificationWrite {
  readonly at: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly kind: NotificationKind;
  readonly topic: string | null;
  readonly body: NotificationBody;
  readonly incidentId: number | null;
  /** What templates may say of it (its id is given when it is written). */
  readonly event: EventFields;
  /** Where it goes: one delivery per channel. */
  readonly channels: readonly string[];
}

export interface BatchDecision {
  /** One per run, in order: undefined for a run whose service is gone. */
  readonly runs: readonly (RunDecision | undefined)[];
  /** The services the batch changed, as it leaves them. */
  readonly services: ReadonlyMap<number, ServiceProgress>;
  /** Each listed location's latest result, by `${serviceKey}:${location}`. */
  readonly locationResults: ReadonlyMap<string, LocationResult & { readonly serviceKey: number }>;
  /** In the order they are written. */
  readonly incidents: readonly IncidentWrite[];
  readonly notifications: readonly NotificationWrite[];
  /** The rollups to store, whole. */
  readonly rollups: readonly { readonly serviceKey: number; readonly hour: number; readonly rollup: Rollup }[];
  /** Results were added to an hour that had settled: whoever keeps past hours in memory must read them again. */
  readonly settledHourChanged: boolean;
}

/**
 * The decisions healthd makes from what the database holds, handed to the store when it is opened (src/policy/):
 * the store reads the facts in a transaction, asks, and writes the answer in the same transaction.
 */
export interface Policy {
  /** What a batch of results means: see BatchFacts and BatchDecision. */
  decide(facts: BatchFacts, now: number): BatchDecision;
  /**
   * The problems of the graph of dependsOn after a write: `exists` says whether a service exists, `written`
   * whether the write named it (its unknown references are its own fault; others left dangling are not).
   */
  dependencyProblems(nodes: readonly GraphNode[], exists: (service: string) => boolean, written: (service: string) => boolean): DependencyProblem[];
  /** Who runs which check of a pool: every service gets a live node, moving as few as possible. */
  assign(pool: Pool): Map<number, string>;
  /** Where new (or changed) services of a pool go among its live nodes, moving no other. */
  place(pool: { readonly services: readonly number[]; readonly nodes: readonly string[] }): Map<number, string>;
}
