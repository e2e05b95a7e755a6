import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

// A check written without notify settings notifies, after more than two consecutive failures.
// The defaults live in the schema so that every writer, not only healthd's own code, gets them.
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isSqlite(db)) {
    await exec(
      db,
      `ALTER TABLE http_check_configs ALTER COLUMN notify SET DEFAULT true, ALTER COLUMN notify_threshold SET DEFAULT 2,
         ADD CONSTRAINT http_check_configs_notify_threshold_check CHECK (notify_threshold >= 0)`,
    );
    return;
  }
  await rebuild(
    db,
    "http_check_configs",
    `service_key INTEGER PRIMARY KEY NOT NULL REFERENCES services (key) ON DELETE CASCADE,
     url TEXT NOT NULL,
     method TEXT NOT NULL,
     headers TEXT NOT NULL,
     body TEXT,
     interval_seconds INTEGER,
     cron TEXT,
     timeout_ms INTEGER NOT NULL,
     follow_redirects INTEGER NOT NULL,
     verify_tls INTEGER NOT NULL,
     expected_status INTEGER,
     notify INTEGER NOT NULL DEFAULT 1 CHECK (notify IN (0, 1)),
     notify_threshold INTEGER NOT NULL DEFAULT 2 CHECK (notify_threshold >= 0),
     notify_topic TEXT`,
    `SELECT * FROM http_check_configs`,
  );
}
