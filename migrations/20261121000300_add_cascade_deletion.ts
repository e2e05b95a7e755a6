import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

// Deleting a server or a service deletes every row that references it, instead of failing or leaving orphans.
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isSqlite(db)) {
    const cascade = (table: string, column: string, parent: string) =>
      `ALTER TABLE ${table} DROP CONSTRAINT ${table}_${column}_fkey,
         ADD CONSTRAINT ${table}_${column}_fkey FOREIGN KEY (${column}) REFERENCES ${parent} ON DELETE CASCADE`;
    await exec(
      db,
      cascade("services", "server_id", "servers (id)"),
      cascade("http_check_configs", "service_key", "services (key)"),
      cascade("health_check_data_entries", "service_key", "services (key)"),
    );
    return;
  }
  await rebuild(
    db,
    "services",
    `key INTEGER PRIMARY KEY,
     server_id TEXT NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
     id TEXT NOT NULL,
     name TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     UNIQUE (server_id, id)`,
    `SELECT key, server_id, id, name, created_at, updated_at FROM services`,
  );
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
     notify INTEGER NOT NULL,
     notify_threshold INTEGER NOT NULL,
     notify_topic TEXT`,
    `SELECT * FROM http_check_configs`,
  );
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
     UNIQUE (service_key, checked_at)`,
    `SELECT * FROM health_check_data_entries`,
  );
}
