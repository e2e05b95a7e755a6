/**
 * Bringing a database to the schema this build expects, on either engine, with Kysely's Migrator over the one
 * migration history in migrations/. Each engine wraps the run so that it completes or changes nothing:
 * SQLite in one IMMEDIATE transaction with foreign keys off (table rebuilds need that) and checked before
 * COMMIT; PostgreSQL in the Migrator's own transaction under its advisory lock (DDL is transactional there).
 */
import { Migrator, type Kysely } from "kysely";
import { migrations } from "../../migrations/index.ts";

export const migrationNames: readonly string[] = Object.keys(migrations).sort();

export type MigrationReport =
  | { readonly ok: true; readonly applied: readonly string[]; readonly current: string | null }
  | { readonly ok: false; readonly error: Error };

/** The names of the migrations this database has run, oldest first; empty for a new database. */
async function appliedMigrations(db: Kysely<any>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((t) => t.name === "kysely_migration")) return [];
  const rows = await db.selectFrom("kysely_migration").select("name").orderBy("name").execute();
  return rows.map((r: { name: string }) => r.name);
}

/** Refuse a database that a newer healthd has migrated: this build does not know its schema. */
async function assertNotNewer(db: Kysely<any>, location: string): Promise<string[]> {
  const applied = await appliedMigrations(db);
  const unknown = applied.filter((name) => !migrationNames.includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `${location} was migrated by a newer healthd (it has migration ${unknown.join(", ")}, which this ` +
        `build does not know); upgrade healthd, or point --db at another database`,
    );
  }
  return applied;
}

/** The migrations this database still needs. */
export async function pendingMigrations(db: Kysely<any>, location: string): Promise<string[]> {
  const applied = await assertNotNewer(db, location);
  return migrationNames.filter((name) => !applied.includes(name));
}

/**
 * Run every pending migration (or those up to and including `target`) through `transaction`, the engine's
 * way of making the run all or nothing. Answers a report; never throws (as Kysely's migrator).
 */
export async function runMigrations(
  db: Kysely<any>,
  location: string,
  target: string | undefined,
  transaction: (run: () => Promise<readonly string[]>) => Promise<readonly string[]>,
): Promise<MigrationReport> {
  try {
    await assertNotNewer(db, location);
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    const applied = await transaction(async () => {
      const { error, results = [] } = await (target ? migrator.migrateTo(target) : migrator.migrateToLatest());
      if (error) {
        const failed = results.find((r) => r.status === "Error")?.migrationName ?? "setup";
        const cause = error instanceof Error ? error : new Error(String(error));
        throw new Error(`migration ${failed} failed: ${cause.message}`, { cause });
      }
      return results.filter((r) => r.status === "Success").map((r) => r.migrationName);
    });
    return { ok: true, applied, current: target ?? migrationNames.at(-1) ?? null };
  } catch (error) {
    return { ok: false, error: error as Error };
  }
}
