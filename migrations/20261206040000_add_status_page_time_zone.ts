import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * status_pages.time_zone: the IANA time zone a page tells its dates in ("Europe/Paris"); every existing page
 * keeps telling them in UTC, as it did.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `ALTER TABLE status_pages ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC'`);
}
