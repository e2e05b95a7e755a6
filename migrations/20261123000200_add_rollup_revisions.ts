import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * A counter that moves whenever results are added to an hour that has been over for a while (results a
 * daemon kept through a database outage, or that another node stored late): whoever keeps past hours or days
 * in memory (the status page) reads it to know when to read them again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(
    db,
    `CREATE TABLE rollup_revisions (id INTEGER PRIMARY KEY CHECK (id = 1), revision ${isSqlite(db) ? "INTEGER" : "BIGINT"} NOT NULL)`,
    `INSERT INTO rollup_revisions (id, revision) VALUES (1, 0)`,
  );
}
