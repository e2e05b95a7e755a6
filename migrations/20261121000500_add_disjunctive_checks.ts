import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * A check's single expected status becomes `expect`, a JSON list of alternatives of which any one must hold.
 * An old expected status N becomes [{"status": N}]; none becomes the default [{"status": "2xx"}].
 * Entries learn which alternative held (`matched`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isSqlite(db)) {
    await exec(
      db,
      `ALTER TABLE http_check_configs ADD COLUMN expect TEXT NOT NULL DEFAULT '[{"status":"2xx"}]'
         CHECK (jsonb_typeof(expect::jsonb) = 'array')`,
      `UPDATE http_check_configs SET expect = '[{"status":' || expected_status || '}]' WHERE expected_status IS NOT NULL`,
      `ALTER TABLE http_check_configs DROP COLUMN expected_status`,
      `ALTER TABLE health_check_data_entries ADD COLUMN matched INTEGER`,
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
     expect TEXT NOT NULL DEFAULT '[{"status":"2xx"}]' CHECK (json_valid(expect) AND json_type(expect) = 'array'),
     notify INTEGER NOT NULL DEFAULT 1 CHECK (notify IN (0, 1)),
     notify_threshold INTEGER NOT NULL DEFAULT 2 CHECK (notify_threshold >= 0),
     notify_topic TEXT`,
    `SELECT service_key, url, method, headers, body, interval_seconds, cron, timeout_ms, follow_redirects, verify_tls,
            CASE WHEN expected_status IS NULL THEN '[{"status":"2xx"}]'
                 ELSE json_array(json_object('status', expected_status)) END,
            notify, notify_threshold, notify_topic
     FROM http_check_configs`,
  );
  await exec(db, `ALTER TABLE health_check_data_entries ADD COLUMN matched INTEGER`);
}
