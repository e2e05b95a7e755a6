import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Browser sessions of the sign-in page: the SHA-256 of the cookie's secret, the SHA-256 of the token signed in
 * with (so that revoking the token ends its sessions at once), and when it expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const int64 = isSqlite(db) ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `CREATE TABLE sessions (
      hash TEXT PRIMARY KEY,
      token_hash TEXT NOT NULL,
      expires_at ${int64} NOT NULL,
      created_at ${int64} NOT NULL
    )`,
    `CREATE INDEX sessions_by_expiry ON sessions (expires_at)`,
  );
}
