import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * A slow state that is not down, and warnings of a domain's registration running out.
 *
 * A check that passes but takes longer than its `slow_ms` counts as slow.
 * - http_check_configs: `slow_ms` (null: never slow) and `notify_slow` (SLOW and back-to-normal notices).
 * - service_states: how many slow passes in a row (`slow_streak`), and whether a SLOW notice went out for them
 *   (`slow_sent`), which a back-to-normal notice answers.
 * - service_rollups: the slow checks of the hour, for /stats.
 *
 * A check with `domain_warn_days` warns (DOMAIN) when the registration of its `domain` (the registered domain of
 * its host, kept with the check) expires sooner; `domain_registrations` caches what RDAP said of each domain,
 * looked up at most once a day, and the state keeps the expiry last warned of, as for certificates.
 *
 * notifications: three more kinds, `slow`, `normal` and `domain`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = isSqlite(db);
  const bool = sqlite ? "INTEGER NOT NULL DEFAULT 0" : "BOOLEAN NOT NULL DEFAULT false";
  const int64 = sqlite ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `ALTER TABLE http_check_configs ADD COLUMN slow_ms INTEGER`,
    `ALTER TABLE http_check_configs ADD COLUMN notify_slow ${bool}`,
    `ALTER TABLE service_states ADD COLUMN slow_streak INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE service_states ADD COLUMN slow_sent ${bool}`,
    `ALTER TABLE service_rollups ADD COLUMN slow_checks INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE http_check_configs ADD COLUMN domain_warn_days INTEGER`,
    `ALTER TABLE http_check_configs ADD COLUMN domain TEXT`,
    `ALTER TABLE service_states ADD COLUMN domain_warned_expiry ${int64}`,
    `CREATE TABLE domain_registrations (
       domain TEXT PRIMARY KEY,
       expires_at ${int64},
       looked_up_at ${int64} NOT NULL,
       problem TEXT
     )`,
  );
  const kinds = `kind IN ('down', 'recovered', 'reminder', 'cert', 'slow', 'normal', 'domain')`;
  if (!sqlite) {
    await exec(db, `ALTER TABLE notifications DROP CONSTRAINT notifications_kind_check, ADD CONSTRAINT notifications_kind_check CHECK (${kinds})`);
    return;
  }
  // SQLite cannot change a CHECK in place: the outbox is rebuilt as it is, with the new kinds, and its indexes.
  await rebuild(
    db,
    "notifications",
    `id INTEGER PRIMARY KEY,
     created_at INTEGER NOT NULL,
     server_id TEXT NOT NULL,
     service_id TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (${kinds}),
     topic TEXT,
     message TEXT NOT NULL CHECK (json_valid(message)),
     status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'unsent')),
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER NOT NULL,
     last_error TEXT,
     in_flight_since INTEGER,
     delivered_at INTEGER,
     ntfy_id TEXT,
     incident_id INTEGER,
     claimed_by TEXT`,
    `SELECT id, created_at, server_id, service_id, kind, topic, message, status, attempts, next_attempt_at, last_error,
            in_flight_since, delivered_at, ntfy_id, incident_id, claimed_by FROM notifications`,
  );
  await exec(
    db,
    `CREATE INDEX notifications_pending ON notifications (next_attempt_at, id) WHERE status = 'pending'`,
    `CREATE INDEX notifications_unsent ON notifications (id) WHERE status = 'unsent'`,
  );
}
