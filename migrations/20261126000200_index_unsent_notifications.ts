import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * The notifications kept unsent for want of a topic, which every change of configuration looks for (it may have
 * given one): found without reading the whole outbox, which only grows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `CREATE INDEX notifications_unsent ON notifications (id) WHERE status = 'unsent'`);
}
