import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec, rebuild } from "./sqlite.ts";

/**
 * Responding to incidents: acknowledgements and escalation.
 *
 * - incidents: `acked_at`, `acked_by` (a token's name, or "link" / "ntfy" for the notification's own paths) and
 *   `ack_note`. Set once, by a write conditional on `acked_at IS NULL AND closed_at IS NULL`. And
 *   `escalated_to`, JSON list of the channels its escalation steps went to: its RECOVERED goes there too.
 * - servers and http_check_configs: `escalate`, JSON list of {afterMinutes, channels} (null: none; a check's
 *   overrides its server's).
 * - incident_escalations: the escalation steps sent, one row per (incident, step): the key is what lets one node
 *   only send a step, however many look at once.
 * - notifications: two more kinds, `ack` and `escalation`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = isSqlite(db);
  const int64 = sqlite ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `ALTER TABLE incidents ADD COLUMN acked_at ${int64}`,
    `ALTER TABLE incidents ADD COLUMN acked_by TEXT`,
    `ALTER TABLE incidents ADD COLUMN ack_note TEXT`,
    `ALTER TABLE incidents ADD COLUMN escalated_to TEXT`,
    `ALTER TABLE servers ADD COLUMN escalate TEXT`,
    `ALTER TABLE http_check_configs ADD COLUMN escalate TEXT`,
    `CREATE TABLE incident_escalations (
       incident_id ${int64} NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
       step INTEGER NOT NULL,
       sent_at ${int64} NOT NULL,
       PRIMARY KEY (incident_id, step)
     )`,
  );
  const kinds = `kind IN ('down', 'recovered', 'reminder', 'cert', 'slow', 'normal', 'domain', 'ack', 'escalation')`;
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
     remote_id TEXT,
     incident_id INTEGER,
     claimed_by TEXT,
     channel TEXT NOT NULL DEFAULT 'ntfy',
     event TEXT`,
    `SELECT id, created_at, server_id, service_id, kind, topic, message, status, attempts, next_attempt_at, last_error,
            in_flight_since, delivered_at, remote_id, incident_id, claimed_by, channel, event FROM notifications`,
  );
  await exec(
    db,
    `CREATE INDEX notifications_pending ON notifications (next_attempt_at, id) WHERE status = 'pending'`,
    `CREATE INDEX notifications_unsent ON notifications (id) WHERE status = 'unsent'`,
    `CREATE INDEX notifications_by_channel ON notifications (channel, id) WHERE status = 'pending'`,
    `CREATE INDEX notifications_heads ON notifications (channel, server_id, service_id, id) WHERE status = 'pending'`,
  );
}
