/**
 * Announcements with their updates: what people are told, as records (named status pages: status-pages.ts).
 * Which of them a page shows, and how, is the page's business (src/status/).
 */
import type { Kysely, Selectable } from "kysely";
import type { AnnouncementInput, AnnouncementPatch, Severity } from "../../domain/schema/announcement.ts";
import { maxUpdates } from "../../domain/schema/announcement.ts";
import type { Announcement, AnnouncementQuery } from "../store.ts";
import type { AnnouncementsTable, Tables } from "../tables.ts";

type Db = Kysely<Tables>;

const list = (json: string | null) => (json === null ? null : (JSON.parse(json) as string[]));

/** The servers of `ids` that do not exist, in the order given. */
export async function unknownServers(db: Db, ids: readonly string[] | null): Promise<string[]> {
  if (ids === null || ids.length === 0) return [];
  const found = new Set((await db.selectFrom("servers").select("id").where("id", "in", ids).execute()).map((r) => r.id));
  return ids.filter((id) => !found.has(id));
}

async function withUpdates(db: Db, rows: Selectable<AnnouncementsTable>[]): Promise<Announcement[]> {
  if (rows.length === 0) return [];
  const updates = await db
    .selectFrom("announcement_updates")
    .selectAll()
    .where("announcement_id", "in", rows.map((r) => r.id))
    .orderBy("id", "desc")
    .execute();
  return rows.map((r) => ({
    id: r.id,
    title: r.title,
    message: r.message,
    severity: r.severity as Severity,
    servers: list(r.servers),
    startsAt: r.starts_at,
    endsAt: r.ends_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    updates: updates
      .filter((u) => u.announcement_id === r.id)
      .map((u) => ({ id: u.id, message: u.message, severity: u.severity as Severity | null, createdAt: u.created_at })),
  }));
}

/** Announcements, the latest start first. */
export async function announcements(db: Db, q: AnnouncementQuery): Promise<Announcement[]> {
  let query = db.selectFrom("announcements").selectAll();
  if (q.id !== undefined) query = query.where("id", "=", q.id);
  if (q.active === true) query = query.where("starts_at", "<=", q.now).where((eb) => eb.or([eb("ends_at", "is", null), eb("ends_at", ">", q.now)]));
  if (q.active === false) query = query.where((eb) => eb.or([eb("starts_at", ">", q.now), eb("ends_at", "<=", q.now)]));
  if (q.endedAfter !== undefined) query = query.where((eb) => eb.or([eb("ends_at", "is", null), eb("ends_at", ">", q.endedAfter!)]));
  return withUpdates(db, await query.orderBy("starts_at", "desc").orderBy("id", "desc").limit(q.limit).execute());
}

export async function addAnnouncement(trx: Db, a: AnnouncementInput & { startsAt: number }, now: number): Promise<Announcement> {
  const row = await trx
    .insertInto("announcements")
    .values({
      title: a.title,
      message: a.message,
      severity: a.severity,
      servers: a.servers === null ? null : JSON.stringify(a.servers),
      starts_at: a.startsAt,
      ends_at: a.endsAt ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return (await withUpdates(trx, [row]))[0]!;
}

/** Add an update; undefined when there is no such announcement, "full" when it has `maxUpdates` already. */
export async function addUpdate(trx: Db, id: number, update: { message: string; severity?: Severity | undefined }, now: number): Promise<Announcement | "full" | undefined> {
  const row = await trx.selectFrom("announcements").select("id").where("id", "=", id).executeTakeFirst();
  if (!row) return undefined;
  const { count } = await trx
    .selectFrom("announcement_updates")
    .select((eb) => eb.fn.countAll<number | string>().as("count"))
    .where("announcement_id", "=", id)
    .executeTakeFirstOrThrow();
  if (Number(count) >= maxUpdates) return "full";
  await trx.insertInto("announcement_updates").values({ announcement_id: id, message: update.message, severity: update.severity ?? null, created_at: now }).execute();
  await trx
    .updateTable("announcements")
    .set({ updated_at: now, ...(update.severity ? { severity: update.severity } : {}) })
    .where("id", "=", id)
    .execute();
  return (await announcements(trx, { id, now, limit: 1 }))[0];
}

/** Change some of its fields (`ended`: it ends now); undefined when there is no such announcement. */
export async function patchAnnouncement(trx: Db, id: number, p: AnnouncementPatch, now: number): Promise<Announcement | undefined> {
  const set: Partial<Selectable<AnnouncementsTable>> = { updated_at: now };
  if (p.title !== undefined) set.title = p.title;
  if (p.message !== undefined) set.message = p.message;
  if (p.severity !== undefined) set.severity = p.severity;
  if (p.servers !== undefined) set.servers = p.servers === null ? null : JSON.stringify(p.servers);
  if (p.startsAt !== undefined) set.starts_at = p.startsAt;
  if (p.endsAt !== undefined) set.ends_at = p.endsAt;
  if (p.ended) set.ends_at = now;
  const result = await trx.updateTable("announcements").set(set).where("id", "=", id).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return undefined;
  return (await announcements(trx, { id, now, limit: 1 }))[0];
}

export async function deleteAnnouncement(trx: Db, id: number): Promise<boolean> {
  await trx.deleteFrom("announcement_updates").where("announcement_id", "=", id).execute();
  const result = await trx.deleteFrom("announcements").where("id", "=", id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
