/**
 * Opening the SQLite file. One connection does all the writing (better-sqlite3 is synchronous, so one
 * process is one writer); WAL lets `healthd tail` and `healthd check` read beside it without blocking it.
 */
import Database from "better-sqlite3";
import { Kysely, SqliteDialect, type Compilable } from "kysely";
import type { Tables } from "./tables.ts";

/**
 * Kysely builds the queries (typed against `Tables`); they run synchronously on better-sqlite3. Synchronous
 * execution is the point: a transaction runs to its end without yielding to the event loop, so a PUT and a
 * batch of entries can never interleave on the one connection, and nothing waits on a promise per row.
 */
export interface Store {
  /** The query builder. Its own async execution is used only by the migrator. */
  readonly db: Kysely<Tables>;
  /** The raw connection, for pragmas. */
  readonly sqlite: Database.Database;
  readonly path: string;
  all<R>(query: Compilable<R>): R[];
  get<R>(query: Compilable<R>): R | undefined;
  /** Run a statement; answers the number of rows it changed. */
  run(query: Compilable<unknown>): number;
  /** Run `fn` in one transaction (nested calls become savepoints). */
  transaction<T>(fn: () => T): T;
  /**
   * Statements prepared once per connection by `prepare`, for the hot write path where building a Kysely
   * query per row costs more than the write. Memoized by the function, so a module passes the same one.
   */
  statements<T>(prepare: (sqlite: Database.Database) => T): T;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Open for reading only (`check`, `tail`, `export`): never creates or changes the file. Default false. */
  readonly readonly?: boolean;
  /** How long a statement waits for another process's lock before failing. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
}

export function openStore(path: string, options: OpenOptions = {}): Store {
  const sqlite = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  if (!options.readonly) {
    sqlite.pragma("journal_mode = WAL");
    sqlite.pragma("synchronous = NORMAL");
  }
  sqlite.pragma("foreign_keys = ON");
  const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) });
  const statements = new Map<string, Database.Statement>();
  const hot = new Map<(sqlite: Database.Database) => unknown, unknown>();
  const prepare = (query: Compilable<unknown>) => {
    const compiled = query.compile();
    let statement = statements.get(compiled.sql);
    if (!statement) {
      // Queries with IN lists compile to many texts; keep the cache bounded.
      if (statements.size > 500) statements.clear();
      statement = sqlite.prepare(compiled.sql);
      statements.set(compiled.sql, statement);
    }
    return { statement, parameters: compiled.parameters.map(bindable) };
  };
  return {
    db,
    sqlite,
    path,
    all<R>(query: Compilable<R>) {
      const { statement, parameters } = prepare(query);
      return statement.all(...parameters) as R[];
    },
    get<R>(query: Compilable<R>) {
      const { statement, parameters } = prepare(query);
      return statement.get(...parameters) as R | undefined;
    },
    run(query) {
      const { statement, parameters } = prepare(query);
      return statement.run(...parameters).changes;
    },
    transaction: (fn) => sqlite.transaction(fn)(),
    statements<T>(prepare: (sqlite: Database.Database) => T): T {
      if (!hot.has(prepare)) hot.set(prepare, prepare(sqlite));
      return hot.get(prepare) as T;
    },
    // Kysely's destroy closes the better-sqlite3 connection too.
    close: () => db.destroy(),
  };
}

/** better-sqlite3 binds numbers, strings, bigints, buffers and null; SQLite has no booleans. */
function bindable(value: unknown): unknown {
  return typeof value === "boolean" ? (value ? 1 : 0) : value;
}
