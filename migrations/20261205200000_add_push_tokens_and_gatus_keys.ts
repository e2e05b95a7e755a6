import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

/**
 * The addresses other tools gave a heartbeat, so that a job written for them keeps working unchanged:
 * - http_check_configs.push_token: Uptime Kuma's push token (/api/push/{push_token}), unique.
 * - http_check_configs.gatus_key: Gatus's external-endpoint key (/api/v1/endpoints/{gatus_key}/external), unique.
 * Both are looked up by a ping, so each has a unique index over the rows that have one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(
    db,
    `ALTER TABLE http_check_configs ADD COLUMN push_token TEXT`,
    `ALTER TABLE http_check_configs ADD COLUMN gatus_key TEXT`,
    `CREATE UNIQUE INDEX http_check_configs_by_push_token ON http_check_configs (push_token) WHERE push_token IS NOT NULL`,
    `CREATE UNIQUE INDEX http_check_configs_by_gatus_key ON http_check_configs (gatus_key) WHERE gatus_key IS NOT NULL`,
  );
}
