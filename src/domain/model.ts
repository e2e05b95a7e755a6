/**
 * healthd's domain, in values.
 *
 * - server: a machine or site that owns services, addressed by `serverId`.
 * - service: one thing on a server that is checked; its id is unique within its server.
 * - check: how a service is checked, by kind (`type`): an http check healthd makes on a schedule (request,
 *   expectations), or a heartbeat a job pings (when pings are due); with the notification settings.
 * - alternative: one branch of a disjunctive expectation; a check passes when any alternative holds.
 * - entry: a health-check data entry, the stored result of one run of a check (or a heartbeat's ping).
 * - state: what healthd currently knows of a service (up/down, consecutive failures, open incident).
 *
 * The shapes of documents that come from outside (server documents, checks of each kind, expectations) are
 * defined once, as zod schemas, in `schema/`; their TypeScript types are re-exported here so the core imports
 * one module. What the write path reads and decides about a batch of results is in batch.ts.
 */
import { createRequire } from "node:module";
import type { Check, CheckType, MaintenanceWindow } from "./schema/index.ts";
import { readConnection, shownUrl } from "./schema/database.ts";

export type { Alternative, Check, CheckInput, CheckType, DnsCheck, HeartbeatCheck, HttpCheck, IcmpCheck, MaintenanceWindow, ServerDocument, ServiceDocument, TcpCheck, TlsCheck, UdpCheck, WebsocketCheck, GrpcCheck, MysqlCheck, PostgresCheck, RedisCheck } from "./schema/index.ts";

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
  // A tcp check's banner that did not come or did not match; a udp or dns answer that did not match.
  "banner",
  "answer",
  // An icmp check's echoes that did not come back, more than maxLossPercent allows.
  "loss",
  // A database check's: the server refused the login (user, password, database) or failed the query.
  "auth",
  "query",
  // A target that speaks another protocol: a WebSocket upgrade, a gRPC call or a database login answered by
  // something else (garbage, another service on the port).
  "protocol",
  // A heartbeat's: no ping by the deadline and its grace, the job's own failure or exit code, a run too long or
  // too short.
  "missed",
  "fail",
  "exit",
  "too-long",
  "too-short",
] as const;
export type ErrorKind = (typeof errorKinds)[number];

/** What a heartbeat's entry records: a ping (start, success, fail, exit, log), or what healthd saw (missed, too-long). */
export const entryKinds = ["start", "success", "fail", "exit", "log", "missed", "too-long"] as const;
export type EntryKind = (typeof entryKinds)[number];

/** Where a node probes from when --location is not given. Entries of it store no location (most are). */
export const defaultLocation = "default";

/** The outcome of one run of a check, before it is stored. */
export type CheckResult =
  | {
      readonly ok: true;
      /** The HTTP status; null for the kinds that have none (tcp, dns). */
      readonly status: number | null;
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
  /** A dns check's answers, as text (absent when no answer came); a tls check's certificate subject and issuer. */
  readonly answers?: readonly string[];
};

/** A stored check result. */
export interface Entry extends EntryFields {
  /** Increases as entries are stored. */
  readonly id: number;
}

/** What an entry says, as the policy decides it: a check's result, or a heartbeat's ping or missed deadline. */
export interface EntryFields {
  readonly checkedAt: number;
  readonly ok: boolean;
  /** An http check's status; null otherwise, or when no answer came. */
  readonly status: number | null;
  /** How long it took: a check's total time, a heartbeat run's duration (0 for a ping that ends none). */
  readonly latencyMs: number;
  readonly errorKind: ErrorKind | null;
  readonly error: string | null;
  readonly matched: number | null;
  /** The location of the node that ran it (or took the ping). */
  readonly location: string;
  /** The kind of check it is of. */
  readonly type: CheckType;
  /** A heartbeat's: what the entry records. Null for other kinds. */
  readonly kind: EntryKind | null;
  readonly exitCode: number | null;
  /** A heartbeat run's duration, start to finish, when its start was seen. */
  readonly durationMs: number | null;
  /** What a ping sent, its first 10,000 bytes. */
  readonly body: string | null;
  /** A dns check's answers, as text; a tls check's certificate subject and issuer. Null for other kinds, or when none came. */
  readonly answers: readonly string[] | null;
  /** A heartbeat ping's: how it came (GET, POST, HEAD...), its User-Agent, its sender's address, http or https, its rid. Null otherwise. */
  readonly method: string | null;
  readonly userAgent: string | null;
  readonly remoteAddr: string | null;
  readonly scheme: string | null;
  readonly rid: string | null;
}

export type ServiceStatus = "up" | "down" | "unknown";

/** A check as stored: the data layer has filled the notification settings a document may leave out. */
export type StoredCheck = Check & { readonly notify: boolean; readonly notifyThreshold: number };

/** A check healthd makes itself, on a schedule (every kind but heartbeat, which it is told). */
export type ActiveCheck = Exclude<StoredCheck, { readonly type: "heartbeat" }>;

/**
 * What a check looks at, as people read it: an http check's URL, a tcp check's tcp://host:port (tls:// over
 * TLS), a udp check's udp://host:port, a tls check's tls://host:port (smtp+starttls://host:port), an icmp check's icmp://host, a websocket check's URL, a grpc check's grpc://host:port/service (grpcs:// over TLS), a dns check's question as dig would ask it (example.org A @192.0.2.53). Null for a heartbeat.
 */
export function targetOf(check: Check): string | null {
  switch (check.type) {
    case "http":
      return check.url;
    case "tcp":
      return `${check.tls ? "tls" : "tcp"}://${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
    case "udp":
      return `udp://${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
    case "tls":
      return `${check.starttls ? `${check.starttls}+starttls` : "tls"}://${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
    case "dns":
      return `${check.name} ${check.recordType} @${check.server ?? "system resolver"}`;
    case "icmp":
      return `icmp://${check.host}`;
    case "websocket":
      return check.url;
    case "grpc":
      return `${check.tls ? "grpcs" : "grpc"}://${check.target}${check.service ? `/${check.service}` : ""}`;
    case "postgres":
    case "mysql":
    case "redis":
      return shownUrl(check.type, check.url);
    case "heartbeat":
      return null;
  }
}

/**
 * The registered domain a check's host belongs to (www.example.co.uk: example.co.uk, from the public suffix
 * list); null for an IP address, a bare name, or a heartbeat. tldts takes 13 to 38 ms to load its list, which
 * every `healthd ping` from cron would pay: it is loaded when first needed, by a check with domainWarnDays.
 */
export function registeredDomain(check: Check): string | null {
  const host = check.type === "http" || check.type === "websocket" ? new URL(check.url).hostname : check.type === "grpc" ? check.target.replace(/:\d+$/, "").replace(/^\[|\]$/g, "") : check.type === "tcp" || check.type === "udp" || check.type === "tls" || check.type === "icmp" ? check.host : check.type === "dns" ? check.name : databaseHost(check);
  if (host === null) return null;
  tldts ??= createRequire(import.meta.url)("tldts") as typeof import("tldts");
  return tldts.getDomain(host.replace(/\.$/, ""), { allowPrivateDomains: false })?.toLowerCase() ?? null;
}
let tldts: typeof import("tldts") | undefined;

/** A database check's host, from its URL; null for other kinds. */
function databaseHost(check: Check): string | null {
  if (check.type !== "postgres" && check.type !== "mysql" && check.type !== "redis") return null;
  const read = readConnection(check.type, check.url);
  return read.ok ? read.connection.host : null;
}

/** Whether a check is one healthd makes on a schedule. */
export const isActive = (check: StoredCheck): check is ActiveCheck => check.type !== "heartbeat";

/**
 * Whether two checks are the same configuration: an unchanged check keeps its phase in the scheduler, and a
 * PUT reports it unchanged. The one definition of "did this check change". Computed when two are compared
 * rather than kept with each scheduled service: at 10,000 heartbeats the kept JSON made the heap every full
 * collection marks 54.1 MB instead of 45.0 (docs/benchmarks.md).
 */
export function sameCheck(a: StoredCheck, b: StoredCheck): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** A service whose check this node runs (or, for a heartbeat, watches). `key` is the store's handle for it. */
export interface ScheduledService<C extends StoredCheck = StoredCheck> {
  readonly key: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly check: C;
  /** When it was last checked (by any node), as the store knew when this was read; not part of the check. */
  readonly lastCheckedAt?: number | null;
  /** A heartbeat's: when the service was created or last changed, and what its pings left, as the store knew when this was read. */
  readonly since?: number;
  readonly beat?: HeartbeatProgress;
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

/**
 * What a notification is about; slow and normal: a check's slow passes began (SLOW) and ended; domain: the
 * registration of its domain expires soon; ack: someone took the incident on; escalation: its DOWN again, to an
 * escalation step's channels, nobody having acknowledged it.
 */
export type NotificationKind = "down" | "recovered" | "reminder" | "cert" | "slow" | "normal" | "domain" | "ack" | "escalation";

/** What a notification says, in ntfy's JSON publishing form without its topic (https://docs.ntfy.sh/publish/#publish-as-json). */
export interface NotificationBody {
  readonly title?: string;
  readonly message?: string;
  /** 1 min, 2 low, 3 default, 4 high, 5 urgent. */
  readonly priority?: number;
  readonly tags?: readonly string[];
  readonly click?: string;
}

/**
 * Latency counts by log-scale bucket (policy/sketch.ts). A Map, not an object keyed by bucket: an object's
 * integer keys up to 600 make V8 keep an array as long as the highest one, and a rollup's sketch is copied for
 * every result stored (1.4 kB against 0.3 kB a copy, and 13 % of the write path's CPU in its collector).
 */
export type Sketch = Map<number, number>;

/** A service's checks in one hour. */
export interface Rollup {
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
  /** Of checks and failures, those made while silenced (uptime leaves them out). */
  readonly silencedChecks: number;
  readonly silencedFailures: number;
  /** Passing checks slower than the check's slowMs (counted as up; /stats says how many were slow). */
  readonly slowChecks: number;
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
 * What a heartbeat's pings have left: what happened, from which its due time and its next deadline follow
 * with its timing as it is now (policy/heartbeat.ts).
 */
export interface HeartbeatProgress {
  /** Its last ping of any kind. */
  readonly lastPingAt: number | null;
  /** Its runs going: when each started, by run id ("" for runs without one). */
  readonly openRuns: Readonly<Record<string, number>>;
  /**
   * Its runs already reported too long and not finished yet, likewise (absent: none): a finish pairs with one
   * when no run going matches it, so the entry of a run that finishes late still carries its duration.
   */
  readonly overdueRuns?: Readonly<Record<string, number>>;
  /** Its last run's duration, start to finish. */
  readonly lastDurationMs: number | null;
  /** Its last success or failure: the next due time counts from it. */
  readonly lastFinishAt: number | null;
  /** The due time of the last period found missed since then. */
  readonly missedDueAt: number | null;
}
