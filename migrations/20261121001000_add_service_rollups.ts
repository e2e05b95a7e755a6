import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Hourly rollups per service, which outlive the raw entries: checks, failures, the latency sum and a latency
 * sketch (log-scale buckets, JSON {bucket: count}) good for p50/p95. Keyed by service and hour without a rowid,
 * so a service's hours sit together and reading a window is one range.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isSqlite(db)) {
    await exec(
      db,
      `CREATE TABLE service_rollups (
        service_key BIGINT NOT NULL REFERENCES services (key) ON DELETE CASCADE,
        hour BIGINT NOT NULL,
        checks INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        latency_sum DOUBLE PRECISION NOT NULL,
        sketch TEXT NOT NULL CHECK (jsonb_typeof(sketch::jsonb) = 'object'),
        PRIMARY KEY (service_key, hour)
      )`,
    );
    return;
  }
  await exec(
    db,
    `CREATE TABLE service_rollups (
      service_key INTEGER NOT NULL REFERENCES services (key) ON DELETE CASCADE,
      hour INTEGER NOT NULL,
      checks INTEGER NOT NULL,
      failures INTEGER NOT NULL,
      latency_sum REAL NOT NULL,
      sketch TEXT NOT NULL CHECK (json_valid(sketch)),
      PRIMARY KEY (service_key, hour)
    ) WITHOUT ROWID`,
  );
}
