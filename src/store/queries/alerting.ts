/**
 * Silences and incidents as records: what POST/GET/DELETE /silences, GET /incidents and `healthd silence`
 * read and write. Whether a silence covers a result, and when an incident opens or closes, is the policy's
 * to decide (src/policy/decide.ts).
 */
import type { Kysely, Selectable } from "kysely";
import type { Incident, IncidentQuery, NewSilence, Silence } from "../store.ts";
import type { IncidentsTable, SilencesTable, Tables } from "../tables.ts";
import { findService } from "./servers.ts";

type Db = Kysely<Tables>;

function silenceFromRow(r: Selectable<SilencesTable>): Silence {
  return { id: r.id, serverId: r.server_id, serviceId: r.service_id, startsAt: r.starts_at, endsAt: r.ends_at, reason: r.reason, createdAt: r.created_at };
}

export async function addSilence(db: Db, silence: NewSilence, now: number): Promise<Silence | "no server" | "no service"> {
  const server = await db.selectFrom("servers").select("id").where("id", "=", silence.serverId).executeTakeFirst();
  if (!server) return "no server";
  if (silence.serviceId !== null) {
    const service = await findService(db, silence.serverId, silence.serviceId);
    if (!service) return "no service";
  }
  const row = await db
    .insertInto("silences")
    .values({
      server_id: silence.serverId,
      service_id: silence.serviceId,
      starts_at: silence.startsAt,
      ends_at: silence.endsAt,
      reason: silence.reason,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return silenceFromRow(row);
}

/** The silences that have not ended at `now` (active, then future), by start. */
export async function silences(db: Db, now: number): Promise<Silence[]> {
  const rows = await db.selectFrom("silences").selectAll().where("ends_at", ">", now).orderBy("starts_at").orderBy("id").execute();
  return rows.map(silenceFromRow);
}

export async function silencesBetween(db: Db, from: number, until: number): Promise<Silence[]> {
  const rows = await db.selectFrom("silences").selectAll().where("starts_at", "<", until).where("ends_at", ">", from).orderBy("starts_at").orderBy("id").execute();
  return rows.map(silenceFromRow);
}

/**
 * End a silence now: an active one ends at `now` (it stays on record), a future one is deleted. Answers
 * whether there was one to end.
 */
export async function endSilence(db: Db, id: number, now: number): Promise<boolean> {
  const row = await db.selectFrom("silences").select(["starts_at", "ends_at"]).where("id", "=", id).executeTakeFirst();
  if (!row || row.ends_at <= now) return false;
  if (row.starts_at > now) await db.deleteFrom("silences").where("id", "=", id).execute();
  else await db.updateTable("silences").set({ ends_at: now }).where("id", "=", id).execute();
  return true;
}

export function incidentFromRow(r: Selectable<IncidentsTable>): Incident {
  return {
    id: r.id,
    serverId: r.server_id,
    serviceId: r.service_id,
    startedAt: r.started_at,
    openedAt: r.opened_at,
    closedAt: r.closed_at,
    failures: r.failures,
    firstError: r.first_error,
    notified: Boolean(r.notified),
    acknowledged: r.acked_at === null ? null : { by: r.acked_by ?? "", at: r.acked_at, note: r.ack_note },
  };
}

/**
 * A page of incidents, newest first, by id (an incident opened later has a larger id). The failures of an
 * open incident are counted until now from its service's state; a closed one keeps its count.
 */
export async function incidents(db: Db, q: IncidentQuery): Promise<{ incidents: Incident[]; next: number | null }> {
  let query = db
    .selectFrom("incidents as i")
    .leftJoin("service_states as st", (join) => join.onRef("st.service_key", "=", "i.service_key").onRef("st.incident_id", "=", "i.id"))
    .selectAll("i")
    .select("st.incident_failures");
  if (q.serverId !== undefined) query = query.where("i.server_id", "=", q.serverId);
  if (q.serviceId !== undefined) query = query.where("i.service_id", "=", q.serviceId);
  if (q.open !== undefined) query = query.where("i.closed_at", q.open ? "is" : "is not", null);
  if (q.before !== undefined) query = query.where("i.id", "<", q.before);
  if (q.startedBefore !== undefined) query = query.where("i.started_at", "<", q.startedBefore);
  if (q.endedAfter !== undefined) query = query.where((eb) => eb.or([eb("i.closed_at", "is", null), eb("i.closed_at", ">", q.endedAfter!)]));
  const rows = await query.orderBy("i.id", "desc").limit(q.limit + 1).execute();
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    incidents: page.map((r) => incidentFromRow({ ...r, failures: r.closed_at === null ? (r.incident_failures ?? r.failures) : r.failures })),
    next: rows.length > q.limit && last ? last.id : null,
  };
}
