/**
 * Opening a SQLite file for Kysely. One connection does all the writing (better-sqlite3 is synchronous, so one
 * process is one writer); WAL lets `healthd tail` and `healthd check` read beside it without blocking it.
 */
import Database from "better-sqlite3";
import { Kysely, SqliteDialect, type SqliteDatabase } from "kysely";
import type { Tables } from "../tables.ts";
import { shmGuard, type ShmGuard } from "./shm-guard.ts";

export interface SqliteOptions {
  /** Open for reading only (`check`, `tail`, `export`): never creates or changes the file. Default false. */
  readonly readonly?: boolean;
  /** How long a statement waits for another process's lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /** Told when the WAL index had to be repaired (see shm-guard.ts). */
  readonly onRepair?: (message: string) => void;
}

export interface SqliteConnection {
  readonly sqlite: Database.Database;
  readonly db: Kysely<Tables>;
  /** Checked before every transaction and every statement outside one: see shm-guard.ts. */
  readonly guard: ShmGuard;
}

export function openSqlite(path: string, options: SqliteOptions = {}): SqliteConnection {
  const readonly = options.readonly ?? false;
  const sqlite = new Database(path, { readonly, fileMustExist: readonly });
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  if (!readonly) {
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("synchronous = NORMAL");
  }
  sqlite.pragma("foreign_keys = ON");
  const guard = shmGuard(path, options.onRepair);
  return { sqlite, guard, db: new Kysely<Tables>({ dialect: new SqliteDialect({ database: narrow(sqlite, guard) }) }) };
}

/**
 * The subset of better-sqlite3 that Kysely uses, with three things added: statements are prepared once per
 * SQL text (Kysely prepares on every execution, and on the write path preparing costs more than running),
 * booleans are bound as 0/1 (SQLite has no booleans and better-sqlite3 refuses them), and the WAL index is
 * looked at before each transaction and each statement outside one (shm-guard.ts).
 */
function narrow(sqlite: Database.Database, guard: ShmGuard): SqliteDatabase {
  const statements = new Map<string, Database.Statement>();
  // The look costs two syscalls (30 % of storing a batch of 5, profiled): made before each statement outside
  // a transaction and before each BEGIN; a transaction's statements, milliseconds later, go on that look.
  const look = () => {
    if (!sqlite.inTransaction) guard.check();
  };
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        // Queries with IN lists and multi-row inserts compile to many texts; keep the cache bounded.
        if (statements.size >= 500) statements.clear();
        statement = sqlite.prepare(sql);
        if (statement.reader) rowsAsArrays(statement);
        statements.set(sql, statement);
      }
      const s = statement;
      return {
        reader: s.reader,
        all: (parameters) => (look(), objects(s, s.all(...bindable(parameters)) as unknown[][])),
        run: (parameters) => (look(), s.run(...bindable(parameters))),
        iterate: (parameters) => (look(), stream(s, s.iterate(...bindable(parameters)) as IterableIterator<unknown[]>)),
      };
    },
  };
}

/**
 * Booleans as 0/1, copying the parameters only when one is there. The callers spread them as arguments rather
 * than pass one array: better-sqlite3 reads an array's values through V8's slower API (measured, no gain).
 */
function bindable(parameters: readonly unknown[]): readonly unknown[] {
  return parameters.some((value) => typeof value === "boolean")
    ? parameters.map((value) => (typeof value === "boolean" ? Number(value) : value))
    : parameters;
}

/**
 * Rows are read as arrays and made into objects here, each by a function made for its statement's columns
 * that returns one object literal: one allocation with the properties in place. better-sqlite3 builds a row
 * object through V8's C++ API one property at a time; a loop of keyed stores was cheaper than that, but its
 * 36-property rows of the write path's read of a batch's services ended up as hash tables (dictionary mode).
 */
type RowMaker = (row: readonly unknown[]) => Record<string, unknown>;
const rowMakers = new WeakMap<Database.Statement, RowMaker>();
/** By column list, of which healthd's queries have a fixed few: one query's texts for IN lists of any length share one. */
const makersByColumns = new Map<string, RowMaker>();

function rowsAsArrays(statement: Database.Statement): void {
  statement.raw(true);
  const names = statement.columns().map((c) => c.name);
  const key = JSON.stringify(names);
  let make = makersByColumns.get(key);
  if (!make) {
    // Quoted by JSON.stringify, any name is a valid key of the literal; but "__proto__" there would set the
    // prototype, not a property. No query of healthd's names a column so.
    if (names.includes("__proto__")) throw new Error(`a query names a column "__proto__"; give it another name (${statement.source})`);
    make = new Function("row", `return {${names.map((name, i) => `${JSON.stringify(name)}: row[${i}]`).join(", ")}};`) as RowMaker;
    makersByColumns.set(key, make);
  }
  rowMakers.set(statement, make);
}

function objects(statement: Database.Statement, rows: unknown[][]): Record<string, unknown>[] {
  const make = rowMakers.get(statement)!;
  return rows.map(make);
}

function* stream(statement: Database.Statement, rows: IterableIterator<unknown[]>): IterableIterator<Record<string, unknown>> {
  const make = rowMakers.get(statement)!;
  for (const row of rows) yield make(row);
}
