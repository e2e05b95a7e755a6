/**
 * Bringing a database to the schema this build expects. All pending migrations run as one transaction with
 * foreign keys off (table rebuilds need that), and foreign keys are checked before it commits: a migration
 * run either completes or leaves the file exactly as it was.
 */
import { Migrator, sql } from "kysely";
import { migrations } from "../../migrations/index.ts";
import { openStore, type Store } from "./db.ts";

export const migrationNames: readonly string[] = Object.keys(migrations).sort();

export type MigrationReport =
  | { readonly ok: true; readonly applied: readonly string[]; readonly current: string | null }
  | { readonly ok: false; readonly error: Error };

/** The names of the migrations that this database has run, oldest first; empty for a new file. */
async function appliedMigrations(store: Store): Promise<string[]> {
  const table = store.sqlite
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'")
    .get();
  if (!table) return [];
  const rows = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(store.db);
  return rows.rows.map((r) => r.name);
}

/** Refuse a database that a newer healthd has migrated: this build does not know its schema. */
async function assertNotNewer(store: Store): Promise<string[]> {
  const applied = await appliedMigrations(store);
  const unknown = applied.filter((name) => !migrationNames.includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `${store.path} was migrated by a newer healthd (it has migration ${unknown.join(", ")}, which this ` +
        `build does not know); upgrade healthd, or point --db at another file`,
    );
  }
  return applied;
}

/** The migrations this database still needs. */
export async function pendingMigrations(store: Store): Promise<string[]> {
  const applied = await assertNotNewer(store);
  return migrationNames.filter((name) => !applied.includes(name));
}

/** Apply every pending migration, or only those up to and including `target`. */
export async function migrate(store: Store, target?: string): Promise<MigrationReport> {
  try {
    await assertNotNewer(store);
  } catch (error) {
    return { ok: false, error: error as Error };
  }
  const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } });
  const { sqlite } = store;
  sqlite.pragma("foreign_keys = OFF");
  sqlite.exec("BEGIN IMMEDIATE");
  try {
    const { error, results = [] } = await (target ? migrator.migrateTo(target) : migrator.migrateToLatest());
    const failed = results.find((r) => r.status === "Error")?.migrationName ?? null;
    if (error) {
      sqlite.exec("ROLLBACK");
      const cause = error instanceof Error ? error : new Error(String(error));
      return { ok: false, error: new Error(`migration ${failed ?? "setup"} failed: ${cause.message}`, { cause }) };
    }
    const violations = sqlite.pragma("foreign_key_check") as unknown[];
    if (violations.length > 0) {
      sqlite.exec("ROLLBACK");
      return {
        ok: false,
        error: new Error(`migrations left ${violations.length} rows with broken foreign keys; nothing was changed`),
      };
    }
    sqlite.exec("COMMIT");
    const applied = results.filter((r) => r.status === "Success").map((r) => r.migrationName);
    return { ok: true, applied, current: target ?? migrationNames.at(-1) ?? null };
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
    return { ok: false, error: error as Error };
  } finally {
    sqlite.pragma("foreign_keys = ON");
  }
}

/** Open `path` (creating it) and bring it to the latest schema; throws, leaving nothing open, when it cannot. */
export async function openMigrated(path: string): Promise<{ store: Store; applied: readonly string[] }> {
  const store = openStore(path);
  const report = await migrate(store);
  if (!report.ok) {
    await store.close();
    throw report.error;
  }
  return { store, applied: report.applied };
}
