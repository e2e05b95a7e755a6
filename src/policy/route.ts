/**
 * Where a notification goes, and what templates may say of it: pure. A notification goes to the check's
 * channels, else its server's, else the cluster's default (serve --channel), else the `ntfy` channel the
 * daemon's --ntfy-* flags make; each of those takes it only if its `events` admit the notification's event.
 */
import type { IncidentState, NotificationBody, NotificationKind } from "../model.ts";
import type { ChannelEvent } from "../schema/channel.ts";
import { duration, type Judged } from "./message.ts";
import { outageMs } from "./outage.ts";

/** What routing needs of the stored channels: each one's events (null: all but test), and the default names. */
export interface Routes {
  readonly events: ReadonlyMap<string, readonly ChannelEvent[] | null>;
  /** serve --channel, as the last node given it shared it; null: the ntfy channel. */
  readonly defaults: readonly string[] | null;
}

export const noRoutes: Routes = { events: new Map(), defaults: null };

/** An event as channels and templates name it: a notification's kind, with a heartbeat's missed ping `late`. */
export type EventName = ChannelEvent | "normal";

/**
 * What templates may say of a notification (docs/guide/notifications.md: Channels). Its id and statusPage are not the policy's: the
 * store gives the id when it writes the notification, and the sending node fills statusPage.
 */
export interface EventFields {
  readonly event: EventName;
  readonly server: string;
  readonly service: string;
  readonly serverName: string;
  readonly serviceName: string;
  readonly url: string;
  readonly error: string | null;
  /** ISO 8601: since when it fails (DOWN), is down (reminder) or was down (RECOVERED). */
  readonly since: string | null;
  /** How long it is (reminder) or was (RECOVERED) down, as "1h 5m". */
  readonly duration: string | null;
  readonly incidentId: number | null;
  readonly at: string;
  readonly title: string;
  readonly message: string;
}

/** A notification's event as stored: its fields and its id, the same on each of its deliveries. */
export type NotificationEvent = EventFields & { readonly id: string };

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
  return {
    event, server: subject.serverId, service: subject.serviceId, serverName: subject.serverName, serviceName: subject.serviceName, url: subject.url,
    error, since: since == null ? null : iso(since), duration: lasted, incidentId, at: iso(at), title: body.title ?? "", message: body.message ?? "",
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
