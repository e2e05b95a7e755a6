/**
 * The notification outbox. Rows are written with the check result that calls for them (results.ts) and moved
 * along by the delivery loop.
 */
import { sql, type Kysely, type Selectable } from "kysely";
import { requeue as requeueing, requeueCandidates } from "../../policy/delivery.ts";
import type { Backend } from "../backend.ts";
import type { Notification, NotificationStatus } from "../store.ts";
import type { NotificationsTable, Tables } from "../tables.ts";
import { compiledOnce } from "./compiled.ts";
import { notificationFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/**
 * `status = 'pending'` written into the statement, not sent as a parameter: the outbox's indexes cover pending
 * rows only, and PostgreSQL cannot use a partial index for a prepared statement's generic plan unless the
 * predicate is in its text (bench:channels on PostgreSQL: 72 s with a parameter).
 */
const pending = sql.lit("pending" as const);

/**
 * Claim, for `instance`, per channel and service only the oldest pending delivery (so that each stays in
 * order) that is due and not being sent (by another live process, or by this one: `sending`), at most
 * `room(channel)` per channel, oldest first; mark each in flight, committed before it is sent. On PostgreSQL,
 * rows another node is claiming this very moment are skipped (SKIP LOCKED); SQLite's write lock serializes
 * claims. Answers the rows as they were before the claim.
 *
 * Each step is an index probe, not a scan of the outbox: the channels with pending deliveries are found by
 * skipping through the index of pending deliveries by channel, and a candidate is a head when it is the oldest
 * pending delivery of its channel and service (notifications_heads). A pass costs the same with 30 pending
 * deliveries as with 30,000 (bench:channels: a GROUP BY of every pending row made it 8 ms).
 */
export async function claimNotifications(
  trx: Db,
  backend: Backend,
  instance: string,
  now: number,
  room: (channel: string) => number,
  sending: readonly number[],
): Promise<Notification[]> {
  const { rows: channels } = await sql<{ channel: string }>`
    WITH RECURSIVE pending(channel) AS (
      SELECT min(channel) FROM notifications WHERE status = 'pending'
      UNION ALL
      SELECT (SELECT min(channel) FROM notifications WHERE status = 'pending' AND channel > pending.channel) FROM pending WHERE channel IS NOT NULL
    )
    SELECT channel FROM pending WHERE channel IS NOT NULL`.execute(trx);
  const rows: Selectable<NotificationsTable>[] = [];
  for (const { channel } of channels) {
    const limit = room(channel);
    if (limit <= 0) continue;
    rows.push(...(await heads(trx, backend, channel, now, instance, sending, limit)).rows);
  }
  if (rows.length > 0) await claim(trx, backend, rows.map((r) => r.id), now, instance);
  return rows.map(notificationFromRow);
}

/** The due heads of `channel` not being sent: the candidates of claimNotifications. */
const heads = compiledOnce((db: Db, backend: Backend, channel: string, now: number, instance: string, sending: readonly number[], limit: number) => {
  // The processes whose claims hold: policy/lease.ts's isLive (leaseEnd > now), written in SQL because the
  // claim must judge the claimant's lease in the statement that takes the rows (another node's claim lapses
  // the moment its lease does, with no read between), and a compiled statement keeps one shape.
  // test/outbox-lease.test.ts holds the two the same at the lease's end, on both engines.
  const liveInstances = db.selectFrom("nodes").select("instance").where(sql<boolean>`last_seen_at + lease_ms > ${now}`);
  let query = db
    .selectFrom("notifications as n")
    .selectAll()
    .where("n.status", "=", pending)
    .where("n.channel", "=", channel)
    .where("n.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("n.claimed_by", "is", null), eb("n.claimed_by", "=", instance), eb("n.claimed_by", "not in", liveInstances)]))
    // The oldest pending delivery of its channel and service: a subquery per candidate, which both engines
    // answer from notifications_heads with every column bound (as an anti-join, PostgreSQL without fresh
    // statistics scanned the channel's whole backlog for each candidate: 63 ms a pass at 10,000).
    .where((eb) =>
      eb(
        "n.id",
        "=",
        eb
          .selectFrom("notifications as p")
          .select((e) => e.fn.min("p.id").as("head"))
          .where("p.status", "=", pending)
          .whereRef("p.channel", "=", "n.channel")
          .whereRef("p.server_id", "=", "n.server_id")
          .whereRef("p.service_id", "=", "n.service_id"),
      ),
    )
    .orderBy("n.id")
    .limit(limit);
  if (sending.length > 0) query = query.where("n.id", "not in", sending);
  return backend.claiming(query);
});

const claim = compiledOnce((db: Db, _backend: Backend, ids: readonly number[], now: number, instance: string) =>
  db
    .updateTable("notifications")
    .set((eb) => ({ in_flight_since: now, claimed_by: instance, attempts: eb("attempts", "+", 1) }))
    .where("id", "in", ids),
);

export async function nextNotificationAt(db: Db, backend: Backend): Promise<number | undefined> {
  const { rows } = await nextAt(db, backend);
  return rows[0]?.at ?? undefined;
}

const nextAt = compiledOnce((db: Db) =>
  db
    .selectFrom("notifications")
    .select((eb) => eb.fn.min("next_attempt_at").as("at"))
    .where("status", "=", pending),
);

/**
 * Mark deliveries delivered, with what their destinations called them: one statement per 500 (a statement per
 * delivery was a round trip each on PostgreSQL, a third of delivering a burst there).
 */
export async function markDelivered(trx: Db, delivered: readonly { readonly id: number; readonly remoteId: string }[], now: number): Promise<void> {
  for (let i = 0; i < delivered.length; i += 500) {
    const batch = delivered.slice(i, i + 500);
    const remoteIds = sql.join(batch.map((d) => sql`WHEN ${d.id} THEN ${d.remoteId}`), sql` `);
    await trx
      .updateTable("notifications")
      .set({ status: "delivered", remote_id: sql<string>`CASE id ${remoteIds} END`, delivered_at: now, last_error: null, in_flight_since: null, claimed_by: null })
      .where("id", "in", batch.map((d) => d.id))
      .execute();
  }
}

/** Make every pending retry of `channel` due now (it took a delivery it had failed: it is back). Answers how many. */
export async function retryNow(db: Db, channel: string, now: number): Promise<number> {
  const result = await db
    .updateTable("notifications")
    .set({ next_attempt_at: now })
    .where("status", "=", pending)
    .where("channel", "=", channel)
    .where("next_attempt_at", ">", now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function markRetry(db: Db, backend: Backend, id: number, error: string, nextAt: number): Promise<void> {
  await retry(db, backend, id, error, nextAt);
}

const retry = compiledOnce((db: Db, _backend: Backend, id: number, error: string, nextAt: number) =>
  db.updateTable("notifications").set({ last_error: error, next_attempt_at: nextAt, in_flight_since: null, claimed_by: null }).where("id", "=", id),
);

export async function markGivenUp(db: Db, backend: Backend, id: number, status: "failed" | "unsent", error: string): Promise<void> {
  await givenUp(db, backend, id, status, error);
}

const givenUp = compiledOnce((db: Db, _backend: Backend, id: number, status: "failed" | "unsent", error: string) =>
  db.updateTable("notifications").set({ status, last_error: error, in_flight_since: null, claimed_by: null }).where("id", "=", id),
);

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
 * The unsent notifications to queue again now that they have a topic, as the policy says (policy/delivery.ts
 * requeue): `defaultTopic`, the cluster has a default ntfy topic. The query reads only the policy's candidates
 * of open incidents: the outbox may hold many unsent rows, and almost always none is to be queued.
 */
export async function unsentDowns(db: Db, defaultTopic: boolean): Promise<{ id: number; topic: string | null }[]> {
  const rows = await db
    .selectFrom("notifications as n")
    .innerJoin("incidents as i", "i.id", "n.incident_id")
    .innerJoin("http_check_configs as c", "c.service_key", "i.service_key")
    .select(["n.id", "n.channel", "n.kind", "i.closed_at", "c.notify_topic"])
    .where("n.status", "=", requeueCandidates.status)
    .where("n.channel", "=", requeueCandidates.channel)
    .where("n.kind", "=", requeueCandidates.kind)
    .where("i.closed_at", "is", null)
    .execute();
  const unsent = rows.map((r) => ({ id: r.id, channel: r.channel, kind: r.kind, incidentOpen: r.closed_at === null, notifyTopic: r.notify_topic }));
  return requeueing(unsent, defaultTopic);
}

/** Queue these again (those still unsent: another node may have queued them meanwhile); answers how many. */
export async function requeue(trx: Db, ready: readonly { id: number; topic: string | null }[], now: number): Promise<number> {
  let queued = 0;
  for (const r of ready) {
    const result = await trx
      .updateTable("notifications")
      .set({ status: "pending", topic: r.topic, next_attempt_at: now, attempts: 0, last_error: null, claimed_by: null })
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

/** What became of the DOWN of an incident on a channel (or of its escalation, on a step's channel), if one was written. */
export async function downStatus(db: Db, incidentId: number, channel: string): Promise<NotificationStatus | undefined> {
  const row = await db
    .selectFrom("notifications")
    .select("status")
    .where("incident_id", "=", incidentId)
    .where("channel", "=", channel)
    .where("kind", "in", ["down", "escalation"])
    .orderBy("id")
    .executeTakeFirst();
  return row?.status;
}
