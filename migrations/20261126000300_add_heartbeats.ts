import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Kinds of check, and the first beside http: heartbeats, which jobs report to by pinging.
 * - http_check_configs holds every kind: `type` (http for every row before), the fields of a kind other than
 *   http as JSON in `probe`, and a heartbeat's `ping_key`, the secret of its ping URLs (unique).
 * - An entry says its check's type (NULL: http, as every entry before), and for a ping its kind (start,
 *   success, fail, exit, log, missed, ...), the job's exit code, the run's duration and the body it sent.
 * - A heartbeat's state, what its pings left: its last ping, the runs going (started, not finished: by run id,
 *   as JSON), the last run's duration, its last success or failure, and the due time of the last period found
 *   missed. Its due time and next deadline follow from these and its timing, so they are not stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const int64 = isSqlite(db) ? "INTEGER" : "BIGINT";
  const double = isSqlite(db) ? "REAL" : "DOUBLE PRECISION";
  await exec(
    db,
    `ALTER TABLE http_check_configs ADD COLUMN type TEXT NOT NULL DEFAULT 'http'`,
    `ALTER TABLE http_check_configs ADD COLUMN probe TEXT`,
    `ALTER TABLE http_check_configs ADD COLUMN ping_key TEXT`,
    `CREATE UNIQUE INDEX http_check_configs_by_ping_key ON http_check_configs (ping_key) WHERE ping_key IS NOT NULL`,
    `ALTER TABLE health_check_data_entries ADD COLUMN type TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN kind TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN exit_code INTEGER`,
    `ALTER TABLE health_check_data_entries ADD COLUMN duration_ms ${double}`,
    `ALTER TABLE health_check_data_entries ADD COLUMN body TEXT`,
    `ALTER TABLE service_states ADD COLUMN last_ping_at ${int64}`,
    `ALTER TABLE service_states ADD COLUMN open_runs TEXT`,
    `ALTER TABLE service_states ADD COLUMN last_duration_ms ${double}`,
    `ALTER TABLE service_states ADD COLUMN last_finish_at ${int64}`,
    `ALTER TABLE service_states ADD COLUMN missed_due_at ${int64}`,
  );
}
