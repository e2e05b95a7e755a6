/**
 * The embedded engine: one SQLite file through better-sqlite3.
 */
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import { sql, type Kysely } from "kysely";
import { bulkInsert } from "../queries/bulk.ts";
import { sqliteBulk } from "./bulk.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Logger } from "../../platform/log.ts";
import type { Backend } from "../backend.ts";
import type { Tables } from "../tables.ts";
import { runMigrations, pendingMigrations } from "../migrate.ts";
import { StoreUnavailable } from "../errors.ts";
import { watchChanges, type ChangeWatch } from "./change-watch.ts";
import { startCheckpointer, type Checkpointer } from "./checkpointer.ts";
import { openSqlite, type SqliteOptions } from "./connection.ts";
import { acquireServeLock } from "./serve-lock.ts";

/** Error codes that mean the file cannot take writes now, not that healthd asked for something wrong. */
const unavailableCodes = /^SQLITE_(READONLY|FULL|IOERR|BUSY|LOCKED|CANTOPEN|NOMEM)/;

export interface SqliteBackend extends Backend {
  /** The raw connection, for the engine's own chores (checkpoints, pragmas in tests). */
  readonly sqlite: Database.Database;
  /** The daemon's part (serve): claim the file for this process and move checkpoints to a worker thread. */
  serve(log: Logger): void;
}

export interface SqliteBackendOptions extends SqliteOptions {
  /** For the checkpoints' timing and the change watch. */
  readonly clock: Clock;
}

export function sqliteBackend(path: string, options: SqliteBackendOptions): SqliteBackend {
  const { sqlite, db, guard } = openSqlite(path, options);
  // The file the connection holds; if the path later names another file or none, writes go nowhere useful.
  const inode = statSync(path).ino;
  let release = () => {};
  let checkpointer: Checkpointer | undefined;
  /** Whether the path still names the file this connection holds: "deleted", "replaced", or undefined. */
  const gone = (): "deleted" | "replaced" | undefined => {
    try {
      return statSync(path).ino === inode ? undefined : "replaced";
    } catch {
      return "deleted";
    }
  };
  // The transaction's own statements, prepared once on the raw connection. Through Kysely each was built,
  // compiled and handed through its connection provider again for every batch of results: code that a daemon
  // with 100 services runs about once a second, and so for minutes unoptimized. They run inside write's
  // callback, which holds Kysely's one connection: no other statement runs between them.
  const begin = sqlite.prepare("BEGIN IMMEDIATE");
  const commit = sqlite.prepare("COMMIT");
  const rollback = sqlite.prepare("ROLLBACK");
  // The rows this connection changed (total_changes: a change of its own, committed or rolled back, moves it)
  // but for those of writeAside, and data_version (moves with every commit of another connection). Prepared
  // at its first use, which always follows the guard's look (shm-guard.ts): preparing it reads the schema, and
  // nothing touches the file before that look. The transaction statements above read nothing. Two plain
  // statements rather than pragma_data_version, the table-valued form, which prepares "PRAGMA data_version"
  // again at every read: 1.7 µs against 0.4 as a transaction's first read, and the table-valued form was 5 %
  // of a daemon's main thread at 1,000 services (V8's profile; docs/benchmarks.md). Each is read on its
  // own: the change watch needs only data_version.
  let counts: { readonly rows: Database.Statement; readonly version: Database.Statement } | undefined;
  const prepared = () => (counts ??= { rows: sqlite.prepare("SELECT total_changes()").pluck(), version: sqlite.prepare("PRAGMA data_version").pluck() });
  const rowsChanged = () => prepared().rows.get() as number;
  const dataVersion = () => prepared().version.get() as number;
  /** The change watches open: each is told of this connection's commits, which prove its file watch. */
  const watches = new Set<ChangeWatch>();
  const write = <T>(fn: (trx: Kysely<Tables>) => Promise<T>, urgent = true) =>
    db.connection().execute(async (conn) => {
      // A write to a file nobody can open any more would be lost: refuse it ("not now"), so that a PUT is 503
      // and results wait, rather than answer 201 for nothing.
      const lost = gone();
      if (lost) throw new StoreUnavailable(`the database file ${path} was ${lost === "deleted" ? "deleted" : "replaced by another file"}`, `FILE_${lost.toUpperCase()}`);
      guard.check(); // the look every statement outside a transaction takes (connection.ts)
      begin.run();
      try {
        const result = await fn(conn);
        commit.run();
        checkpointer?.written(urgent);
        for (const watch of watches) watch.committed();
        return result;
      } catch (error) {
        if (sqlite.inTransaction) rollback.run();
        throw error;
      }
    });
  let aside = 0;
  return {
    engine: "sqlite",
    alone: true,
    location: path,
    db,
    sqlite,
    write,
    // Counted inside the transaction, which holds the connection: no other statement runs between the two counts.
    writeAside: (fn) =>
      write(async (trx) => {
        const before = rowsChanged();
        const result = await fn(trx);
        aside += rowsChanged() - before;
        return result;
      }, false),
    // BEGIN IMMEDIATE took the write lock: no other transaction of any process writes beside this one.
    lock: async () => {},
    lockServices: async () => {},
    joinText: (column) => sql<string>`group_concat(${sql.ref(column)}, ',')`,
    keyIn: (column, keys) => sql<boolean>`${sql.ref(column)} in (${sql.join(keys)})`,
    claiming: (query) => query,
    bulkInsert: (trx, spec, rows) => bulkInsert(trx, sqliteBulk, spec, rows),
    // A rowid key takes the largest one plus one: nothing to follow.
    followIdentity: async () => {},
    changeMark: async () => `${rowsChanged() - aside}:${dataVersion()}`,
    unavailable(error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code !== "string" || !unavailableCodes.test(code)) return undefined;
      return new StoreUnavailable(`the database cannot take this now (${code}: ${(error as Error).message})`, code, { cause: error });
    },
    watch(channel, listener, pulse) {
      // One daemon serves a SQLite file, so no other node can change who runs what: nothing to follow.
      if (channel === "cluster") return () => {};
      // data_version moves only when another connection commits (anything, whatever the channel): silent for
      // this connection's own writes. Read when the WAL is written (change-watch.ts).
      const look = () => {
        try {
          guard.check();
          return dataVersion();
        } catch {
          return undefined; // the database is not to be touched now; look again next time
        }
      };
      const watch = watchChanges({ wal: `${path}-wal`, look, listener, pulse, now: () => options.clock.monotonic() });
      watches.add(watch);
      return () => {
        watches.delete(watch);
        watch.stop();
      };
    },
    announce: async () => {},
    problems() {
      const shm = guard.problem();
      if (shm) return [shm];
      const lost = gone();
      if (!lost) return [];
      return [
        `the database file ${path} was ${lost === "deleted" ? "deleted" : "replaced by another file"}; writes are refused and ` +
          "results wait in memory. Restore it and restart healthd",
      ];
    },
    migrate: (target) =>
      runMigrations(db, path, target, async (run) => {
        sqlite.pragma("foreign_keys = OFF");
        begin.run();
        try {
          const applied = await run();
          const violations = sqlite.pragma("foreign_key_check") as unknown[];
          if (violations.length > 0) {
            throw new Error(`migrations left ${violations.length} rows with broken foreign keys; nothing was changed`);
          }
          commit.run();
          return applied;
        } catch (error) {
          if (sqlite.inTransaction) rollback.run();
          throw error;
        } finally {
          sqlite.pragma("foreign_keys = ON");
        }
      }),
    pendingMigrations: () => pendingMigrations(db, path),
    serve(log) {
      release = acquireServeLock(path);
      checkpointer = startCheckpointer(sqlite, path, log, guard, options.clock);
    },
    async close() {
      let touchable = true;
      try {
        guard.check();
      } catch {
        touchable = false;
      }
      await checkpointer?.stop(touchable);
      // Closing reads the WAL index too: with a broken one, leave the connection for the exit to drop.
      // Kysely's destroy closes the better-sqlite3 connection.
      if (touchable) await db.destroy();
      release();
    },
  };
}
