/**
 * The words of notifications: the event a notification is (as channels and templates name it), what
 * templates may say of it, and what routing needs of the stored channels. policy/route.ts decides with them.
 */
import type { ChannelEvent } from "./schema/channel.ts";

/** What routing needs of the stored channels: each one's events (null: all but test), and the default names. */
export interface Routes {
  readonly events: ReadonlyMap<string, readonly ChannelEvent[] | null>;
  /** serve --channel, as the last node given it shared it; null: the ntfy channel. */
  readonly defaults: readonly string[] | null;
}

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
  /** A heartbeat's DOWN for a failed run: the last lines of its output (at most 1,000 characters). */
  readonly output?: string | null;
  /** A DOWN's: the services that depend on it and are held while it is down ("serverId/serviceId"). */
  readonly held?: readonly string[];
  /** A grouped DOWN or RECOVERED (a storm): every service it is about ("serverId/serviceId"). */
  readonly services?: readonly string[];
  /** A grouped DOWN or RECOVERED: the storm's id (its two messages share it); null otherwise. */
  readonly group?: number | null;
  /** An `ack` event's: who acknowledged the incident (a token's name, "link" or "ntfy") and their note. */
  readonly ackedBy?: string | null;
  readonly ackNote?: string | null;
}

/** A notification's event as stored: its fields and its id, the same on each of its deliveries. */
export type NotificationEvent = EventFields & { readonly id: string };
