import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * An incident begins at its first failed check, not when healthd said so: incidents.started_at, beside
 * opened_at (the check that crossed notifyThreshold). Every surface counts an outage from it.
 *
 * An incident recorded before this gets its start from its service's entries, where they still exist: the
 * earliest failing entry of the run of failures that ended at its opening (after the last passing result
 * before it; a heartbeat's starts and logs are not results). Where retention has removed them, its opening.
 * The column is NOT NULL on both engines: every incident written since has its start.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = isSqlite(db);
  const result = (e: string) => `(${e}.kind IS NULL OR ${e}.kind NOT IN ('start', 'log'))`;
  // The first failing entry after the last passing result before the incident opened; else its opening.
  const start = `COALESCE((
       SELECT MIN(e.checked_at) FROM health_check_data_entries e
       WHERE e.service_key = incidents.service_key AND e.ok = FALSE AND e.checked_at <= incidents.opened_at AND ${result("e")}
         AND e.checked_at > COALESCE((
           SELECT MAX(p.checked_at) FROM health_check_data_entries p
           WHERE p.service_key = incidents.service_key AND p.ok = TRUE AND p.checked_at < incidents.opened_at AND ${result("p")}
         ), -1)
     ), opened_at)`;
  if (!sqlite) {
    await exec(
      db,
      `ALTER TABLE incidents ADD COLUMN started_at BIGINT`,
      `UPDATE incidents SET started_at = ${start}`,
      `ALTER TABLE incidents ALTER COLUMN started_at SET NOT NULL`,
    );
    return;
  }
  // SQLite adds a NOT NULL column only with a default: the table is rebuilt with it (no default, as on
  // PostgreSQL: a write that forgot it fails), then its indexes made again.
  await rebuild(
    db,
    "incidents",
    `id INTEGER PRIMARY KEY,
     service_key INTEGER NOT NULL REFERENCES services (key) ON DELETE CASCADE,
     server_id TEXT NOT NULL,
     service_id TEXT NOT NULL,
     started_at INTEGER NOT NULL,
     opened_at INTEGER NOT NULL,
     closed_at INTEGER,
     failures INTEGER NOT NULL,
     first_error TEXT,
     notified INTEGER NOT NULL DEFAULT 0`,
    `SELECT id, service_key, server_id, service_id, ${start}, opened_at, closed_at, failures, first_error, notified FROM incidents`,
  );
  await exec(
    db,
    `CREATE INDEX incidents_by_service ON incidents (service_key, id)`,
    `CREATE INDEX incidents_by_name ON incidents (server_id, service_id, id)`,
    `CREATE INDEX incidents_open ON incidents (id) WHERE closed_at IS NULL`,
    `CREATE INDEX incidents_by_close ON incidents (closed_at) WHERE closed_at IS NOT NULL`,
  );
}
