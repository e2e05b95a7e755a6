/**
 * The tables as Kysely sees them, after the latest migration, on either engine. Times are Unix milliseconds
 * (bigint on PostgreSQL, which the pool reads as numbers); JSON columns are text on both, so that documents
 * come back byte for byte as they were written. Booleans are SQLite integers 0/1 and PostgreSQL booleans:
 * `Bool` makes every reader say Boolean(...). `Generated` marks columns the schema fills when left out.
 */
import type { ColumnType, Generated } from "kysely";
import type { AnnouncementsTable, AnnouncementUpdatesTable, StatusPagesTable, StatusPageLogosTable, StatusPageHostnamesTable, TokensTable, SessionsTable } from "./tables-pages.ts";

type Bool = ColumnType<boolean | number, boolean, boolean>;

export interface ServersTable {
  id: string;
  name: string;
  created_at: number;
  updated_at: number;
  /** JSON list of recurring maintenance windows. */
  maintenance: Generated<string>;
  /** JSON list of the channels its services' notifications go to; null: the daemon's default. */
  channels: string | null;
  /** The first segment of its slug URLs (/ping/{ping_key}/{serviceId}); unique. */
  ping_key: string;
  /** A slug URL's ?create=1 may make a heartbeat. */
  auto_provision: ColumnType<boolean | number, boolean | undefined, boolean>;
  /** JSON of the heartbeat check such a ping makes; null: a daily one. */
  heartbeat_defaults: string | null;
  /** More of its services than this failing within one interval are told of as one (0: never). */
  group_threshold: Generated<number>;
  /** JSON list of escalation steps ({afterMinutes, channels}) of its services; null: none. */
  escalate: Generated<string | null>;
}

export interface ChannelsTable {
  name: string;
  type: string;
  /** JSON of its fields as written (a `${NAME}` stays so, read from the environment when a message is sent). */
  config: string;
  /** JSON list of the events it takes; null: all but test. */
  events: string | null;
  created_at: number;
  updated_at: number;
}

export interface ServicesTable {
  key: Generated<number>;
  server_id: string;
  id: string;
  name: string;
  /** JSON list of its tags (lowercase words); [] when it has none. */
  tags: Generated<string>;
  created_at: number;
  updated_at: number;
}

export interface HttpCheckConfigsTable {
  service_key: number;
  /** An http check's URL; for tcp, udp and dns, the target as shown (tcp://db:5432, example.org A @192.0.2.53). */
  url: string;
  method: string;
  /** JSON object of header name to value. */
  headers: string;
  body: string | null;
  interval_seconds: number | null;
  cron: string | null;
  timeout_ms: number;
  follow_redirects: Bool;
  verify_tls: Bool;
  /** JSON list of alternatives. */
  expect: Generated<string>;
  notify: ColumnType<boolean | number, boolean | undefined, boolean>;
  notify_threshold: Generated<number>;
  notify_topic: string | null;
  /** The uptime a month should reach, percent; null: none (reports). */
  sla_target: number | null;
  /** JSON list of the channels its notifications go to; null: its server's. */
  channels: string | null;
  /** JSON list of escalation steps; null: its server's. */
  escalate: Generated<string | null>;
  paused: ColumnType<boolean | number, boolean | undefined, boolean>;
  recover_threshold: Generated<number>;
  remind_every_minutes: number | null;
  cert_warn_days: number | null;
  /** JSON list of "serverId/serviceId" references. */
  depends_on: Generated<string>;
  /** JSON list of location names, or null: any node runs it. */
  locations: string | null;
  /** Locations that must see it failing; null: a majority. */
  quorum: number | null;
  /** The kind of check. */
  type: Generated<"http" | "tcp" | "udp" | "tls" | "dns" | "icmp" | "websocket" | "grpc" | "postgres" | "mysql" | "redis" | "heartbeat">;
  /** JSON of a kind's own fields that have no column of their own (null for http, whose fields are the columns). */
  probe: string | null;
  /** A heartbeat's secret for its ping URLs (unique). */
  ping_key: string | null;
  /** A heartbeat's Uptime Kuma push token, /api/push/{push_token} (unique). */
  push_token: string | null;
  /** A heartbeat's Gatus external-endpoint key, /api/v1/endpoints/{gatus_key}/external (unique). */
  gatus_key: string | null;
  /** A check passing slower than this many ms is slow (the service degraded); null: never. */
  slow_ms: number | null;
  /** Warn (DOMAIN) when the registration of `domain` expires in fewer days than this. */
  domain_warn_days: number | null;
  /** The registered domain of the check's host (example.org for https://www.example.org/), null for an IP address. */
  domain: string | null;
  /** Publish SLOW after notifyThreshold slow checks in a row, and a notice when they end. */
  notify_slow: ColumnType<boolean | number, boolean | undefined, boolean>;
}

export interface HealthCheckDataEntriesTable {
  id: Generated<number>;
  service_key: number;
  checked_at: number;
  ok: Bool;
  status: number | null;
  latency_ms: number;
  error_kind: string | null;
  error: string | null;
  matched: number | null;
  /** The location that ran it; null: the default location (most entries, so nothing is stored for them). */
  location: string | null;
  /** Its check's type; null: http. */
  type: string | null;
  /** A ping's kind (start, success, fail, exit, log) or what healthd saw (missed, too-long); null for other checks. */
  kind: string | null;
  exit_code: number | null;
  /** A run's duration, start to finish. */
  duration_ms: number | null;
  /** What a ping sent (its first 10,000 bytes). */
  body: string | null;
  /** A dns check's answers, as a JSON list of their texts. */
  answers: string | null;
  /** How a heartbeat's ping came: its method, User-Agent, sender's address, http or https, and rid. */
  method: string | null;
  user_agent: string | null;
  remote_addr: string | null;
  scheme: string | null;
  rid: string | null;
}

export interface ServiceStatesTable {
  service_key: number;
  status: Generated<"up" | "down" | "unknown">;
  consecutive_failures: Generated<number>;
  last_checked_at: number | null;
  last_entry_id: number | null;
  incident_open_since: number | null;
  failing_since: number | null;
  consecutive_passes: Generated<number>;
  incident_id: number | null;
  /** Checks failed during the open incident. */
  incident_failures: Generated<number>;
  /** The open incident's DOWN was published (false while it waits for a silence to end). */
  down_sent: ColumnType<boolean | number, boolean | undefined, boolean>;
  last_reminded_at: number | null;
  /** The expiry (Unix ms) of the certificate the last CERT warning was about. */
  cert_warned_expiry: number | null;
  /** When the last verdict of a check with locations was made (once per interval). */
  last_verdict_at: number | null;
  /** A heartbeat's last ping (or missed deadline), its runs going (JSON {runId: startedAt}), its last run's duration. */
  last_ping_at: number | null;
  open_runs: string | null;
  /** Its runs reported too long and not finished yet (JSON {runId: startedAt}): their finish still has a duration. */
  overdue_runs: string | null;
  last_duration_ms: number | null;
  /** When a heartbeat's next ping is due, and when healthd looks at it next (its next deadline). */
  last_finish_at: number | null;
  missed_due_at: number | null;
  /** The registration expiry the last DOMAIN warning was about. */
  domain_warned_expiry: number | null;
  /** Slow passes in a row (checks passing beyond slowMs), and whether a SLOW notice went out for them. */
  slow_streak: Generated<number>;
  slow_sent: ColumnType<boolean | number, boolean | undefined, boolean>;
}

export interface NodesTable {
  name: string;
  /** Tells a restarted node from the process it replaces. */
  instance: string;
  host: string;
  pid: number;
  location: string;
  version: string;
  started_at: number;
  last_seen_at: number;
  /** The node is live while last_seen_at + lease_ms is in the future. */
  lease_ms: number;
}

export interface ServiceOwnersTable {
  service_key: number;
  /** A location, or "*" for checks without locations. */
  pool: string;
  node: string;
}

export interface LocationResultsTable {
  service_key: number;
  location: string;
  checked_at: number;
  ok: Bool;
  error_kind: string | null;
  error: string | null;
}

/** A grouped DOWN of a server's services (policy/storm.ts), open until its grouped RECOVERED. */
export interface ServerStormsTable {
  id: Generated<number>;
  server_id: string;
  opened_at: number;
  /** JSON list of the service ids it named. */
  members: string;
  closed_at: number | null;
}

export interface IncidentsTable {
  id: Generated<number>;
  service_key: number;
  server_id: string;
  service_id: string;
  /** Its first failed check: the outage counts from here (policy/outage.ts). */
  started_at: number;
  /** The check that crossed notifyThreshold and opened it. */
  opened_at: number;
  closed_at: number | null;
  failures: number;
  first_error: string | null;
  /** Its DOWN was published. */
  notified: ColumnType<boolean | number, boolean | undefined, boolean>;
  /** Acknowledged when, by whom ("link", "ntfy", a token), saying what; escalated_to: JSON list of the channels its steps went to. */
  acked_at: Generated<number | null>;
  acked_by: Generated<string | null>;
  ack_note: Generated<string | null>;
  escalated_to: Generated<string | null>;
}

/** The escalation steps sent, one per (incident, step): the key makes each step sent once. */
export interface IncidentEscalationsTable { incident_id: number; step: number; sent_at: number }

export interface SilencesTable {
  id: Generated<number>;
  server_id: string;
  /** null: every service of the server. */
  service_id: string | null;
  starts_at: number;
  ends_at: number;
  reason: string | null;
  created_at: number;
}

/** Settings of the whole cluster, by name (ntfy_topic: the default topic). */
export interface ClusterSettingsTable {
  name: string;
  value: string;
}

export interface NotificationsTable {
  id: Generated<number>;
  created_at: number;
  server_id: string;
  service_id: string;
  kind: "down" | "recovered" | "reminder" | "cert" | "ack" | "escalation";
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
  /** What the destination said the message is (ntfy's message id, a webhook's answer...). */
  remote_id: string | null;
  /** The channel this row delivers to: each notification has one row per channel. */
  channel: Generated<string>;
  /** JSON of the event's fields (policy/event.ts), the same on each row of one notification; null before channels. */
  event: string | null;
  incident_id: number | null;
  /** The node instance publishing it (while in_flight_since is set). */
  claimed_by: string | null;
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
  /** Of `checks` and `failures`, those made while the service was silenced (left out of uptime). */
  silenced_checks: Generated<number>;
  silenced_failures: Generated<number>;
  /** Passing checks slower than the check's slowMs. */
  slow_checks: Generated<number>;
}

export interface RollupRevisionsTable {
  id: number;
  revision: number;
}

/** What RDAP said of a registered domain: looked up at most once a day, whichever node looks. */
export interface DomainRegistrationsTable {
  domain: string;
  /** When the registration expires; null when the lookup failed or said nothing of it (see problem). */
  expires_at: number | null;
  looked_up_at: number;
  problem: string | null;
}

export type { AnnouncementsTable, AnnouncementUpdatesTable, StatusPagesTable, StatusPageLogosTable, StatusPageHostnamesTable, TokensTable, SessionsTable };

export interface Tables {
  servers: ServersTable;
  services: ServicesTable;
  http_check_configs: HttpCheckConfigsTable;
  health_check_data_entries: HealthCheckDataEntriesTable;
  service_states: ServiceStatesTable;
  notifications: NotificationsTable;
  channels: ChannelsTable;
  announcements: AnnouncementsTable;
  announcement_updates: AnnouncementUpdatesTable;
  status_pages: StatusPagesTable;
  status_page_hostnames: StatusPageHostnamesTable;
  status_page_logos: StatusPageLogosTable;
  cluster_settings: ClusterSettingsTable;
  service_rollups: ServiceRollupsTable;
  rollup_revisions: RollupRevisionsTable;
  incidents: IncidentsTable;
  server_storms: ServerStormsTable;
  incident_escalations: IncidentEscalationsTable;
  silences: SilencesTable;
  nodes: NodesTable;
  service_owners: ServiceOwnersTable;
  location_results: LocationResultsTable;
  domain_registrations: DomainRegistrationsTable;
  tokens: TokensTable;
  sessions: SessionsTable;
}
