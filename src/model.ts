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

/** A stored check result as the API shows it. */
export interface Entry {
  readonly id: string;
  readonly checkedAt: string;
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

/**
 * What the API says of a service: the incident machine's status, or paused (its check is paused) or blocked
 * (it fails while a service it depends on has an open incident, named in blockedBy).
 */
export type ShownStatus = ServiceStatus | "paused" | "blocked";

/**
 * The one rule for what is shown: a paused check is paused whatever it last said; a failing service without
 * an incident of its own while `blockedBy` (its dependencies with an open incident) is not empty is blocked.
 */
export function shownStatus(
  status: ServiceStatus,
  paused: boolean,
  incidentOpen: boolean,
  blockedBy: readonly string[],
): { status: ShownStatus; blockedBy?: readonly string[] } {
  if (paused) return { status: "paused" };
  if (status === "down" && !incidentOpen && blockedBy.length > 0) return { status: "blocked", blockedBy };
  return { status };
}

export interface ServiceState {
  readonly status: ShownStatus;
  /** With status blocked: the services it depends on that have an open incident. */
  readonly blockedBy?: readonly string[];
  /** With check.locations: each location's latest result; unmonitored while no live node is there. */
  readonly locations?: Readonly<Record<string, { readonly status: "up" | "down" | "unmonitored"; readonly lastCheckedAt: string | null }>>;
  readonly consecutiveFailures: number;
  readonly lastCheckedAt: string | null;
  readonly lastEntry: Entry | null;
  readonly incidentOpenSince: string | null;
}

export const unknownState: ServiceState = {
  status: "unknown",
  consecutiveFailures: 0,
  lastCheckedAt: null,
  lastEntry: null,
  incidentOpenSince: null,
};

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

export interface ServerSummary {
  readonly id: string;
  readonly name: string;
  readonly serviceCount: number;
  readonly up: number;
  readonly down: number;
  readonly unknown: number;
  /** Services whose check is paused (counted in none of the above). */
  readonly paused: number;
  /** Services failing while a service they depend on has an open incident (shown `blocked`; not in `down`). */
  readonly blocked: number;
}

export interface ServiceView {
  readonly id: string;
  readonly name: string;
  readonly check: StoredCheck;
  readonly state: ServiceState;
}

export interface ServerView {
  readonly id: string;
  readonly name: string;
  readonly maintenance: readonly MaintenanceWindow[];
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly services: readonly ServiceView[];
}

/** An entry with the ids of its server and service, as `healthd tail` shows it. */
export interface NamedEntry extends Entry {
  readonly server: string;
  readonly service: string;
}
