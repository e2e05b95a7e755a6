/**
 * Rows into domain values. Both engines answer through here, so a boolean is Boolean(...) whether SQLite
 * stored 0/1 or PostgreSQL true/false, and JSON text is parsed in one place.
 */
import type { Selectable } from "kysely";
import { bucketCount } from "../../policy/sketch.ts";
import { defaultLocation, initialState, qualify, type CheckType, type Entry, type EntryKind, type Sketch, type ErrorKind, type IncidentState, type MaintenanceWindow, type NotificationBody, type Rollup } from "../../domain/model.ts";
import { type HeartbeatTiming, type LocationResult, type ServiceProgress, type ServiceRecord } from "../../domain/batch.ts";
import type { HeartbeatProgress } from "../../domain/model.ts";
import type { Notification } from "../store.ts";
import type { NotificationEvent } from "../../domain/notification.ts";
import type { HealthCheckDataEntriesTable, HttpCheckConfigsTable, LocationResultsTable, NotificationsTable, ServiceRollupsTable, ServiceStatesTable } from "../tables.ts";

export type EntryRow = Omit<Selectable<HealthCheckDataEntriesTable>, "service_key">;

/** Entries keep the location that ran them; null stands for the default one, which most are. */
export const locationOf = (stored: string | null) => stored ?? defaultLocation;
export const locationToRow = (location: string) => (location === defaultLocation ? null : location);

/** The columns of an entry, as the entry queries select them. */
export const entryColumns = ["id", "checked_at", "ok", "status", "latency_ms", "error_kind", "error", "matched", "location", "type", "kind", "exit_code", "duration_ms", "body", "answers", "method", "user_agent", "remote_addr", "scheme", "rid"] as const;

export function entryFromRow(row: EntryRow): Entry {
  return {
    id: row.id,
    type: (row.type ?? "http") as CheckType,
    kind: row.kind as EntryKind | null,
    exitCode: row.exit_code,
    durationMs: row.duration_ms,
    body: row.body,
    answers: row.answers === null ? null : (JSON.parse(row.answers) as string[]),
    checkedAt: row.checked_at,
    ok: Boolean(row.ok),
    status: row.status,
    latencyMs: row.latency_ms,
    errorKind: row.error_kind as ErrorKind | null,
    error: row.error,
    matched: row.matched,
    location: locationOf(row.location),
    method: row.method,
    userAgent: row.user_agent,
    remoteAddr: row.remote_addr,
    scheme: row.scheme,
    rid: row.rid,
  };
}

export type StateRow = Pick<
  Selectable<ServiceStatesTable>,
  "status" | "consecutive_failures" | "consecutive_passes" | "failing_since" | "incident_open_since" | "down_sent" | "last_reminded_at"
>;

export function stateFromRow(row: StateRow): IncidentState {
  return {
    status: row.status,
    consecutiveFailures: row.consecutive_failures,
    consecutivePasses: row.consecutive_passes,
    failingSince: row.failing_since,
    incidentOpenSince: row.incident_open_since,
    downSent: Boolean(row.down_sent),
    lastRemindedAt: row.last_reminded_at,
  };
}

export function notificationFromRow(row: Selectable<NotificationsTable>): Notification {
  return {
    id: row.id,
    createdAt: row.created_at,
    serverId: row.server_id,
    serviceId: row.service_id,
    kind: row.kind,
    topic: row.topic,
    message: JSON.parse(row.message) as NotificationBody,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    inFlightSince: row.in_flight_since,
    deliveredAt: row.delivered_at,
    remoteId: row.remote_id,
    channel: row.channel,
    event: row.event === null ? null : (JSON.parse(row.event) as NotificationEvent),
    incidentId: row.incident_id,
  };
}

/** A service's dependsOn as full names ("serverId/serviceId"): the one reading of the column as names. */
export function dependsOnFromRow(dependsOn: string, serverId: string): string[] {
  return (JSON.parse(dependsOn) as string[]).map((ref) => qualify(ref, serverId));
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/** A service as the write path reads it: its settings, and its state and rollup of an hour (null before any). */
export type ServiceRow = {
  key: number;
  server_id: string;
  service_id: string;
  updated_at: number;
  maintenance: string;
  server_name: string;
  service_name: string;
  server_channels: string | null;
  first_error: string | null;
  started_at: number | null;
  acked_at: number | null;
  escalated_to: string | null;
} & Pick<
  Selectable<HttpCheckConfigsTable>,
  | "url" | "notify" | "notify_threshold" | "notify_topic" | "paused" | "recover_threshold" | "remind_every_minutes" | "cert_warn_days"
  | "depends_on" | "locations" | "quorum" | "interval_seconds" | "cron" | "type" | "probe" | "slow_ms" | "notify_slow" | "domain_warn_days" | "domain" | "channels"
> &
  Nullable<Omit<Selectable<ServiceStatesTable>, "service_key">> &
  Nullable<Omit<Selectable<ServiceRollupsTable>, "service_key" | "hour">>;

export function recordFromRow(row: ServiceRow): ServiceRecord {
  const heartbeat = row.type === "heartbeat" ? (JSON.parse(row.probe!) as Omit<HeartbeatTiming, "since">) : null;
  return {
    key: row.key,
    serverId: row.server_id,
    serviceId: row.service_id,
    serverName: row.server_name,
    serviceName: row.service_name,
    type: row.type,
    channels: JSON.parse(row.channels ?? row.server_channels ?? "null") as string[] | null,
    heartbeat: heartbeat && { ...heartbeat, since: row.updated_at },
    url: row.url,
    notify: Boolean(row.notify),
    notifyThreshold: row.notify_threshold,
    notifyTopic: row.notify_topic,
    paused: Boolean(row.paused),
    recoverThreshold: row.recover_threshold,
    remindEveryMinutes: row.remind_every_minutes,
    certWarnDays: row.cert_warn_days,
    slowMs: row.slow_ms,
    notifySlow: Boolean(row.notify_slow),
    domainWarnDays: row.domain_warn_days,
    domain: row.domain,
    dependsOn: dependsOnFromRow(row.depends_on, row.server_id),
    locations: row.locations === null ? null : (JSON.parse(row.locations) as string[]),
    quorum: row.quorum,
    intervalSeconds: row.interval_seconds,
    cron: row.cron,
    maintenance: JSON.parse(row.maintenance) as MaintenanceWindow[],
  };
}

export function progressFromRow(row: ServiceRow): ServiceProgress {
  return {
    // A service checked for the first time has no state row yet; a state row's columns are all NOT NULL.
    state: row.status === null ? initialState : stateFromRow(row as StateRow),
    lastCheckedAt: row.last_checked_at,
    incidentId: row.incident_id,
    incidentFailures: row.incident_failures ?? 0,
    incidentError: row.first_error,
    incidentStartedAt: row.started_at,
    incidentAckedAt: row.acked_at,
    ...(row.escalated_to === null ? {} : { incidentEscalatedTo: JSON.parse(row.escalated_to) as string[] }),
    ...(row.overdue_runs === null ? {} : { overdueRuns: JSON.parse(row.overdue_runs) as Record<string, number> }),
    certWarnedExpiry: row.cert_warned_expiry,
    lastVerdictAt: row.last_verdict_at,
    slowStreak: row.slow_streak ?? 0,
    slowSent: Boolean(row.slow_sent),
    domainWarnedExpiry: row.domain_warned_expiry,
    ...beatFromRow(row),
  };
}

type BeatRow = Nullable<Pick<Selectable<ServiceStatesTable>, "last_ping_at" | "open_runs" | "last_duration_ms" | "last_finish_at" | "missed_due_at">>;

export function beatFromRow(row: BeatRow): HeartbeatProgress {
  return {
    lastPingAt: row.last_ping_at,
    openRuns: row.open_runs === null ? {} : (JSON.parse(row.open_runs) as Record<string, number>),
    lastDurationMs: row.last_duration_ms,
    lastFinishAt: row.last_finish_at,
    missedDueAt: row.missed_due_at,
  };
}

type RollupRow = Pick<Selectable<ServiceRollupsTable>, "checks" | "failures" | "latency_sum" | "sketch" | "silenced_checks" | "silenced_failures" | "slow_checks">;

export function rollupFromRow(row: RollupRow): Rollup {
  return {
    checks: row.checks,
    failures: row.failures,
    latencySum: row.latency_sum,
    sketch: sketchFromJson(row.sketch),
    silencedChecks: row.silenced_checks,
    silencedFailures: row.silenced_failures,
    slowChecks: row.slow_checks,
  };
}

/** The columns checks to silenced_failures of a rollup, in order. */
export function rollupToRow(serviceKey: number, hour: number, r: Rollup): unknown[] {
  return [serviceKey, hour, r.checks, r.failures, r.latencySum, sketchToJson(r.sketch), r.silencedChecks, r.silencedFailures, r.slowChecks];
}

export function locationResultFromRow(r: Selectable<LocationResultsTable>): LocationResult {
  return { location: r.location, checkedAt: r.checked_at, ok: Boolean(r.ok), errorKind: r.error_kind as ErrorKind | null, error: r.error };
}

/** A latency sketch as stored: a JSON object of bucket to count, `{"58":10}`. */
export function sketchToJson(sketch: ReadonlyMap<number, number>): string {
  let json = "";
  for (const [bucket, count] of sketch) json += `,"${bucket}":${count}`;
  return `{${json.slice(1)}}`;
}

/**
 * The sum of any number of sketches written as sketchToJson writes them, one after the other (`{"3":1},{"3":2}`):
 * each `"bucket":count` is added. Scanned by hand into an array: JSON.parse and a Map per sketch took three
 * times as long for a month of hours (see rollupSums).
 */
export function sketchesFromText(text: string): Sketch {
  const counts = new Float64Array(bucketCount);
  let number = 0;
  let bucket = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) number = number * 10 + (c - 48);
    else if (c === 58) (bucket = number), (number = 0); // ':' ends a bucket
    else if (c === 44 || c === 125) {
      // ',' or '}' ends a count
      if (bucket >= 0) counts[Math.min(bucket, bucketCount - 1)]! += number;
      bucket = -1;
      number = 0;
    } // '{' and the quotes around a bucket say nothing
  }
  const sketch: Sketch = new Map();
  for (let b = 0; b < bucketCount; b++) if (counts[b]! > 0) sketch.set(b, counts[b]!);
  return sketch;
}

export function sketchFromJson(json: string): Sketch {
  const counts = JSON.parse(json) as Record<string, number>;
  return new Map(Object.keys(counts).map((bucket) => [Number(bucket), counts[bucket]!]));
}
