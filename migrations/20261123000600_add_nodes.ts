import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Several nodes on one database, and checks from several locations.
 * - nodes: every `healthd serve` registers and heartbeats; a node is live while its heartbeat is younger than
 *   its lease. `instance` tells a restarted node from the process it replaces; `host` and `pid` let a node
 *   restarted after a crash see that the process its name still points to is gone.
 * - service_owners: which node runs a service's check, per pool (a location, or '*' for checks that may run
 *   anywhere). Ownership is valid while its node is live; a dead node's rows are taken over.
 * - A check may name locations and a quorum; entries say which location ran them (NULL: the default one);
 *   location_results keep each location's latest result, from which a verdict is made once per interval.
 * - notifications.claimed_by: the node instance publishing it, so that two nodes never publish one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = isSqlite(db);
  const int64 = sqlite ? "INTEGER" : "BIGINT";
  const bool = sqlite ? "INTEGER" : "BOOLEAN";
  const jsonArray = (column: string) => (sqlite ? `json_valid(${column}) AND json_type(${column}) = 'array'` : `jsonb_typeof(${column}::jsonb) = 'array'`);
  await exec(
    db,
    `CREATE TABLE nodes (
      name TEXT PRIMARY KEY,
      instance TEXT NOT NULL,
      host TEXT NOT NULL,
      pid INTEGER NOT NULL,
      location TEXT NOT NULL,
      version TEXT NOT NULL,
      started_at ${int64} NOT NULL,
      last_seen_at ${int64} NOT NULL,
      lease_ms ${int64} NOT NULL
    )`,
    `CREATE TABLE service_owners (
      service_key ${int64} NOT NULL REFERENCES services (key) ON DELETE CASCADE,
      pool TEXT NOT NULL,
      node TEXT NOT NULL,
      PRIMARY KEY (service_key, pool)
    )`,
    `CREATE INDEX service_owners_by_node ON service_owners (node)`,
    `CREATE TABLE location_results (
      service_key ${int64} NOT NULL REFERENCES services (key) ON DELETE CASCADE,
      location TEXT NOT NULL,
      checked_at ${int64} NOT NULL,
      ok ${bool} NOT NULL,
      error_kind TEXT,
      error TEXT,
      PRIMARY KEY (service_key, location)
    )`,
    `ALTER TABLE http_check_configs ADD COLUMN locations TEXT CHECK (locations IS NULL OR (${jsonArray("locations")}))`,
    `ALTER TABLE http_check_configs ADD COLUMN quorum INTEGER CHECK (quorum >= 1)`,
    `ALTER TABLE health_check_data_entries ADD COLUMN location TEXT`,
    `ALTER TABLE service_states ADD COLUMN last_verdict_at ${int64}`,
    `ALTER TABLE notifications ADD COLUMN claimed_by TEXT`,
  );
}
