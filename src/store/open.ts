/**
 * Opening a store from what `--db` says: a file path (SQLite) or a postgres:// / postgresql:// URL.
 * Every failure is an Error whose message says what to do; the CLI shows it and exits 2.
 */
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { systemClock, type Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { Policy } from "../domain/batch.ts";
import type { Backend } from "./backend.ts";
import { KyselyStore } from "./kysely-store.ts";
import type { MigrationReport } from "./migrate.ts";
import { postgresBackend } from "./postgres/backend.ts";
import { isPostgresUrl, parsePostgresUrl } from "./postgres/target.ts";
import { sqliteBackend } from "./sqlite/backend.ts";

export { isPostgresUrl } from "./postgres/target.ts";

export interface OpenOptions {
  /**
   * - `read`: the database must exist and be migrated (check, tail, export); a SQLite file is opened read-only.
   * - `write`: create and migrate it when needed (apply, migrate, copy's destination).
   * - `serve`: as `write`, and the daemon's part: on SQLite, claim the file for this one daemon.
   * - `raw`: open it as it is, neither checked nor migrated (the migrate command and its tests).
   */
  readonly mode: "read" | "write" | "serve" | "raw";
  /** `read` only: open a SQLite file writable (check --record writes entries, but never migrates). */
  readonly writable?: boolean;
  /** Where the engine reports what goes wrong in the background. */
  readonly log?: Logger;
  /** Applied migrations are told here (serve logs them). */
  readonly onMigrated?: (applied: readonly string[]) => void;
  /** What the store asks where a write depends on a decision: src/policy/'s. */
  readonly policy: Policy;
  /** What the engine keeps time by (checkpoints, reconnects, its change watch). Default the system's. */
  readonly clock?: Clock;
}

export async function openStore(target: string, options: OpenOptions): Promise<KyselyStore> {
  const clock = options.clock ?? systemClock;
  const backend = await connect(target, { ...options, clock });
  try {
    if (options.mode === "read") await requireMigrated(backend, target);
    if (options.mode === "write" || options.mode === "serve") {
      const report = await backend.migrate();
      if (!report.ok) throw new Error(`${report.error.message}; the database was left unchanged`, { cause: report.error });
      options.onMigrated?.(report.applied);
    }
  } catch (error) {
    await backend.close();
    throw error;
  }
  return new KyselyStore(backend, options.policy, clock);
}

/** `healthd migrate`: create (SQLite) and migrate the database; the report says what was applied or why not. */
export async function migrateDatabase(target: string, migrateTo?: string): Promise<{ location: string; report: MigrationReport }> {
  const backend = await connect(target, { mode: "raw", clock: systemClock });
  try {
    return { location: backend.location, report: await backend.migrate(migrateTo) };
  } finally {
    await backend.close();
  }
}

async function connect(target: string, options: Omit<OpenOptions, "policy"> & { readonly clock: Clock }): Promise<Backend> {
  if (isPostgresUrl(target)) {
    const pgTarget = parsePostgresUrl(target);
    const backend = postgresBackend(pgTarget, {
      clock: options.clock,
      onIdleError: (error) => options.log?.warn("lost a PostgreSQL connection", { error: error.message }),
    });
    try {
      await backend.db.selectNoFrom((eb) => eb.lit(1).as("one")).execute();
    } catch (error) {
      await backend.close();
      const e = error as { code?: string; message?: string };
      const hint =
        e.code === "3D000"
          ? `create the database first (createdb -h ${pgTarget.host} -p ${pgTarget.port} ${pgTarget.database})`
          : "is it running, and is --db (HEALTHD_DB) right?";
      throw new Error(`cannot reach PostgreSQL at ${pgTarget.host}:${pgTarget.port} (${e.message ?? e.code ?? String(error)}); ${hint}`, {
        cause: error,
      });
    }
    return backend;
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)) {
    throw new Error(
      `--db ${target} is neither a SQLite file nor a postgres:// URL: give a path such as /var/lib/healthd/healthd.db, or postgres://user@host/database`,
    );
  }
  if (!existsSync(dirname(target))) {
    throw new Error(`--db ${target}: the folder ${dirname(target)} does not exist; create it (mkdir -p ${dirname(target)}) or choose another path`);
  }
  if (options.mode === "read" && !existsSync(target)) {
    throw new Error(`no database at ${target}; create it with: healthd migrate --db ${target} (or point --db at yours)`);
  }
  const backend = sqliteBackend(target, {
    readonly: options.mode === "read" && !options.writable,
    onRepair: (message) => options.log?.warn(message),
    clock: options.clock,
  });
  if (options.mode === "serve") {
    try {
      backend.serve(options.log ?? (await import("../platform/log.ts")).silentLogger);
    } catch (error) {
      await backend.close();
      throw error;
    }
  }
  return backend;
}

async function requireMigrated(backend: Backend, target: string): Promise<void> {
  const pending = await backend.pendingMigrations();
  if (pending.length > 0) {
    throw new Error(`${backend.location} needs ${pending.length} migration(s); run: healthd migrate --db ${isPostgresUrl(target) ? "<your URL>" : target}`);
  }
}
