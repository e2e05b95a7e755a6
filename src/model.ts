/**
 * healthd's domain, in values.
 *
 * - server: a machine or site that owns services, addressed by `serverId`.
 * - service: one thing on a server that is checked over HTTP; its id is unique within its server.
 * - check: the HTTP check configuration of a service (request, schedule, expectations, notification settings).
 * - alternative: one branch of a disjunctive expectation; a check passes when any alternative holds.
 * - entry: a health-check data entry, the stored result of one run of a check.
 * - state: what healthd currently knows of a service (up/down, consecutive failures, open incident).
 *
 * The shapes of documents that come from outside (server documents, expectations) are defined once, as zod
 * schemas, in `schema.ts`; their TypeScript types are re-exported here so the core imports one module.
 */
import type { Check, MaintenanceWindow } from "./schema.ts";
export type { Alternative, Check, CheckInput, MaintenanceWindow, ServerDocument, ServiceDocument } from "./schema.ts";

/** Why a check failed. `null` on a passing check. */
export const errorKinds = [
  "dns",
  "connect",
  "tls",
  "timeout",
  "redirect",
  "size",
  "status",
  "body",
  "json",
  "header",
  "latency",
  "cert",
  "internal",
] as const;
export type ErrorKind = (typeof errorKinds)[number];

/** Where a node probes from when --location is not given. Entries of it store no location (most are). */
export const defaultLocation = "default";

/** The outcome of one run of a check, before it is stored. */
export type CheckResult =
  | {
      readonly ok: true;
      readonly status: number;
      readonly latencyMs: number;
      readonly matched: number;
      readonly errorKind: null;
      readonly error: null;
    }
  | {
      readonly ok: false;
      /** The HTTP status, or null when no response arrived (transport failure). */
      readonly status: number | null;
      readonly latencyMs: number;
      readonly matched: null;
      readonly errorKind: ErrorKind;
      readonly error: string;
      /**
       * Set (to EMFILE, ENFILE, ENOMEM, ENOBUFS) when the check could not be made for want of the daemon's own
       * resources: it says nothing about the target, so it is neither stored nor counted against the service.
       */
      readonly shortage?: string;
    };

/** A result as the check controller returns it: when it was made, and the certificate's expiry over TLS. */
export type Outcome = CheckResult & {
  readonly checkedAt: number;
  /** When the server's TLS certificate expires (Unix ms); absent over plain HTTP or without an answer. */
  readonly certExpiresAt?: number;
};

/** A stored check result. */
export interface Entry {
  /** Increases as entries are stored. */
  readonly id: number;
  readonly checkedAt: number;
  readonly ok: boolean;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly errorKind: ErrorKind | null;
  readonly error: string | null;
  readonly matched: number | null;
  /** The location of the node that ran it. */
  readonly location: string;
}

export type ServiceStatus = "up" | "down" | "unknown";

/** A check as stored: the data layer has filled the notification settings a document may leave out. */
export type StoredCheck = Check & { readonly notify: boolean; readonly notifyThreshold: number };

/**
 * Identifies a check's configuration: equal fingerprints mean an unchanged check (the scheduler keeps its
 * phase, a PUT reports it unchanged). The one definition of "did this check change".
 */
export function fingerprint(check: StoredCheck): string {
  return JSON.stringify(check);
}

/** A service whose check the scheduler runs. `key` is the store's handle for it. */
export interface ScheduledService {
  readonly key: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly check: StoredCheck;
  readonly fingerprint: string;
  /** When it was last checked (by any node), as the store knew when this was read; not part of the fingerprint. */
  readonly lastCheckedAt?: number | null;
}

/** What a write changed, for the scheduler: services to (re)start and services to stop. */
export interface ScheduleChange {
  readonly started: readonly number[];
  readonly stopped: readonly number[];
}

/** What the incident machine (policy/incident.ts) keeps of a service between results. */
export interface IncidentState {
  readonly status: ServiceStatus;
  readonly consecutiveFailures: number;
  /** Passes in a row since the last failure (they close an open incident at recoverThreshold). */
  readonly consecutivePasses: number;
  /** When the current run of failures began (Unix ms), or null while passing. */
  readonly failingSince: number | null;
  /** When the open incident began (Unix ms), or null. */
  readonly incidentOpenSince: number | null;
  /** The open incident's DOWN was published (false while it waits for a silence to end). */
  readonly downSent: boolean;
  /** When the open incident was last told of (its DOWN, then each reminder): the next reminder counts from it. */
  readonly lastRemindedAt: number | null;
}

export const initialState: IncidentState = {
  status: "unknown",
  consecutiveFailures: 0,
  consecutivePasses: 0,
  failingSince: null,
  incidentOpenSince: null,
  downSent: true,
  lastRemindedAt: null,
};

export type NotificationKind = "down" | "recovered" | "reminder" | "cert";

/** What a notification says, in ntfy's JSON publishing form without its topic (https://docs.ntfy.sh/publish/#publish-as-json). */
export interface NotificationBody {
  readonly title?: string;
  readonly message?: string;
  /** 1 min, 2 low, 3 default, 4 high, 5 urgent. */
  readonly priority?: number;
  readonly tags?: readonly string[];
  readonly click?: string;
}

/** Latency counts in log-scale buckets (policy/sketch.ts). */
export type Sketch = Record<number, number>;

/** A service's checks in one hour. */
export interface Rollup {
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
  /** Of checks and failures, those made while silenced (uptime leaves them out). */
  readonly silencedChecks: number;
  readonly silencedFailures: number;
}

// The write path: what a transaction reads about a batch of results (BatchFacts), and what the policy decides
// from it (BatchDecision), which the transaction writes. The store reads and writes; src/policy/ decides.

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
export interface ServiceRecord
  extends Pick<
    StoredCheck,
    "url" | "notify" | "notifyThreshold" | "notifyTopic" | "paused" | "recoverThreshold" | "remindEveryMinutes" | "certWarnDays" | "locations" | "quorum" | "intervalSeconds" | "cron"
  > {
  readonly key: number;
  readonly serverId: string;
  readonly serviceId: string;
  /** Its dependencies, as full names. */
  readonly dependsOn: readonly string[];
  /** Its server's maintenance windows. */
  readonly maintenance: readonly MaintenanceWindow[];
}

/**
 * Where a service's results have brought it, as its state row keeps it. An incident id below zero is one the
 * batch opens: the store gives it its id when it writes it.
 */
export interface ServiceProgress {
  readonly state: IncidentState;
  readonly lastCheckedAt: number | null;
  readonly incidentId: number | null;
  /** Checks failed while the open incident lasts. */
  readonly incidentFailures: number;
  /** The open incident's first error. */
  readonly incidentError: string | null;
  /** The expiry of the certificate the last CERT warning was about. */
  readonly certWarnedExpiry: number | null;
  /** When the last verdict of a check with locations was made. */
  readonly lastVerdictAt: number | null;
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
}

/** The incident a run opened or closed (its id below zero when this batch opens it). */
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

export interface RunDecision {
  /** Stored as an entry (a folded run is not). */
  readonly stored: boolean;
  readonly state: IncidentState;
  /** Every notification it queued, in order. */
  readonly notices: readonly NotificationKind[];
  readonly incident: IncidentChange | null;
  /** A silence, a maintenance window or a pause covered it: it queued nothing. */
  readonly silenced: boolean;
  /** The services it depends on that had an open incident. */
  readonly blockedBy: readonly string[];
}

export type IncidentWrite =
  | {
      readonly kind: "open";
      /** Below zero: what the batch's other writes call it until it has its id. */
      readonly id: number;
      readonly serviceKey: number;
      readonly serverId: string;
      readonly serviceId: string;
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

/** A service in the graph of dependsOn, its references as written. */
export interface GraphNode {
  readonly serverId: string;
  readonly serviceId: string;
  readonly dependsOn: readonly string[];
}

/** A reference of dependsOn as a full name: "serverId/serviceId", or "serviceId" of `serverId`. */
export function qualify(ref: string, serverId: string): string {
  return ref.includes("/") ? ref : `${serverId}/${ref}`;
}

export type DependencyProblem =
  | { readonly kind: "unknown"; readonly service: string; readonly index: number; readonly ref: string }
  | { readonly kind: "dangling"; readonly dependents: readonly string[]; readonly missing: string }
  | { readonly kind: "cycle"; readonly cycle: readonly string[] };

/** The checks of one pool (a location, or "*") and the live nodes that may run them. */
export interface Pool {
  readonly services: readonly number[];
  readonly nodes: readonly string[];
  /** The current owner of each service that has one (live or not). */
  readonly owners: ReadonlyMap<number, string>;
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
