import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * PostgreSQL only (SQLite has no such setting): leave room in the pages of the rows that checks rewrite, so
 * that an update can put a row's new version in the same page (a HOT update: no new entry in any index, and
 * the old version reclaimed in place) instead of in another page with an entry in every index.
 * - service_states and location_results: one row per service (and location), rewritten by every check. Half of
 *   each page is left free; the tables stay small whatever the fill.
 * - service_rollups: a row is rewritten through its hour, then kept for a year. 30% free keeps most updates
 *   HOT at 1.4 times the space of full pages for the settled hours.
 * Measured storing batches of 500 over 10,000 services: HOT updates 10% -> 99% (states) and 79% (rollups),
 * PostgreSQL's CPU 25.5 -> 21.4 us an entry, and both tables smaller, not larger, under the rewrites (dead
 * versions pruned in the page instead of left behind). Pages written before this keep their fill.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (isSqlite(db)) return;
  await exec(
    db,
    `ALTER TABLE service_states SET (fillfactor = 50)`,
    `ALTER TABLE location_results SET (fillfactor = 50)`,
    `ALTER TABLE service_rollups SET (fillfactor = 70)`,
  );
}
