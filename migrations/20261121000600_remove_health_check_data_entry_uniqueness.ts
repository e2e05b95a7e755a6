import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * Two results of one service may carry the same time (a manual check beside a scheduled one, a clock step),
 * and both are real: entries have no uniqueness constraint. The unique index also served reading a service's
 * entries; an index on (service_key, id) replaces it, which keeps the newest page fast at any table size.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isSqlite(db)) {
    await exec(
      db,
      `ALTER TABLE health_check_data_entries DROP CONSTRAINT health_check_data_entries_service_key_checked_at_key`,
      `CREATE INDEX health_check_data_entries_by_service ON health_check_data_entries (service_key, id)`,
    );
    return;
  }
  await rebuild(
    db,
    "health_check_data_entries",
    `id INTEGER PRIMARY KEY,
     service_key INTEGER NOT NULL REFERENCES services (key) ON DELETE CASCADE,
     checked_at INTEGER NOT NULL,
     ok INTEGER NOT NULL,
     status INTEGER,
     latency_ms REAL NOT NULL,
     error_kind TEXT,
     error TEXT,
     matched INTEGER`,
    `SELECT id, service_key, checked_at, ok, status, latency_ms, error_kind, error, matched FROM health_check_data_entries`,
  );
  await exec(
    db,
    `CREATE INDEX health_check_data_entries_by_service ON health_check_data_entries (service_key, id)`,
  );
}
