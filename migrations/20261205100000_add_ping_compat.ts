import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Healthchecks.io's ping API in full: slug URLs, auto-provisioning, and what each ping came with.
 *
 * - servers.ping_key: the first segment of its slug URLs (`/ping/{pingKey}/{serviceId}`), 22 characters of
 *   a-z 0-9 as Healthchecks.io makes a project's; unique. Existing servers are given one here.
 * - servers.auto_provision: a slug URL's `?create=1` may make a heartbeat (false unless set);
 *   servers.heartbeat_defaults: the JSON of the heartbeat check it makes (null: a daily one).
 * - health_check_data_entries.method, user_agent, remote_addr, scheme, rid: how a heartbeat's ping came
 *   (null for every other entry).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const bool = isSqlite(db) ? "INTEGER NOT NULL DEFAULT 0" : "BOOLEAN NOT NULL DEFAULT FALSE";
  await exec(
    db,
    `ALTER TABLE servers ADD COLUMN ping_key TEXT`,
    `ALTER TABLE servers ADD COLUMN auto_provision ${bool}`,
    `ALTER TABLE servers ADD COLUMN heartbeat_defaults TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN method TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN user_agent TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN remote_addr TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN scheme TEXT`,
    `ALTER TABLE health_check_data_entries ADD COLUMN rid TEXT`,
  );
  const servers = await sql<{ id: string }>`SELECT id FROM servers`.execute(db);
  for (const { id } of servers.rows) await sql`UPDATE servers SET ping_key = ${serverPingKey()} WHERE id = ${id}`.execute(db);
  await exec(db, `CREATE UNIQUE INDEX servers_by_ping_key ON servers (ping_key)`);
}

/** 22 characters of a-z 0-9 (about 113 bits), as Healthchecks.io's project ping keys are. */
function serverPingKey(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let key = "";
  while (key.length < 22) for (const byte of randomBytes(32)) if (byte < 252 && key.length < 22) key += alphabet[byte % 36];
  return key;
}
