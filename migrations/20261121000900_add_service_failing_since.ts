import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

// When the current run of failures began, so a notification can say "failing since".
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `ALTER TABLE service_states ADD COLUMN failing_since ${isSqlite(db) ? "INTEGER" : "BIGINT"}`);
}
