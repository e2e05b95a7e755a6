/**
 * Responding to incidents: acknowledgements, escalation, and the secret that signs the notifications' links.
 * Each write is one transaction that reads the facts, asks the policy (policy/acknowledge.ts,
 * policy/escalation.ts) and writes its answer, outbox rows included. "Exactly once" is a conditional write:
 * an acknowledgement updates only an incident still open and unacknowledged; an escalation step is recorded
 * under a key (incident, step) that a second node cannot insert again.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { ackNotice, type Acknowledgement, type Responder } from "../../policy/acknowledge.ts";
import { dueEscalations, nextEscalationAt, stepsOf, type EscalationStep, type Unanswered } from "../../policy/escalation.ts";
import type { Backend } from "../backend.ts";
import type { AckOutcome, Incident, IncidentDelivery } from "../records.ts";
import type { Tables } from "../tables.ts";
import { incidentFromRow } from "./alerting.ts";
import { readRoutes } from "./channels.ts";
import { insertNotifications } from "./results.ts";

type Db = Kysely<Tables>;

export async function incidentById(db: Db, id: number): Promise<Incident | undefined> {
  const row = await db.selectFrom("incidents").selectAll().where("id", "=", id).executeTakeFirst();
  return row && incidentFromRow(row);
}

/** The open incident of a service, if it has one. */
export async function openIncidentOf(db: Db, serverId: string, serviceId: string): Promise<Incident | undefined> {
  const row = await db
    .selectFrom("incidents")
    .selectAll()
    .where("server_id", "=", serverId)
    .where("service_id", "=", serviceId)
    .where("closed_at", "is", null)
    .orderBy("id", "desc")
    .executeTakeFirst();
  return row && incidentFromRow(row);
}

/**
 * Acknowledge incident `id` if it is still open and nobody has: the update's condition decides, so that of two
 * nodes asked at once one wins. The winner queues the `ack` notification for the service's channels.
 */
export async function acknowledge(trx: Db, backend: Backend, id: number, ack: Acknowledgement): Promise<AckOutcome> {
  const result = await trx
    .updateTable("incidents")
    .set({ acked_at: ack.at, acked_by: ack.by, ack_note: ack.note })
    .where("id", "=", id)
    .where("acked_at", "is", null)
    .where("closed_at", "is", null)
    .executeTakeFirst();
  const incident = await incidentById(trx, id);
  if (!incident) return { outcome: "unknown" };
  if (Number(result.numUpdatedRows) === 0) return { outcome: incident.closedAt !== null ? "closed" : "already acknowledged", incident };
  const row = await responders(trx).where("s.server_id", "=", incident.serverId).where("s.id", "=", incident.serviceId).executeTakeFirst();
  if (row) await insertNotifications(trx, backend, [ackNotice(responderOf(row), incident, ack, await readRoutes(trx, backend))]);
  return { outcome: "acknowledged", incident };
}

/**
 * Send the escalation steps due at `now`: each one recorded under its key first, and its notification queued
 * only when this transaction recorded it. Answers how many went out, and when the next one falls due.
 */
export async function escalate(trx: Db, backend: Backend, now: number): Promise<{ sent: number; nextAt: number | undefined }> {
  const first = await unanswered(trx);
  if (first.length === 0) return { sent: 0, nextAt: undefined };
  // Lock the services as a batch of results does, then read again: a RECOVERED or an acknowledgement committed
  // meanwhile is seen (no step after it), and one that comes later waits, then routes to the step's channels.
  await backend.lockServices(trx, [...new Set(first.map((c) => c.serviceKey))]);
  const candidates = await unanswered(trx);
  if (candidates.length === 0) return { sent: 0, nextAt: undefined };
  const due = dueEscalations(candidates, now, await readRoutes(trx, backend));
  let sent = 0;
  for (const escalation of due) {
    const inserted = await trx
      .insertInto("incident_escalations")
      .values({ incident_id: escalation.incidentId, step: escalation.step, sent_at: now })
      .onConflict((oc) => oc.columns(["incident_id", "step"]).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) continue; // another node sent it
    await insertNotifications(trx, backend, [escalation.notification]);
    // Where its RECOVERED goes too: read again, a step of the same incident may have just added to it.
    const { escalated_to } = await trx.selectFrom("incidents").select("escalated_to").where("id", "=", escalation.incidentId).executeTakeFirstOrThrow();
    const to = [...new Set([...(parse<string[]>(escalated_to) ?? []), ...escalation.notification.channels])];
    await trx.updateTable("incidents").set({ escalated_to: JSON.stringify(to) }).where("id", "=", escalation.incidentId).execute();
    sent += 1;
  }
  const left = candidates.map((c) => ({ ...c, sent: [...c.sent, ...due.filter((d) => d.incidentId === c.id).map((d) => d.step)] }));
  return { sent, nextAt: nextEscalationAt(left) };
}

/** The open, told, unacknowledged incidents of services with escalation steps (their check's or their server's), with the steps sent. */
async function unanswered(db: Db): Promise<(Unanswered & { readonly serviceKey: number })[]> {
  const rows = await responders(db)
    .innerJoin("incidents as i", "i.service_key", "s.key")
    .select(["i.id", "i.service_key", "i.opened_at", "i.started_at", "i.closed_at", "i.acked_at", "i.notified", "i.first_error"])
    .where("i.closed_at", "is", null)
    .where("i.acked_at", "is", null)
    .where((eb) => eb.or([eb("c.escalate", "is not", null), eb("srv.escalate", "is not", null)]))
    // In one order on every node: two nodes recording steps of several incidents at once wait, never deadlock.
    .orderBy("i.id")
    .execute();
  if (rows.length === 0) return [];
  const sent = await db.selectFrom("incident_escalations").select(["incident_id", "step"]).where("incident_id", "in", rows.map((r) => r.id)).execute();
  return rows.map((r) => ({
    id: r.id,
    serviceKey: r.service_key,
    subject: responderOf(r),
    openedAt: r.opened_at,
    startedAt: r.started_at,
    closedAt: r.closed_at,
    ackedAt: r.acked_at,
    notified: Boolean(r.notified),
    firstError: r.first_error,
    steps: stepsOf(parse<EscalationStep[]>(r.escalate), parse<EscalationStep[]>(r.server_escalate)),
    sent: sent.filter((s) => s.incident_id === r.id).map((s) => s.step),
  }));
}

const parse = <T>(json: string | null): T | null => (json === null ? null : (JSON.parse(json) as T));

/** A service as an acknowledgement or an escalation speaks of it. */
const responders = (db: Db) =>
  db
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .select(["s.server_id", "s.id as service_id", "srv.name as server_name", "s.name as service_name", "c.type", "c.url", "c.notify_topic"])
    .select(["c.channels", "srv.channels as server_channels", "c.escalate", "srv.escalate as server_escalate"]);

type ResponderRow = {
  server_id: string; service_id: string; server_name: string; service_name: string; type: Responder["type"]; url: string;
  notify_topic: string | null; channels: string | null; server_channels: string | null;
};

function responderOf(r: ResponderRow): Responder {
  return {
    serverId: r.server_id, serviceId: r.service_id, serverName: r.server_name, serviceName: r.service_name, type: r.type, url: r.url,
    notifyTopic: r.notify_topic, channels: parse<string[]>(r.channels) ?? parse<string[]>(r.server_channels),
  };
}

/**
 * The secret that signs acknowledgement links, the same for every node: kept in the database, made by the first
 * node that needs it (an insert a second node's cannot repeat; both then read the one that won).
 */
export async function ackSecret(trx: Db): Promise<string> {
  await trx
    .insertInto("cluster_settings")
    .values({ name: "ack_secret", value: randomBytes(32).toString("base64url") })
    .onConflict((oc) => oc.column("name").doNothing())
    .execute();
  const row = await trx.selectFrom("cluster_settings").select("value").where("name", "=", "ack_secret").executeTakeFirstOrThrow();
  return row.value;
}

/** The outbox's rows of these incidents (a notification has one a channel), oldest first. */
export async function incidentDeliveries(db: Db, ids: readonly number[]): Promise<IncidentDelivery[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("notifications")
    .select(["incident_id", "kind", "channel", "status", "created_at", "delivered_at", "attempts", "last_error"])
    .where("incident_id", "in", [...ids])
    .orderBy("id")
    .execute();
  return rows.map((r) => ({
    incidentId: r.incident_id!,
    kind: r.kind,
    channel: r.channel,
    status: r.status,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
    attempts: r.attempts,
    lastError: r.last_error,
  }));
}
