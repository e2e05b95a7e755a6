/**
 * Health-check data entries and the service state written beside them.
 */
import type { Selectable } from "kysely";
import type { CheckResult, Entry, ErrorKind } from "../model.ts";
import type { IncidentState } from "../notify/incident.ts";
import type { NotificationBody } from "../notify/message.ts";
import type { Store } from "./db.ts";
import type { HealthCheckDataEntriesTable } from "./tables.ts";

type EntryRow = Omit<Selectable<HealthCheckDataEntriesTable>, "service_key">;

export function entryFromRow(row: EntryRow): Entry {
  return {
    id: String(row.id),
    checkedAt: new Date(row.checked_at).toISOString(),
    ok: row.ok === 1,
    status: row.status,
    latencyMs: row.latency_ms,
    errorKind: row.error_kind as ErrorKind | null,
    error: row.error,
    matched: row.matched,
  };
}


/** One finished check, ready to be stored. */
export interface Finished {
  readonly serviceKey: number;
  readonly checkedAt: number;
  readonly result: CheckResult;
  readonly state: IncidentState;
  /** The notification this check calls for, stored in the outbox in the same transaction. */
  readonly notification?: OutgoingNotification | undefined;
}

export interface OutgoingNotification {
  readonly serverId: string;
  readonly serviceId: string;
  readonly kind: "down" | "recovered";
  /** null when no topic is configured anywhere: the notification is kept as unsent. */
  readonly topic: string | null;
  readonly message: NotificationBody;
}

/**
 * Store a batch of finished checks, each entry with its service's new state (and the notification it calls
 * for), in one transaction. A service deleted while its check ran is skipped (its result has nowhere to go).
 * Answers the stored entries' ids, in order, with undefined for skipped ones.
 */
export function recordChecks(store: Store, batch: readonly Finished[]): (number | undefined)[] {
  const { db } = store;
  const hot = store.statements(prepareHot);
  return store.transaction(() =>
    batch.map((f) => {
      const id = insertEntry(store, f.serviceKey, f.checkedAt, f.result);
      if (id === undefined) return undefined;
      const s = f.state;
      hot.upsertState.run(f.serviceKey, s.status, s.consecutiveFailures, f.checkedAt, id, s.incidentOpenSince, s.failingSince);
      const n = f.notification;
      if (n) {
        store.run(
          db.insertInto("notifications").values({
            created_at: f.checkedAt,
            server_id: n.serverId,
            service_id: n.serviceId,
            kind: n.kind,
            topic: n.topic,
            message: JSON.stringify(n.message),
            status: n.topic === null ? "unsent" : "pending",
            next_attempt_at: f.checkedAt,
            last_error: n.topic === null ? "no ntfy topic: set notifyTopic on the check or start healthd with --ntfy-topic" : null,
          }),
        );
      }
      return id;
    }),
  );
}

/** Every service's stored state, by service key: what the recorder resumes from after a restart. */
/** Store one entry; undefined when its service no longer exists. */
export function insertEntry(store: Store, serviceKey: number, checkedAt: number, result: CheckResult): number | undefined {
  const r = result;
  const info = store.statements(prepareHot).insertEntry.run(
    serviceKey, checkedAt, r.ok ? 1 : 0, r.status, r.latencyMs, r.errorKind, r.error, r.matched, serviceKey,
  );
  return info.changes === 0 ? undefined : Number(info.lastInsertRowid);
}

/**
 * The write path's statements. They are plain SQL rather than Kysely because they run for every check:
 * building and compiling a Kysely query per row cost more than the write itself (bench:store measured
 * 9,000 entries/s that way, 35,000-52,000 like this). The columns are those of tables.ts.
 */
function prepareHot(sqlite: Store["sqlite"]) {
  return {
    // The entry is stored only if its service still exists (it may have been deleted while it ran).
    insertEntry: sqlite.prepare(
      `INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms, error_kind, error, matched)
       SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM services WHERE key = ?)`,
    ),
    upsertState: sqlite.prepare(
      `INSERT INTO service_states (service_key, status, consecutive_failures, last_checked_at, last_entry_id, incident_open_since, failing_since)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (service_key) DO UPDATE SET status = excluded.status, consecutive_failures = excluded.consecutive_failures,
         last_checked_at = excluded.last_checked_at, last_entry_id = excluded.last_entry_id,
         incident_open_since = excluded.incident_open_since, failing_since = excluded.failing_since`,
    ),
  };
}

export function readStates(store: Store): Map<number, IncidentState> {
  const rows = store.all(
    store.db
      .selectFrom("service_states")
      .select(["service_key", "status", "consecutive_failures", "failing_since", "incident_open_since"]),
  );
  return new Map(
    rows.map((r) => [
      r.service_key,
      {
        status: r.status,
        consecutiveFailures: r.consecutive_failures,
        failingSince: r.failing_since,
        incidentOpenSince: r.incident_open_since,
      },
    ]),
  );
}

export interface EntryQuery {
  readonly limit: number;
  /** Only entries older than this cursor (from a previous page's `next`). */
  readonly before?: string | undefined;
  /** Only entries checked at or after this time (Unix ms). */
  readonly since?: number | undefined;
  /** Only entries checked before this time (Unix ms). */
  readonly until?: number | undefined;
  readonly ok?: boolean | undefined;
}

/** The cursor is the last entry's id; it is opaque to clients so that its form may change. */
export function encodeCursor(id: number): string {
  return Buffer.from(`e${id}`).toString("base64url");
}

export function decodeCursor(cursor: string): number | undefined {
  const text = Buffer.from(cursor, "base64url").toString();
  const m = /^e([0-9]{1,15})$/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** A page of a service's entries, newest first. Walks the (service_key, id) index backwards. */
export function listEntries(store: Store, serviceKey: number, q: EntryQuery): { entries: Entry[]; next: string | null } {
  let query = store.db
    .selectFrom("health_check_data_entries")
    .select(["id", "checked_at", "ok", "status", "latency_ms", "error_kind", "error", "matched"])
    .where("service_key", "=", serviceKey);
  const before = q.before === undefined ? undefined : decodeCursor(q.before);
  if (before !== undefined) query = query.where("id", "<", before);
  if (q.since !== undefined) query = query.where("checked_at", ">=", q.since);
  if (q.until !== undefined) query = query.where("checked_at", "<", q.until);
  if (q.ok !== undefined) query = query.where("ok", "=", q.ok ? 1 : 0);
  const rows = store.all(query.orderBy("id", "desc").limit(q.limit + 1));
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return { entries: page.map(entryFromRow), next: rows.length > q.limit && last ? encodeCursor(last.id) : null };
}

/** An entry with the names of its server and service, as `healthd tail` shows it. */
export interface NamedEntry extends Entry {
  readonly server: string;
  readonly service: string;
}

/** Entries stored after `afterId` (oldest first), of one server or service or of all. */
export function entriesAfter(
  store: Store,
  afterId: number,
  filter: { serverId?: string | undefined; serviceId?: string | undefined },
  limit = 1000,
): NamedEntry[] {
  let query = store.db
    .selectFrom("health_check_data_entries as e")
    .innerJoin("services as s", "s.key", "e.service_key")
    .select(["e.id", "e.checked_at", "e.ok", "e.status", "e.latency_ms", "e.error_kind", "e.error", "e.matched"])
    .select(["s.server_id", "s.id as service_id"])
    .where("e.id", ">", afterId);
  if (filter.serverId !== undefined) query = query.where("s.server_id", "=", filter.serverId);
  if (filter.serviceId !== undefined) query = query.where("s.id", "=", filter.serviceId);
  return store
    .all(query.orderBy("e.id").limit(limit))
    .map((r) => ({ server: r.server_id, service: r.service_id, ...entryFromRow(r) }));
}

/** The id of the newest entry, or 0. */
export function lastEntryId(store: Store): number {
  const row = store.get(store.db.selectFrom("health_check_data_entries").select((eb) => eb.fn.max("id").as("id")));
  return row?.id ?? 0;
}

/**
 * Delete up to `batch` of the oldest entries checked before `cutoff` (Unix ms); answers how many went.
 * Entries are stored as checks finish, so the oldest sit first in rowid order: a batch looks at the first
 * `batch` rows only, which bounds its work however large the table is.
 */
export function deleteEntriesBefore(store: Store, cutoff: number, batch: number): number {
  const { db } = store;
  const slice = store.all(db.selectFrom("health_check_data_entries").select(["id", "checked_at"]).orderBy("id").limit(batch));
  let last: number | undefined;
  for (const row of slice) if (row.checked_at < cutoff) last = row.id;
  if (last === undefined) return 0;
  return store.run(db.deleteFrom("health_check_data_entries").where("id", "<=", last).where("checked_at", "<", cutoff));
}
