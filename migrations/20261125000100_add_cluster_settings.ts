import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * What belongs to the cluster rather than to one node's flags. First: the ntfy topic of notifications whose
 * service names none (--ntfy-topic). A node started without the flag used to keep such DOWNs unsent while the
 * others published their RECOVEREDs; now every node delivers to the topic the cluster was given.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `CREATE TABLE cluster_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)`);
}
