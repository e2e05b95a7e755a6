import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * Reading every service's rollups of some hours (the status page's last day, a day that just ended) walks
 * this index instead of the whole table. Updates of an hour's row leave it alone (the hour does not change).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `CREATE INDEX service_rollups_by_hour ON service_rollups (hour)`);
}
