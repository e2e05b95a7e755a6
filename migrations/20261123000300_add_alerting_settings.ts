import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * What a check may say about its alerts (paused, how many passes close an incident, reminders, a warning
 * before its certificate expires, the services it depends on) and a server's recurring maintenance windows.
 * Every default is the schema's, so rows written before keep meaning what they meant.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const sqlite = isSqlite(db);
  const paused = sqlite ? "INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))" : "BOOLEAN NOT NULL DEFAULT false";
  const jsonArray = (column: string) => (sqlite ? `json_valid(${column}) AND json_type(${column}) = 'array'` : `jsonb_typeof(${column}::jsonb) = 'array'`);
  await exec(
    db,
    `ALTER TABLE http_check_configs ADD COLUMN paused ${paused}`,
    `ALTER TABLE http_check_configs ADD COLUMN recover_threshold INTEGER NOT NULL DEFAULT 1 CHECK (recover_threshold >= 1)`,
    `ALTER TABLE http_check_configs ADD COLUMN remind_every_minutes INTEGER CHECK (remind_every_minutes >= 1)`,
    `ALTER TABLE http_check_configs ADD COLUMN cert_warn_days INTEGER CHECK (cert_warn_days >= 0)`,
    `ALTER TABLE http_check_configs ADD COLUMN depends_on TEXT NOT NULL DEFAULT '[]' CHECK (${jsonArray("depends_on")})`,
    `ALTER TABLE servers ADD COLUMN maintenance TEXT NOT NULL DEFAULT '[]' CHECK (${jsonArray("maintenance")})`,
  );
}
