import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * A heartbeat's runs already reported as too long and not finished yet (JSON {runId: startedAt}), beside its
 * runs going: when such a run finishes at last, its entry still carries its duration, start to finish.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(db, `ALTER TABLE service_states ADD COLUMN overdue_runs TEXT`);
}
