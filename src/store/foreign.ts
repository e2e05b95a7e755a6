/**
 * Reading another tool's SQLite database (Uptime Kuma's kuma.db, for `healthd import`): opened read-only,
 * whole tables read as plain rows, closed. It lives here because src/store/ is the one place that speaks to
 * a database driver; nothing here knows what the rows mean.
 */
import Database from "better-sqlite3";

/** Every table's name, and the rows of each of `tables` that exists (one that does not is absent from `rows`). */
export function readForeignTables(file: string, tables: readonly string[]): { names: string[]; rows: Map<string, Record<string, unknown>[]> } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    const rows = new Map<string, Record<string, unknown>[]>();
    for (const table of tables) {
      if (names.includes(table)) rows.set(table, db.prepare(`SELECT * FROM "${table.replaceAll('"', '""')}"`).all() as Record<string, unknown>[]);
    }
    return { names, rows };
  } finally {
    db.close();
  }
}
