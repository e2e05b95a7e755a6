import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * The first schema let every column be NULL, let two services of one server share an id, kept no timestamps,
 * stored check times as text and lacked most of a check's request settings. This makes the columns required
 * (filling old NULLs with what they meant), adds the missing ones, and stores times as Unix milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const now = Date.now();
  if (!isSqlite(db)) return upPostgres(db, now);
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

/** The same step in place: what SQLite's rebuilds drop (rows without their keys, repeats) is deleted first. */
async function upPostgres(db: Kysely<unknown>, now: number): Promise<void> {
  // A service without its server or id, or a repeat of an earlier (server, id), goes with its check and entries.
  const doomed = `SELECT key FROM services s WHERE server_id IS NULL OR id IS NULL
    OR EXISTS (SELECT 1 FROM services o WHERE o.server_id = s.server_id AND o.id = s.id AND o.key < s.key)`;
  // What SQLite's julianday() reads as a time; anything else is dropped, as there.
  const hasZone = String.raw`'(Z|[+-]\d{2}(:?\d{2})?)$'`;
  const isoTime = String.raw`'^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}(:?\d{2})?)?$'`;
  await exec(
    db,
    `UPDATE servers SET name = id WHERE name IS NULL`,
    `ALTER TABLE servers ALTER COLUMN name SET NOT NULL,
       ADD COLUMN created_at BIGINT NOT NULL DEFAULT ${now}, ADD COLUMN updated_at BIGINT NOT NULL DEFAULT ${now}`,
    `ALTER TABLE servers ALTER COLUMN created_at DROP DEFAULT, ALTER COLUMN updated_at DROP DEFAULT`,

    `DELETE FROM health_check_data_entries WHERE service_key IS NULL OR service_key IN (${doomed})`,
    `DELETE FROM http_check_configs WHERE service_key IN (${doomed})`,
    `DELETE FROM services WHERE key IN (${doomed})`,
    `UPDATE services SET name = id WHERE name IS NULL`,
    `ALTER TABLE services ALTER COLUMN server_id SET NOT NULL, ALTER COLUMN id SET NOT NULL, ALTER COLUMN name SET NOT NULL,
       ADD COLUMN created_at BIGINT NOT NULL DEFAULT ${now}, ADD COLUMN updated_at BIGINT NOT NULL DEFAULT ${now},
       ADD CONSTRAINT services_server_id_id_key UNIQUE (server_id, id)`,
    `ALTER TABLE services ALTER COLUMN created_at DROP DEFAULT, ALTER COLUMN updated_at DROP DEFAULT`,

    `DELETE FROM http_check_configs WHERE url IS NULL`,
    `UPDATE http_check_configs SET method = coalesce(method, 'GET'), interval_seconds = coalesce(interval_seconds, 60),
       timeout_ms = coalesce(timeout_ms, 10000), notify = coalesce(notify, true), notify_threshold = coalesce(notify_threshold, 2)`,
    `ALTER TABLE http_check_configs ALTER COLUMN url SET NOT NULL, ALTER COLUMN method SET NOT NULL,
       ALTER COLUMN timeout_ms SET NOT NULL, ALTER COLUMN notify SET NOT NULL, ALTER COLUMN notify_threshold SET NOT NULL,
       ADD COLUMN headers TEXT NOT NULL DEFAULT '{}', ADD COLUMN body TEXT, ADD COLUMN cron TEXT, ADD COLUMN notify_topic TEXT,
       ADD COLUMN follow_redirects BOOLEAN NOT NULL DEFAULT true, ADD COLUMN verify_tls BOOLEAN NOT NULL DEFAULT true`,
    `ALTER TABLE http_check_configs ALTER COLUMN headers DROP DEFAULT, ALTER COLUMN follow_redirects DROP DEFAULT,
       ALTER COLUMN verify_tls DROP DEFAULT`,

    `DELETE FROM health_check_data_entries WHERE checked_at IS NULL OR checked_at !~ ${isoTime}`,
    `ALTER TABLE health_check_data_entries ADD COLUMN error_kind TEXT`,
    `UPDATE health_check_data_entries SET ok = coalesce(ok, false), latency_ms = coalesce(latency_ms, 0),
       error_kind = CASE WHEN coalesce(ok, false) THEN NULL ELSE 'internal' END`,
    // A time without a zone is UTC, as julianday() reads it.
    `ALTER TABLE health_check_data_entries
       ALTER COLUMN checked_at TYPE BIGINT USING round(extract(epoch FROM
         CASE WHEN checked_at ~ ${hasZone} THEN checked_at::timestamptz
              ELSE checked_at::timestamp AT TIME ZONE 'UTC' END) * 1000)::bigint,
       ALTER COLUMN service_key SET NOT NULL, ALTER COLUMN checked_at SET NOT NULL, ALTER COLUMN ok SET NOT NULL,
       ALTER COLUMN latency_ms SET NOT NULL`,
  );
}
