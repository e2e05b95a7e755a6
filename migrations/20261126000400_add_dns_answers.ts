import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * TCP and DNS checks. Their own fields go where a heartbeat's do (`probe`, as JSON; the kinds share the active
 * columns: schedule, timeout, locations, expect), so only the entry gains a column: a dns check's answers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `ALTER TABLE health_check_data_entries ADD COLUMN answers TEXT`);
}
