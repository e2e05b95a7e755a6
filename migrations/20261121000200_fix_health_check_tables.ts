import type { Kysely } from "kysely";
import { rebuild } from "./sqlite.ts";

/**
 * The first schema let every column be NULL, let two services of one server share an id, kept no timestamps,
 * stored check times as text and lacked most of a check's request settings. This makes the columns required
 * (filling old NULLs with what they meant), adds the missing ones, and stores times as Unix milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const now = Date.now();
  await rebuild(
    db,
    "servers",
    `id TEXT PRIMARY KEY NOT NULL,
     name TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL`,
    `SELECT id, coalesce(name, id), ${now}, ${now} FROM servers WHERE id IS NOT NULL`,
  );
  await rebuild(
    db,
    "services",
    `key INTEGER PRIMARY KEY,
     server_id TEXT NOT NULL REFERENCES servers (id),
     id TEXT NOT NULL,
     name TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     UNIQUE (server_id, id)`,
    `SELECT key, server_id, id, coalesce(name, id), ${now}, ${now} FROM services
     WHERE server_id IS NOT NULL AND id IS NOT NULL
     GROUP BY server_id, id HAVING key = min(key)`,
  );
  await rebuild(
    db,
    "http_check_configs",
    `service_key INTEGER PRIMARY KEY NOT NULL REFERENCES services (key),
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
    `SELECT service_key, url, coalesce(method, 'GET'), '{}', NULL, coalesce(interval_seconds, 60), NULL,
            coalesce(timeout_ms, 10000), 1, 1, expected_status, coalesce(notify, 1), coalesce(notify_threshold, 2), NULL
     FROM http_check_configs
     WHERE url IS NOT NULL AND service_key IN (SELECT key FROM services)`,
  );
  await rebuild(
    db,
    "health_check_data_entries",
    `id INTEGER PRIMARY KEY,
     service_key INTEGER NOT NULL REFERENCES services (key),
     checked_at INTEGER NOT NULL,
     ok INTEGER NOT NULL,
     status INTEGER,
     latency_ms REAL NOT NULL,
     error_kind TEXT,
     error TEXT,
     UNIQUE (service_key, checked_at)`,
    `SELECT id, service_key, CAST(round((julianday(checked_at) - 2440587.5) * 86400000) AS INTEGER), coalesce(ok, 0),
            status, coalesce(latency_ms, 0), CASE WHEN coalesce(ok, 0) THEN NULL ELSE 'internal' END, error
     FROM health_check_data_entries
     WHERE service_key IN (SELECT key FROM services) AND julianday(checked_at) IS NOT NULL`,
  );
}
