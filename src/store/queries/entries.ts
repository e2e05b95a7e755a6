/**
 * Reading entries back, and the rollups that outlive them.
 */
import type { Kysely } from "kysely";
import type { Entry } from "../../domain/model.ts";
import type { EntryQuery, NamedEntry, ServiceFilter } from "../store.ts";
import type { Tables } from "../tables.ts";
import { entryColumns, entryFromRow } from "./rows.ts";

type Db = Kysely<Tables>;


/** A page of a service's entries, newest first, and the id to ask `before` for the next. Walks the (service_key, id) index backwards. */
export async function readEntries(db: Db, serviceKey: number, q: EntryQuery): Promise<{ entries: Entry[]; next: number | null }> {
  let query = db.selectFrom("health_check_data_entries").select(entryColumns).where("service_key", "=", serviceKey);
  if (q.before !== undefined) query = query.where("id", "<", q.before);
  if (q.since !== undefined) query = query.where("checked_at", ">=", q.since);
  if (q.until !== undefined) query = query.where("checked_at", "<", q.until);
  if (q.ok !== undefined) query = query.where("ok", "=", q.ok);
  const rows = await query.orderBy("id", "desc").limit(q.limit + 1).execute();
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return { entries: page.map(entryFromRow), next: rows.length > q.limit && last ? last.id : null };
}

export async function entriesAfter(db: Db, afterId: number, filter: ServiceFilter, limit = 1000): Promise<NamedEntry[]> {
  let query = db
    .selectFrom("health_check_data_entries as e")
    .innerJoin("services as s", "s.key", "e.service_key")
    .select(entryColumns.map((c) => `e.${c}` as const))
    .select(["s.server_id", "s.id as service_id"])
    .where("e.id", ">", afterId);
  if (filter.serverId !== undefined) query = query.where("s.server_id", "=", filter.serverId);
  if (filter.serviceId !== undefined) query = query.where("s.id", "=", filter.serviceId);
  const rows = await query.orderBy("e.id").limit(limit).execute();
  return rows.map((r) => ({ server: r.server_id, service: r.service_id, ...entryFromRow(r) }));
}

export async function lastEntryId(db: Db): Promise<number> {
  const row = await db
    .selectFrom("health_check_data_entries")
    .select((eb) => eb.fn.max("id").as("id"))
    .executeTakeFirst();
  return row?.id ?? 0;
}

/**
 * Delete up to `batch` of the oldest entries checked before `cutoff`; answers how many went. Entries are
 * stored as checks finish, so the oldest sit first in id order: a batch looks at the first `batch` rows only,
 * which bounds its work however large the table is.
 */
export async function pruneEntries(db: Db, cutoff: number, batch: number): Promise<number> {
  const slice = await db.selectFrom("health_check_data_entries").select(["id", "checked_at"]).orderBy("id").limit(batch).execute();
  let last: number | undefined;
  for (const row of slice) if (row.checked_at < cutoff) last = row.id;
  if (last === undefined) return 0;
  const result = await db.deleteFrom("health_check_data_entries").where("id", "<=", last).where("checked_at", "<", cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function pruneRollups(db: Db, cutoff: number, afterKey: number, services: number): Promise<{ lastKey: number | undefined; deleted: number }> {
  const keys = await db.selectFrom("services").select("key").where("key", ">", afterKey).orderBy("key").limit(services).execute();
  if (keys.length === 0) return { lastKey: undefined, deleted: 0 };
  const result = await db
    .deleteFrom("service_rollups")
    .where("service_key", "in", keys.map((k) => k.key))
    .where("hour", "<", cutoff)
    .executeTakeFirst();
  return { lastKey: keys.at(-1)!.key, deleted: Number(result.numDeletedRows) };
}
