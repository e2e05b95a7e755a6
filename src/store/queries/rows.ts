/**
 * Rows into domain values. Both engines answer through here, so a boolean is Boolean(...) whether SQLite
 * stored 0/1 or PostgreSQL true/false, and JSON text is parsed in one place.
 */
import type { Selectable } from "kysely";
import { defaults } from "../../config.ts";
import type { Check, Entry, ErrorKind, StoredCheck } from "../../model.ts";
import type { IncidentState } from "../../notify/incident.ts";
import type { NotificationBody } from "../../notify/message.ts";
import type { Notification } from "../store.ts";
import type { HealthCheckDataEntriesTable, HttpCheckConfigsTable, NotificationsTable, ServiceStatesTable } from "../tables.ts";

export const iso = (ms: number) => new Date(ms).toISOString();

export type CheckRow = Omit<Selectable<HttpCheckConfigsTable>, "service_key">;

export function checkFromRow(row: CheckRow): StoredCheck {
  return {
    url: row.url,
    method: row.method as Check["method"],
    headers: JSON.parse(row.headers) as Record<string, string>,
    body: row.body,
    intervalSeconds: row.interval_seconds,
    cron: row.cron,
    timeoutMs: row.timeout_ms,
    followRedirects: Boolean(row.follow_redirects),
    verifyTls: Boolean(row.verify_tls),
    expect: JSON.parse(row.expect) as Check["expect"],
    notify: Boolean(row.notify),
    notifyThreshold: row.notify_threshold,
    notifyTopic: row.notify_topic,
    paused: Boolean(row.paused),
    recoverThreshold: row.recover_threshold,
    remindEveryMinutes: row.remind_every_minutes,
    certWarnDays: row.cert_warn_days,
    dependsOn: JSON.parse(row.depends_on) as string[],
    locations: row.locations === null ? null : (JSON.parse(row.locations) as string[]),
    quorum: row.quorum,
  };
}

/** The columns of a check, as written. Absent notify settings are left out: the schema's defaults fill them. */
export function checkToRow(key: number, check: Check) {
  return {
    service_key: key,
    url: check.url,
    method: check.method,
    headers: JSON.stringify(check.headers),
    body: check.body,
    interval_seconds: check.intervalSeconds,
    cron: check.cron,
    timeout_ms: check.timeoutMs,
    follow_redirects: check.followRedirects,
    verify_tls: check.verifyTls,
    expect: JSON.stringify(check.expect),
    ...(check.notify === undefined ? {} : { notify: check.notify }),
    ...(check.notifyThreshold === undefined ? {} : { notify_threshold: check.notifyThreshold }),
    notify_topic: check.notifyTopic,
    paused: check.paused,
    recover_threshold: check.recoverThreshold,
    remind_every_minutes: check.remindEveryMinutes,
    cert_warn_days: check.certWarnDays,
    depends_on: JSON.stringify(check.dependsOn),
    locations: check.locations === null ? null : JSON.stringify(check.locations),
    quorum: check.quorum,
  };
}

export type EntryRow = Omit<Selectable<HealthCheckDataEntriesTable>, "service_key">;

/** Entries keep the location that ran them; null stands for the default one, which most are. */
export const locationOf = (stored: string | null) => stored ?? defaults.location;
export const locationToRow = (location: string) => (location === defaults.location ? null : location);

export function entryFromRow(row: EntryRow): Entry {
  return {
    id: String(row.id),
    checkedAt: iso(row.checked_at),
    ok: Boolean(row.ok),
    status: row.status,
    latencyMs: row.latency_ms,
    errorKind: row.error_kind as ErrorKind | null,
    error: row.error,
    matched: row.matched,
    location: locationOf(row.location),
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
    ntfyId: row.ntfy_id,
    incidentId: row.incident_id,
  };
}
