import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * The outbox: notifications are written here in the same transaction as the check result that calls for
 * them, and a delivery loop publishes them to ntfy. A row holds the whole message, so it needs nothing
 * else to be delivered, and it outlives the service it speaks of (it is a record of what happened).
 * status: pending (to deliver, at next_attempt_at), delivered, failed (ntfy refused it), unsent (no topic).
 * in_flight_since is set while a publish is under way: found set after a crash, the delivery is in doubt
 * (ntfy may have taken it), and the delivery loop looks in ntfy's cache before sending it again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(
    db,
    `CREATE TABLE notifications (
      id INTEGER PRIMARY KEY,
      created_at INTEGER NOT NULL,
      server_id TEXT NOT NULL,
      service_id TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('down', 'recovered')),
      topic TEXT,
      message TEXT NOT NULL CHECK (json_valid(message)),
      status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'unsent')),
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at INTEGER NOT NULL,
      last_error TEXT,
      in_flight_since INTEGER,
      delivered_at INTEGER,
      ntfy_id TEXT
    )`,
    `CREATE INDEX notifications_pending ON notifications (next_attempt_at, id) WHERE status = 'pending'`,
  );
}
