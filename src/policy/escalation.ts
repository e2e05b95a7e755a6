/**
 * Escalation: pure. When nobody acknowledges an open incident, each step of its service's `escalate` (the
 * check's, else its server's) sends its DOWN again, marked as an escalation, to that step's channels once
 * `afterMinutes` have passed since the incident opened: each step once, only while the incident is open, told
 * (its DOWN went out: one held by a silence has told nobody yet) and unacknowledged. The store reads the
 * candidates with the steps already sent, asks, and writes each step sent beside its notification in one
 * transaction; the step's key (incident, step) keeps two nodes from both sending it.
 */
import type { NotificationBody } from "../domain/model.ts";
import type { NotificationWrite } from "../domain/batch.ts";
import type { Routes } from "../domain/notification.ts";
import type { Responder } from "./acknowledge.ts";
import { duration } from "./message.ts";
import { outageMs } from "./outage.ts";
import { admits, eventOf } from "./route.ts";
import type { EventName } from "../domain/notification.ts";

export interface EscalationStep {
  readonly afterMinutes: number;
  readonly channels: readonly string[];
}

/** An incident as escalation looks at it. */
export interface Unanswered {
  readonly id: number;
  readonly subject: Responder;
  /** When it opened (its DOWN was due): the steps count from here. */
  readonly openedAt: number;
  /** Its first failed check. */
  readonly startedAt: number;
  readonly closedAt: number | null;
  readonly ackedAt: number | null;
  /** Its DOWN went out. */
  readonly notified: boolean;
  readonly firstError: string | null;
  /** Its service's steps: the check's, else the server's; empty: none. */
  readonly steps: readonly EscalationStep[];
  /** The indexes of the steps already sent. */
  readonly sent: readonly number[];
}

export interface Escalation {
  readonly incidentId: number;
  /** The step's index in its service's steps. */
  readonly step: number;
  readonly notification: NotificationWrite;
}

const minuteMs = 60_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** The service's steps: its check's, else its server's. */
export const stepsOf = (check: readonly EscalationStep[] | null, server: readonly EscalationStep[] | null): readonly EscalationStep[] => check ?? server ?? [];

/** The steps due at `now`, each with the notification it sends. */
export function dueEscalations(incidents: readonly Unanswered[], now: number, routes: Routes): Escalation[] {
  const due: Escalation[] = [];
  for (const incident of incidents) {
    if (incident.closedAt !== null || incident.ackedAt !== null || !incident.notified) continue;
    incident.steps.forEach((step, index) => {
      if (incident.sent.includes(index) || now < incident.openedAt + step.afterMinutes * minuteMs) return;
      due.push({ incidentId: incident.id, step: index, notification: escalationNotice(incident, index, now, routes) });
    });
  }
  return due;
}

/** When the next step not yet sent falls due, if any (the driver need not look before). */
export function nextEscalationAt(incidents: readonly Unanswered[]): number | undefined {
  let next: number | undefined;
  for (const incident of incidents) {
    if (incident.closedAt !== null || incident.ackedAt !== null || !incident.notified) continue;
    incident.steps.forEach((step, index) => {
      if (incident.sent.includes(index)) return;
      const at = incident.openedAt + step.afterMinutes * minuteMs;
      if (next === undefined || at < next) next = at;
    });
  }
  return next;
}

function escalationNotice(incident: Unanswered, index: number, now: number, routes: Routes): NotificationWrite {
  const { subject } = incident;
  const step = incident.steps[index]!;
  const lasted = duration(outageMs({ startedAt: incident.startedAt, closedAt: null }, now));
  const body: NotificationBody = {
    title: `DOWN (escalated): ${subject.serverId}/${subject.serviceId}`,
    message: [
      `Not acknowledged ${step.afterMinutes} min after it was reported: escalation step ${index + 1} of ${incident.steps.length}`,
      ...(incident.firstError ? [incident.firstError] : []),
      ...(subject.type === "heartbeat" ? [] : [`${subject.type === "http" ? "URL" : "Target"}: ${subject.url}`]),
      `Down since ${iso(incident.startedAt)} (${lasted})`,
    ].join("\n"),
    priority: 5,
    tags: ["rotating_light", "healthd", "down", "escalation"],
    ...(subject.type === "http" ? { click: subject.url } : {}),
  };
  const event = { ...eventOf("escalation", subject, now, body, incident.id), error: incident.firstError, since: iso(incident.startedAt), duration: lasted };
  return {
    at: now, serverId: subject.serverId, serviceId: subject.serviceId, kind: "escalation", topic: subject.notifyTopic, body,
    incidentId: incident.id, event, channels: step.channels.filter((name) => admits(routes.events.get(name), "escalation")),
  };
}

/**
 * Where an incident's RECOVERED goes: its service's channels, and those its escalation steps went to (that
 * admit it), so that whoever was paged hears it is over (a PagerDuty alert an escalation opened is resolved).
 */
export function alsoTo(channels: string[], escalatedTo: readonly string[] | undefined, event: EventName, routes: Routes): string[] {
  if (!escalatedTo || escalatedTo.length === 0) return channels;
  return [...channels, ...escalatedTo.filter((name) => !channels.includes(name) && admits(routes.events.get(name), event))];
}
