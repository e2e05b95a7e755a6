import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Channels: named destinations of notifications beyond the daemon's ntfy server.
 *
 * - channels: each one's `type`, its fields as written (`config`, JSON; a `${NAME}` stays as written and is read
 *   from the environment when a message is sent) and the events it takes (`events`, JSON; null: all).
 * - servers and http_check_configs: `channels`, the names their notifications go to (JSON; null: the next level's).
 * - notifications: each row is now one delivery of a notification to one `channel`; the rows of one notification
 *   share its `event` (JSON of what templates may say, with the notification's id, which is the idempotency key).
 *   Rows written before have no event and go to `ntfy`, the channel the daemon's --ntfy-* flags make: pending
 *   ones are delivered there as before. `ntfy_id` becomes `remote_id`: what any destination answered.
 * - Deliveries are claimed in order per channel and service, oldest first: one index walks a channel's pending
 *   deliveries by age, the other finds whether one is the oldest of its service (queries/outbox.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const int64 = isSqlite(db) ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `CREATE TABLE channels (
      name TEXT PRIMARY KEY,
      type TEXT NOT NULL,
      config TEXT NOT NULL,
      events TEXT,
      created_at ${int64} NOT NULL,
      updated_at ${int64} NOT NULL
    )`,
    `ALTER TABLE servers ADD COLUMN channels TEXT`,
    `ALTER TABLE http_check_configs ADD COLUMN channels TEXT`,
    `ALTER TABLE notifications ADD COLUMN channel TEXT NOT NULL DEFAULT 'ntfy'`,
    `ALTER TABLE notifications ADD COLUMN event TEXT`,
    `ALTER TABLE notifications RENAME COLUMN ntfy_id TO remote_id`,
    `CREATE INDEX notifications_by_channel ON notifications (channel, id) WHERE status = 'pending'`,
    `CREATE INDEX notifications_heads ON notifications (channel, server_id, service_id, id) WHERE status = 'pending'`,
  );
}
