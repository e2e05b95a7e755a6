/**
 * The notification outbox. Rows are written by the recorder, in the transaction of the check that calls for
 * them, and moved along by the delivery loop.
 */
import type { Selectable } from "kysely";
import type { Store } from "./db.ts";
import type { NotificationsTable } from "./tables.ts";

export type NotificationRow = Selectable<NotificationsTable>;

/** What the delivery loop may send now: per topic only the oldest pending row, so a topic stays in order. */
export function dueNotifications(store: Store, now: number): NotificationRow[] {
  const { db } = store;
  return store.all(
    db
      .selectFrom("notifications")
      .selectAll()
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", now)
      .where("id", "in", db.selectFrom("notifications").select((eb) => eb.fn.min("id").as("id")).where("status", "=", "pending").groupBy("topic"))
      .orderBy("id"),
  );
}

/** When the next pending notification is due, if any. */
export function nextAttemptAt(store: Store): number | undefined {
  const row = store.get(
    store.db
      .selectFrom("notifications")
      .select((eb) => eb.fn.min("next_attempt_at").as("at"))
      .where("status", "=", "pending"),
  );
  return row?.at ?? undefined;
}

/** A publish is starting: committed first, so a crash before its answer is known leaves a trace. */
export function markInFlight(store: Store, id: number, now: number): void {
  store.run(
    store.db
      .updateTable("notifications")
      .set((eb) => ({ in_flight_since: now, attempts: eb("attempts", "+", 1) }))
      .where("id", "=", id),
  );
}

export function markDelivered(store: Store, id: number, ntfyId: string, now: number): void {
  store.run(
    store.db
      .updateTable("notifications")
      .set({ status: "delivered", ntfy_id: ntfyId, delivered_at: now, last_error: null, in_flight_since: null })
      .where("id", "=", id),
  );
}

export function markRetry(store: Store, id: number, error: string, nextAt: number): void {
  store.run(
    store.db
      .updateTable("notifications")
      .set({ last_error: error, next_attempt_at: nextAt, in_flight_since: null })
      .where("id", "=", id),
  );
}

export function markFailed(store: Store, id: number, error: string): void {
  store.run(
    store.db
      .updateTable("notifications")
      .set({ status: "failed", last_error: error, in_flight_since: null })
      .where("id", "=", id),
  );
}

export function notificationCounts(store: Store): Record<"pending" | "delivered" | "failed" | "unsent", number> {
  const rows = store.all(
    store.db
      .selectFrom("notifications")
      .select((eb) => ["status", eb.fn.countAll<number>().as("n")])
      .groupBy("status"),
  );
  const counts = { pending: 0, delivered: 0, failed: 0, unsent: 0 };
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}
