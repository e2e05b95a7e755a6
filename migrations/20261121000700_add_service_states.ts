import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * What healthd knows of each service between checks: up or down, the consecutive failures, the last entry and
 * the open incident. It is written in the same transaction as the entry that changed it, so a restart resumes
 * where the daemon stopped. `last_entry_id` has no foreign key: retention may delete that entry.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // SQLite's INTEGER is 64-bit, and an INTEGER PRIMARY KEY is the rowid; PostgreSQL's 64-bit integer is BIGINT.
  const int64 = isSqlite(db) ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `CREATE TABLE service_states (
      service_key ${int64} PRIMARY KEY NOT NULL REFERENCES services (key) ON DELETE CASCADE,
      status TEXT NOT NULL DEFAULT 'unknown' CHECK (status IN ('up', 'down', 'unknown')),
      consecutive_failures INTEGER NOT NULL DEFAULT 0,
      last_checked_at ${int64},
      last_entry_id ${int64},
      incident_open_since ${int64}
    )`,
  );
}
