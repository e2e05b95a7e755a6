/**
 * The SQLite tables as Kysely sees them, after the latest migration. Times are Unix milliseconds, booleans
 * 0 or 1, JSON columns text. `Generated` marks columns that the schema fills when an insert leaves them out.
 */
import type { Generated } from "kysely";

export interface ServersTable {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

export interface ServicesTable {
  key: Generated<number>;
  server_id: string;
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
}

export interface HttpCheckConfigsTable {
  service_key: number;
  url: string;
  method: string;
  /** JSON object of header name to value. */
  headers: string;
  body: string | null;
  interval_seconds: number | null;
  cron: string | null;
  timeout_ms: number;
  follow_redirects: number;
  verify_tls: number;
  /** JSON list of alternatives. */
  expect: Generated<string>;
  notify: Generated<number>;
  notify_threshold: Generated<number>;
  notify_topic: string | null;
}

export interface HealthCheckDataEntriesTable {
  id: Generated<number>;
  service_key: number;
  checked_at: number;
  ok: number;
  status: number | null;
  latency_ms: number;
  error_kind: string | null;
  error: string | null;
  matched: number | null;
}

export interface ServiceStatesTable {
  service_key: number;
  status: Generated<"up" | "down" | "unknown">;
  consecutive_failures: Generated<number>;
  last_checked_at: number | null;
  last_entry_id: number | null;
  incident_open_since: number | null;
  failing_since: number | null;
}

export interface NotificationsTable {
  id: Generated<number>;
  created_at: number;
  server_id: string;
  service_id: string;
  kind: "down" | "recovered";
  topic: string | null;
  /** JSON of the ntfy message (without its topic). */
  message: string;
  status: Generated<"pending" | "delivered" | "failed" | "unsent">;
  attempts: Generated<number>;
  next_attempt_at: number;
  last_error: string | null;
  /** Set while a publish is under way; still set after a crash means the delivery is in doubt. */
  in_flight_since: number | null;
  delivered_at: number | null;
  ntfy_id: string | null;
}

export interface ServiceRollupsTable {
  service_key: number;
  /** Start of the hour, Unix ms. */
  hour: number;
  checks: number;
  failures: number;
  latency_sum: number;
  /** JSON {bucket: count}: see src/rollup/sketch.ts. */
  sketch: string;
}

export interface Tables {
  servers: ServersTable;
  services: ServicesTable;
  http_check_configs: HttpCheckConfigsTable;
  health_check_data_entries: HealthCheckDataEntriesTable;
  service_states: ServiceStatesTable;
  notifications: NotificationsTable;
  service_rollups: ServiceRollupsTable;
}
