/**
 * Where a notification goes, and what templates may say of it: pure. A notification goes to the check's
 * channels, else its server's, else the cluster's default (serve --channel), else the `ntfy` channel the
 * daemon's --ntfy-* flags make; each of those takes it only if its `events` admit the notification's event.
 */
import type { IncidentState, NotificationBody, NotificationKind } from "../domain/model.ts";
import type { ChannelEvent } from "../domain/schema/channel.ts";
import type { EventFields, EventName, Routes } from "../domain/notification.ts";
import { duration, type Judged } from "./message.ts";
import { outageMs } from "./outage.ts";

export const noRoutes: Routes = { events: new Map(), defaults: null };

/** Who a notification is about. */
export interface Named {
  readonly serverId: string;
  readonly serviceId: string;
  readonly serverName: string;
  readonly serviceName: string;
  readonly url: string;
}

/** The incident a DOWN, reminder or RECOVERED speaks of: its result and the state before and after it. */
export interface Moment {
  readonly judged: Judged;
  readonly before: IncidentState;
  readonly after: IncidentState;
  /** The incident's first failed check (its stored startedAt). */
  readonly startedAt: number;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export function eventOf(kind: NotificationKind, subject: Named, at: number, body: NotificationBody, incidentId: number | null, moment?: Moment): EventFields {
  const event: EventName = kind === "down" && moment?.judged.errorKind === "missed" ? "late" : kind;
  // A DOWN, a reminder and a RECOVERED all count from the incident's start, as their text does.
  const since = kind === "down" || kind === "reminder" || kind === "recovered" ? moment?.startedAt : null;
  const lasted = since != null && (kind === "reminder" || kind === "recovered") ? duration(outageMs({ startedAt: since, closedAt: at }, at)) : null;
  const error = kind === "recovered" ? null : (moment?.judged.error ?? body.message?.split("\n")[0] ?? null);
  // Only a failed run's DOWN has output: other events leave the field out, as they leave out held and services.
  const output = kind === "down" ? moment?.judged.output : undefined;
  return {
    event, server: subject.serverId, service: subject.serviceId, serverName: subject.serverName, serviceName: subject.serviceName, url: subject.url,
    error, since: since == null ? null : iso(since), duration: lasted, incidentId, at: iso(at), title: body.title ?? "", message: body.message ?? "",
    ...(output && { output }),
  };
}

/** Whether a channel that takes `events` takes `event`: `slow` covers its back-to-normal, `down` a late heartbeat. */
export function admits(events: readonly ChannelEvent[] | null | undefined, event: EventName): boolean {
  if (!events) return event !== "test";
  if (event === "normal") return events.includes("slow");
  if (event === "late") return events.includes("late") || events.includes("down");
  return events.includes(event);
}

/** The channels a notification of `event` goes to, for a service that names `names` (its check's, else its server's). */
export function route(names: readonly string[] | null, event: EventName, routes: Routes): string[] {
  return (names ?? routes.defaults ?? ["ntfy"]).filter((name) => admits(routes.events.get(name), event));
}
