/**
 * Which engine a migration runs on. Each migration does its step on either: SQLite's table rebuilds stay
 * SQLite-only inside the same file, and PostgreSQL gets the equivalent ALTERs. Like sqlite.ts, this module
 * is part of the frozen record: keep it as small and as stable as that promise needs.
 */
import { SqliteAdapter, type Kysely } from "kysely";

export function isSqlite(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof SqliteAdapter;
}
