/**
 * Opening the database for the subcommands that only read it (check, tail, export): never create or
 * migrate it, and say what to do when it is missing or behind.
 */
import { existsSync } from "node:fs";
import { UsageError } from "../config.ts";
import { openStore, type Store } from "../store/db.ts";
import { openMigrated, pendingMigrations } from "../store/migrate.ts";

/** `writable` is for check --record: it writes entries, but never creates or migrates the file. */
export async function openForReading(path: string, { writable = false } = {}): Promise<Store> {
  if (!existsSync(path)) {
    throw new UsageError(`no database at ${path}; create it with: healthd migrate --db ${path} (or point --db at yours)`);
  }
  const store = openStore(path, { readonly: !writable });
  try {
    const pending = await pendingMigrations(store);
    if (pending.length > 0) {
      throw new UsageError(`${path} needs ${pending.length} migration(s); run: healthd migrate --db ${path}`);
    }
  } catch (error) {
    await store.close();
    throw error instanceof UsageError ? error : new UsageError((error as Error).message, { cause: error });
  }
  return store;
}

/** Open for writing (apply, migrate): create the file and migrate it when needed, as serve does. */
export async function openForWriting(path: string): Promise<Store> {
  try {
    return (await openMigrated(path)).store;
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}
