import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * services.tags: the service's labels, a JSON list of lowercase words ("backups", "env:prod"); every existing
 * service has none. JSON in one column, as a server's channels are: they are read with the service, filtered in
 * memory (a few per service), and never joined on.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `ALTER TABLE services ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'`);
}
