/**
 * The notification outbox. Rows are written with the check result that calls for them (results.ts) and moved
 * along by the delivery loop.
 */
import { sql, type Kysely, type Selectable } from "kysely";
import type { Backend } from "../backend.ts";
import type { Notification, NotificationStatus } from "../store.ts";
import type { NotificationsTable, Tables } from "../tables.ts";
import { notificationFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/**
 * Claim, for `instance`, per channel and service only the oldest pending delivery that is due (so that each
 * stays in order) and not being sent (by another live process, or by this one: `sending`), at most
 * `room(channel)` per channel; mark each
 * in flight, committed before it is sent. On PostgreSQL, rows another node is claiming this very moment are
 * skipped (SKIP LOCKED); SQLite's write lock serializes claims. Answers the rows as they were before the claim.
 */
export async function claimNotifications(
  trx: Db,
  backend: Backend,
  instance: string,
  now: number,
  room: (channel: string) => number,
  sending: readonly number[],
): Promise<Notification[]> {
  const due = await trx.selectFrom("notifications").select("channel").distinct().where("status", "=", "pending").where("next_attempt_at", "<=", now).execute();
  const liveInstances = trx.selectFrom("nodes").select("instance").where(sql<boolean>`last_seen_at + lease_ms > ${now}`);
  const rows: Selectable<NotificationsTable>[] = [];
  for (const { channel } of due) {
    const limit = room(channel);
    if (limit <= 0) continue;
    const heads = trx
      .selectFrom("notifications")
      .select((eb) => eb.fn.min("id").as("id"))
      .where("status", "=", "pending")
      .where("channel", "=", channel)
      .groupBy(["server_id", "service_id"]);
    let query = trx
      .selectFrom("notifications")
      .selectAll()
      .where("id", "in", heads)
      .where("next_attempt_at", "<=", now)
      .where((eb) => eb.or([eb("claimed_by", "is", null), eb("claimed_by", "=", instance), eb("claimed_by", "not in", liveInstances)]))
      .orderBy("id")
      .limit(limit);
    if (sending.length > 0) query = query.where("id", "not in", sending);
    rows.push(...(await backend.claiming(query).execute()));
  }
  if (rows.length > 0) {
    await trx
      .updateTable("notifications")
      .set((eb) => ({ in_flight_since: now, claimed_by: instance, attempts: eb("attempts", "+", 1) }))
      .where("id", "in", rows.map((r) => r.id))
      .execute();
  }
  return rows.map(notificationFromRow);
}

export async function nextNotificationAt(db: Db): Promise<number | undefined> {
  const row = await db
    .selectFrom("notifications")
    .select((eb) => eb.fn.min("next_attempt_at").as("at"))
    .where("status", "=", "pending")
    .executeTakeFirst();
  return row?.at ?? undefined;
}

export async function markDelivered(db: Db, id: number, remoteId: string, now: number): Promise<void> {
  await db
    .updateTable("notifications")
    .set({ status: "delivered", remote_id: remoteId, delivered_at: now, last_error: null, in_flight_since: null, claimed_by: null })
    .where("id", "=", id)
    .execute();
}

export async function markRetry(db: Db, id: number, error: string, nextAt: number): Promise<void> {
  await db
    .updateTable("notifications")
    .set({ last_error: error, next_attempt_at: nextAt, in_flight_since: null, claimed_by: null })
    .where("id", "=", id)
    .execute();
}

export async function markGivenUp(db: Db, id: number, status: "failed" | "unsent", error: string): Promise<void> {
  await db.updateTable("notifications").set({ status, last_error: error, in_flight_since: null, claimed_by: null }).where("id", "=", id).execute();
}

export async function notificationCounts(db: Db): Promise<Record<NotificationStatus, number>> {
  const rows = await db
    .selectFrom("notifications")
    .select((eb) => ["status", eb.fn.countAll<number>().as("n")])
    .groupBy("status")
    .execute();
  const counts = { pending: 0, delivered: 0, failed: 0, unsent: 0 };
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

/**
 * The DOWNs to the ntfy channel of open incidents kept unsent for want of a topic that now have one: their service's notifyTopic
 * (given since), or the cluster's default when `defaultTopic` is set. Reminders kept unsent stay so: they
 * spoke of a moment that is over, and the next one comes on time.
 */
export async function unsentDowns(db: Db, defaultTopic: boolean): Promise<{ id: number; notify_topic: string | null }[]> {
  const rows = await db
    .selectFrom("notifications as n")
    .innerJoin("incidents as i", "i.id", "n.incident_id")
    .innerJoin("http_check_configs as c", "c.service_key", "i.service_key")
    .select(["n.id", "c.notify_topic"])
    .where("n.status", "=", "unsent")
    .where("n.channel", "=", "ntfy")
    .where("n.kind", "=", "down")
    .where("i.closed_at", "is", null)
    .execute();
  return rows.filter((r) => r.notify_topic !== null || defaultTopic);
}

/** Queue these again (those still unsent: another node may have queued them meanwhile); answers how many. */
export async function requeue(trx: Db, ready: readonly { id: number; notify_topic: string | null }[], now: number): Promise<number> {
  let queued = 0;
  for (const r of ready) {
    const result = await trx
      .updateTable("notifications")
      .set({ status: "pending", topic: r.notify_topic, next_attempt_at: now, attempts: 0, last_error: null, claimed_by: null })
      .where("id", "=", r.id)
      .where("status", "=", "unsent")
      .executeTakeFirst();
    queued += Number(result.numUpdatedRows);
  }
  return queued;
}

/** The cluster's default ntfy topic, if a node was ever given one. */
export async function clusterTopic(db: Db): Promise<string | null> {
  const row = await db.selectFrom("cluster_settings").select("value").where("name", "=", "ntfy_topic").executeTakeFirst();
  return row?.value ?? null;
}

/** Make `topic` the cluster's default; answers whether it changed. */
export async function shareTopic(trx: Db, topic: string): Promise<boolean> {
  if ((await clusterTopic(trx)) === topic) return false;
  await trx.deleteFrom("cluster_settings").where("name", "=", "ntfy_topic").execute();
  await trx.insertInto("cluster_settings").values({ name: "ntfy_topic", value: topic }).execute();
  return true;
}

/** What became of the DOWN of an incident on a channel, if one was written. */
export async function downStatus(db: Db, incidentId: number, channel: string): Promise<NotificationStatus | undefined> {
  const row = await db
    .selectFrom("notifications")
    .select("status")
    .where("incident_id", "=", incidentId)
    .where("channel", "=", channel)
    .where("kind", "=", "down")
    .orderBy("id")
    .executeTakeFirst();
  return row?.status;
}
