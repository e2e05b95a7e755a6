/**
 * `healthd copy`: a whole database from one store to another (SQLite to PostgreSQL is how a user outgrows
 * the embedded engine), table by table in key order, in batches, inside one transaction of the destination:
 * a copy that fails leaves the destination as empty as it was. Ids are kept, so cursors and references hold.
 */
import { sql, type Kysely } from "kysely";
import type { KyselyStore } from "./kysely-store.ts";
import type { BulkInsert } from "./queries/bulk.ts";
import type { Tables } from "./tables.ts";

interface TableCopy<T extends keyof Tables> extends BulkInsert<T> {
  /** The primary key, in order: batches walk it. */
  readonly key: readonly (keyof Tables[T] & string)[];
  /** An identity column whose sequence must follow the copied ids (PostgreSQL). */
  readonly identity?: keyof Tables[T] & string;
}

const table = <T extends keyof Tables>(copy: TableCopy<T>) => copy as unknown as TableCopy<keyof Tables>;

/**
 * Every table, parents before children. A new table is added here with its migration. Not copied: nodes and
 * service_owners, which say which running processes share the database now (the copy's own nodes register).
 */
const tables = [
  table({
    table: "servers",
    key: ["id"],
    columns: [
      ["id", "text"], ["name", "text"], ["created_at", "bigint"], ["updated_at", "bigint"], ["maintenance", "text"], ["channels", "text"],
      ["ping_key", "text"], ["auto_provision", "boolean"], ["heartbeat_defaults", "text"], ["group_threshold", "integer"],
      ["escalate", "text"],
    ],
  }),
  table({
    table: "channels",
    key: ["name"],
    columns: [["name", "text"], ["type", "text"], ["config", "text"], ["events", "text"], ["created_at", "bigint"], ["updated_at", "bigint"]],
  }),
  table({
    table: "services",
    key: ["key"],
    identity: "key",
    columns: [["key", "bigint"], ["server_id", "text"], ["id", "text"], ["name", "text"], ["tags", "text"], ["created_at", "bigint"], ["updated_at", "bigint"]],
  }),
  table({
    table: "http_check_configs",
    key: ["service_key"],
    columns: [
      ["service_key", "bigint"], ["url", "text"], ["method", "text"], ["headers", "text"], ["body", "text"], ["interval_seconds", "integer"],
      ["cron", "text"], ["timeout_ms", "integer"], ["follow_redirects", "boolean"], ["verify_tls", "boolean"], ["expect", "text"],
      ["notify", "boolean"], ["notify_threshold", "integer"], ["notify_topic", "text"], ["paused", "boolean"], ["recover_threshold", "integer"],
      ["remind_every_minutes", "integer"], ["cert_warn_days", "integer"], ["depends_on", "text"], ["locations", "text"], ["quorum", "integer"],
      ["type", "text"], ["probe", "text"], ["ping_key", "text"], ["slow_ms", "integer"], ["notify_slow", "boolean"], ["domain_warn_days", "integer"],
      ["domain", "text"], ["channels", "text"], ["sla_target", "double precision"], ["push_token", "text"], ["gatus_key", "text"], ["escalate", "text"],
    ],
  }),
  table({
    table: "server_storms",
    key: ["id"],
    identity: "id",
    columns: [["id", "bigint"], ["server_id", "text"], ["opened_at", "bigint"], ["members", "text"], ["closed_at", "bigint"]],
  }),
  table({
    table: "incidents",
    key: ["id"],
    identity: "id",
    columns: [
      ["id", "bigint"], ["service_key", "bigint"], ["server_id", "text"], ["service_id", "text"], ["started_at", "bigint"], ["opened_at", "bigint"],
      ["closed_at", "bigint"], ["failures", "integer"], ["first_error", "text"], ["notified", "boolean"], ["acked_at", "bigint"], ["acked_by", "text"],
      ["ack_note", "text"], ["escalated_to", "text"],
    ],
  }),
  table({
    table: "incident_escalations",
    key: ["incident_id", "step"],
    columns: [["incident_id", "bigint"], ["step", "integer"], ["sent_at", "bigint"]],
  }),
  table({
    table: "silences",
    key: ["id"],
    identity: "id",
    columns: [
      ["id", "bigint"], ["server_id", "text"], ["service_id", "text"], ["starts_at", "bigint"], ["ends_at", "bigint"], ["reason", "text"],
      ["created_at", "bigint"],
    ],
  }),
  table({
    table: "service_states",
    key: ["service_key"],
    columns: [
      ["service_key", "bigint"], ["status", "text"], ["consecutive_failures", "integer"], ["last_checked_at", "bigint"],
      ["last_entry_id", "bigint"], ["incident_open_since", "bigint"], ["failing_since", "bigint"], ["consecutive_passes", "integer"],
      ["incident_id", "bigint"], ["incident_failures", "integer"], ["down_sent", "boolean"], ["last_reminded_at", "bigint"],
      ["cert_warned_expiry", "bigint"], ["last_verdict_at", "bigint"], ["last_ping_at", "bigint"], ["open_runs", "text"],
      ["last_duration_ms", "double precision"], ["last_finish_at", "bigint"], ["missed_due_at", "bigint"], ["slow_streak", "integer"],
      ["slow_sent", "boolean"], ["domain_warned_expiry", "bigint"], ["overdue_runs", "text"],
    ],
  }),
  table({
    table: "health_check_data_entries",
    key: ["id"],
    identity: "id",
    columns: [
      ["id", "bigint"], ["service_key", "bigint"], ["checked_at", "bigint"], ["ok", "boolean"], ["status", "integer"],
      ["latency_ms", "double precision"], ["error_kind", "text"], ["error", "text"], ["matched", "integer"], ["location", "text"],
      ["type", "text"], ["kind", "text"], ["exit_code", "integer"], ["duration_ms", "double precision"], ["body", "text"], ["answers", "text"],
      ["method", "text"], ["user_agent", "text"], ["remote_addr", "text"], ["scheme", "text"], ["rid", "text"],
    ],
  }),
  table({
    table: "service_rollups",
    key: ["service_key", "hour"],
    columns: [
      ["service_key", "bigint"], ["hour", "bigint"], ["checks", "integer"], ["failures", "integer"], ["latency_sum", "double precision"],
      ["sketch", "text"], ["silenced_checks", "integer"], ["silenced_failures", "integer"], ["slow_checks", "integer"],
    ],
  }),
  table({
    table: "notifications",
    key: ["id"],
    identity: "id",
    columns: [
      ["id", "bigint"], ["created_at", "bigint"], ["server_id", "text"], ["service_id", "text"], ["kind", "text"], ["topic", "text"],
      ["message", "text"], ["status", "text"], ["attempts", "integer"], ["next_attempt_at", "bigint"], ["last_error", "text"],
      ["in_flight_since", "bigint"], ["delivered_at", "bigint"], ["remote_id", "text"], ["incident_id", "bigint"], ["claimed_by", "text"],
      ["channel", "text"], ["event", "text"],
    ],
  }),
  table({
    table: "cluster_settings",
    key: ["name"],
    columns: [["name", "text"], ["value", "text"]],
  }),
  table({
    table: "location_results",
    key: ["service_key", "location"],
    columns: [["service_key", "bigint"], ["location", "text"], ["checked_at", "bigint"], ["ok", "boolean"], ["error_kind", "text"], ["error", "text"]],
  }),
  table({
    table: "domain_registrations",
    key: ["domain"],
    columns: [["domain", "text"], ["expires_at", "bigint"], ["looked_up_at", "bigint"], ["problem", "text"]],
  }),
  table({
    table: "tokens",
    key: ["id"],
    identity: "id",
    columns: [["id", "bigint"], ["name", "text"], ["scope", "text"], ["servers", "text"], ["hash", "text"], ["created_at", "bigint"]],
  }),
  table({
    table: "announcements",
    key: ["id"],
    identity: "id",
    columns: [
      ["id", "bigint"], ["title", "text"], ["message", "text"], ["severity", "text"], ["servers", "text"], ["starts_at", "bigint"], ["ends_at", "bigint"],
      ["created_at", "bigint"], ["updated_at", "bigint"],
    ],
  }),
  table({
    table: "announcement_updates",
    key: ["id"],
    identity: "id",
    columns: [["id", "bigint"], ["announcement_id", "bigint"], ["message", "text"], ["severity", "text"], ["created_at", "bigint"]],
  }),
  table({
    table: "status_pages",
    key: ["slug"],
    columns: [
      ["slug", "text"], ["title", "text"], ["description", "text"], ["servers", "text"], ["public", "boolean"], ["created_at", "bigint"], ["updated_at", "bigint"],
      ["sections", "text"], ["accent_color", "text"], ["footer_links", "text"], ["show_uptime", "boolean"], ["show_latency", "boolean"], ["show_history", "boolean"],
      ["time_zone", "text"],
    ],
  }),
  table({
    table: "status_page_logos",
    key: ["slug"],
    columns: [["slug", "text"], ["type", "text"], ["data", "text"], ["updated_at", "bigint"]],
  }),
  table({
    table: "status_page_hostnames",
    key: ["hostname"],
    columns: [["hostname", "text"], ["slug", "text"]],
  }),
  table({
    table: "sessions",
    key: ["hash"],
    columns: [["hash", "text"], ["token_hash", "text"], ["expires_at", "bigint"], ["created_at", "bigint"]],
  }),
];

export interface CopyProgress {
  readonly table: string;
  readonly copied: number;
  readonly total: number;
}

/** Thrown when the destination already holds data: nothing was written. */
export class DestinationNotEmpty extends Error {}

/** Copy everything from `from` to `to` (migrated, empty). Answers the rows copied per table. */
export async function copyDatabase(
  from: KyselyStore,
  to: KyselyStore,
  options: { batch?: number; onProgress?: (progress: CopyProgress) => void } = {},
): Promise<Record<string, number>> {
  const batch = options.batch ?? 5000;
  const source = from.backend.db;
  const destination = to.backend;
  for (const { table: name } of tables) {
    if ((await count(destination.db, name)) > 0) {
      throw new DestinationNotEmpty(`${to.location} is not empty (table ${name} has rows); copy only into a new, migrated database`);
    }
  }
  return destination.write(async (trx) => {
    const copied: Record<string, number> = {};
    for (const spec of tables) {
      const total = await count(source, spec.table);
      let done = 0;
      let after: Record<string, unknown> | undefined;
      options.onProgress?.({ table: spec.table, copied: 0, total });
      for (;;) {
        const rows = await page(source, spec, after, batch);
        if (rows.length === 0) break;
        await destination.bulkInsert(trx, spec, rows.map((row) => values(spec, row)));
        done += rows.length;
        after = rows.at(-1);
        options.onProgress?.({ table: spec.table, copied: done, total });
      }
      copied[spec.table] = done;
      if (spec.identity && done > 0) await destination.followIdentity(trx, spec.table, spec.identity);
    }
    return copied;
  });
}

async function count(db: Kysely<Tables>, name: keyof Tables): Promise<number> {
  const row = await db.selectFrom(name).select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The next `limit` rows after `after` in key order (keyset: the key of the last row of the previous page). */
async function page(db: Kysely<Tables>, spec: TableCopy<keyof Tables>, after: Record<string, unknown> | undefined, limit: number) {
  const [first, second] = spec.key as unknown as [string, string?];
  let query = db.selectFrom(spec.table).selectAll();
  if (after) {
    const a = (name: string) => sql`${sql.ref(name)}`;
    const v = (name: string) => after[name];
    query = query.where(
      second === undefined
        ? sql<boolean>`${a(first)} > ${v(first)}`
        : sql<boolean>`(${a(first)} > ${v(first)} or (${a(first)} = ${v(first)} and ${a(second)} > ${v(second)}))`,
    );
  }
  query = query.orderBy(sql.ref(first));
  if (second !== undefined) query = query.orderBy(sql.ref(second));
  return (await query.limit(limit).execute()) as Record<string, unknown>[];
}

/** A source row's values in the columns' order, booleans as booleans whichever engine stored them. */
function values(spec: TableCopy<keyof Tables>, row: Record<string, unknown>): unknown[] {
  // A column a migration added and this list lacks would be lost without a word: refuse instead.
  const missing = Object.keys(row).filter((name) => !spec.columns.some(([column]) => column === name));
  if (missing.length > 0) throw new Error(`copy.ts does not list column ${missing.join(", ")} of table ${spec.table}; add it with its migration`);
  return spec.columns.map(([name, type]) => {
    const value = row[name];
    return type === "boolean" && value !== null && value !== undefined ? Boolean(value) : value;
  });
}
