/**
 * What no store interface does, for tests and benches only: raw SQL against a store's database (fixtures in
 * the schemas of old migrations, fault injection such as a read-only database), the whole outbox, and a store
 * opened with healthd's policy.
 */
import { sql } from "kysely";
import type { Policy } from "../../src/domain/batch.ts";
import { policy } from "../../src/policy/index.ts";
import { KyselyStore } from "../../src/store/kysely-store.ts";
import { openStore, type OpenOptions } from "../../src/store/open.ts";
import { notificationFromRow } from "../../src/store/queries/rows.ts";
import type { Notification, Store } from "../../src/store/store.ts";

/** openStore, with healthd's policy unless another is given. */
export function open(target: string, options: Omit<OpenOptions, "policy"> & { policy?: Policy }): Promise<KyselyStore> {
  return openStore(target, { policy, ...options });
}

export async function rawQuery(store: Store, statement: string): Promise<Record<string, unknown>[]> {
  if (!(store instanceof KyselyStore)) throw new Error("rawQuery needs a store opened by openStore");
  const result = await sql.raw<Record<string, unknown>>(statement).execute(store.backend.db);
  return result.rows;
}

/** Every notification in the outbox, oldest first. */
export async function notifications(store: Store): Promise<Notification[]> {
  if (!(store instanceof KyselyStore)) throw new Error("notifications needs a store opened by openStore");
  const rows = await store.backend.db.selectFrom("notifications").selectAll().orderBy("id").execute();
  return rows.map(notificationFromRow);
}
