/**
 * Raw SQL against a store's database. healthd itself never uses this: it is for what no interface can do,
 * the tests' fixtures in the schemas of old migrations and their fault injection (a read-only database).
 */
import { sql } from "kysely";
import { KyselyStore } from "./kysely-store.ts";
import type { Store } from "./store.ts";

export async function rawQuery(store: Store, statement: string): Promise<Record<string, unknown>[]> {
  if (!(store instanceof KyselyStore)) throw new Error("rawQuery needs a store opened by openStore");
  const result = await sql.raw<Record<string, unknown>>(statement).execute(store.backend.db);
  return result.rows;
}
