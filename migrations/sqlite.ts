/**
 * What the migrations share. SQLite cannot alter a constraint in place, so a constraint change rebuilds the
 * table: create the new shape under a temporary name, copy the rows, drop the old table, rename the new one
 * (https://sqlite.org/lang_altertable.html#otheralter). The migration runner switches foreign keys off around
 * the whole run and checks them before it commits, which is what makes the drop-and-rename safe.
 *
 * Migrations are a frozen record: once applied somewhere, a file here never changes meaning. Keep this module
 * as small and as stable as that promise needs.
 */
import { sql, type Kysely } from "kysely";

/** Run each statement in order (better-sqlite3 prepares one statement at a time). */
export async function exec(db: Kysely<unknown>, ...statements: string[]): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/**
 * Rebuild `table` in the shape `columns` describes (the inside of its CREATE TABLE), filling it with `select`,
 * a SELECT over the old table that yields the new columns in order. The new table is built under another name
 * and renamed last: renaming the old table instead would make SQLite rewrite the foreign keys that point to it.
 */
export async function rebuild(db: Kysely<unknown>, table: string, columns: string, select: string): Promise<void> {
  await exec(
    db,
    `CREATE TABLE rebuilt_${table} (${columns})`,
    `INSERT INTO rebuilt_${table} ${select}`,
    `DROP TABLE ${table}`,
    `ALTER TABLE rebuilt_${table} RENAME TO ${table}`,
  );
}
