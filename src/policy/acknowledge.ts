/**
 * What an acknowledgement tells the service's channels, so that the team knows someone is on it: pure. Whether
 * an incident may still be acknowledged is one conditional write (store/queries/responding.ts: not yet
 * acknowledged, still open), so that of two nodes asked at once one wins; this says what the winner sends.
 */
import type { CheckType, NotificationBody } from "../domain/model.ts";
import type { NotificationWrite } from "../domain/batch.ts";
import type { Routes } from "../domain/notification.ts";
import { duration } from "./message.ts";
import { outageMs } from "./outage.ts";
import { eventOf, route, type Named } from "./route.ts";

/** A service as responding to its incidents needs it: who it is, where its notifications go. */
export interface Responder extends Named {
  readonly type: CheckType;
  /** Its check's channels, else its server's; null: the default. */
  readonly channels: readonly string[] | null;
  readonly notifyTopic: string | null;
}

export interface Acknowledgement {
  /** A token's name, or "link" / "ntfy" for the notification's own paths. */
  readonly by: string;
  readonly note: string | null;
  readonly at: number;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** The `ack` notification of an incident (`startedAt`: its first failed check) acknowledged as `ack` says. */
export function ackNotice(subject: Responder, incident: { readonly id: number; readonly startedAt: number }, ack: Acknowledgement, routes: Routes): NotificationWrite {
  const name = `${subject.serverId}/${subject.serviceId}`;
  const body: NotificationBody = {
    title: `ACK: ${name}`,
    message: [
      `Acknowledged by ${ack.by}${ack.note ? `: ${ack.note}` : ""}`,
      `Down since ${iso(incident.startedAt)} (${duration(outageMs({ startedAt: incident.startedAt, closedAt: null }, ack.at))}); reminders and escalations stop, RECOVERED still comes`,
    ].join("\n"),
    priority: 3,
    tags: ["eyes", "healthd", "ack"],
  };
  const event = { ...eventOf("ack", subject, ack.at, body, incident.id), ackedBy: ack.by, ackNote: ack.note };
  return {
    at: ack.at, serverId: subject.serverId, serviceId: subject.serviceId, kind: "ack", topic: subject.notifyTopic, body,
    incidentId: incident.id, event, channels: route(subject.channels, "ack", routes),
  };
}
