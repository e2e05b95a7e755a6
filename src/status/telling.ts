/**
 * What a status page tells people beside what healthd measured: the announcements shown now, what is
 * scheduled (announcements not begun, and the maintenance windows of the next week), and the past 30 days
 * (announcements ended, incidents closed). Part of the one read model (read-model.ts), for the page and its
 * JSON alike.
 */
import type { MaintenanceWindow } from "../domain/model.ts";
import { outageMs } from "../policy/outage.ts";
import { dayMs } from "../policy/rollup.ts";
import { upcomingWindows } from "../policy/silence.ts";
import type { Severity } from "../domain/schema/announcement.ts";
import type { AlertingStore, Announcement, AnnouncementStore } from "../store/store.ts";

/** How far back "Past incidents" goes. */
export const pastDays = 30;
/** How far ahead maintenance windows are listed. */
export const aheadDays = 7;
/** At most this many of each list: a page stays a page. */
const most = 50;

export interface AnnouncementView {
  readonly id: number;
  readonly title: string;
  readonly severity: Severity;
  /** Markdown, as written. */
  readonly message: string;
  readonly startsAt: string;
  readonly endsAt: string | null;
  /** The servers it concerns; null: all. */
  readonly servers: readonly string[] | null;
  /** Newest first. */
  readonly updates: readonly { readonly message: string; readonly severity: Severity | null; readonly at: string }[];
  /** When it last changed (for caching its rendering). */
  readonly updatedAt: string;
}

export interface ScheduledMaintenance {
  readonly serverId: string;
  readonly serverName: string;
  /** The services it covers; null: all of the server's. */
  readonly services: readonly string[] | null;
  /** Its cron pattern, in its time zone: it comes back on that schedule. */
  readonly repeats: string;
  readonly timezone: string;
  readonly startsAt: string;
  readonly endsAt: string;
  /** Why (only when not public: the operator's note). */
  readonly reason: string | null;
}

export interface PastIncident {
  readonly serverId: string;
  readonly serverName: string;
  readonly serviceId: string;
  readonly name: string;
  /** Its first failed check: the outage counts from here. */
  readonly startedAt: string;
  readonly openedAt: string;
  readonly closedAt: string;
  /** startedAt to closedAt (policy/outage.ts). */
  readonly durationMs: number;
}

export interface Telling {
  /** Shown now, the latest start first. */
  readonly announcements: readonly AnnouncementView[];
  readonly scheduled: { readonly announcements: readonly AnnouncementView[]; readonly maintenance: readonly ScheduledMaintenance[] };
  /** Of the last 30 days, the latest first. */
  readonly past: { readonly announcements: readonly AnnouncementView[]; readonly incidents: readonly PastIncident[] };
}

export interface TellingScope {
  /** The servers shown, with their names and maintenance windows; `all`: the page of every server. */
  readonly servers: readonly { readonly id: string; readonly name: string; readonly maintenance: readonly MaintenanceWindow[] }[];
  readonly all: boolean;
  /** A service's name, by "serverId/serviceId" (one since deleted shows its id). */
  readonly names: ReadonlyMap<string, string>;
  /** A page of chosen services: only those of `names` are told of (past incidents, maintenance of some services). */
  readonly onlyNamed?: boolean;
  readonly public: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function announcementView(a: Announcement): AnnouncementView {
  return {
    id: a.id,
    title: a.title,
    severity: a.severity,
    message: a.message,
    startsAt: iso(a.startsAt),
    endsAt: a.endsAt === null ? null : iso(a.endsAt),
    servers: a.servers,
    updates: a.updates.map((u) => ({ message: u.message, severity: u.severity, at: iso(u.createdAt) })),
    updatedAt: iso(a.updatedAt),
  };
}

export async function telling(store: AlertingStore & AnnouncementStore, now: number, scope: TellingScope): Promise<Telling> {
  const since = now - pastDays * dayMs;
  const shown = new Set(scope.servers.map((s) => s.id));
  const serverNames = new Map(scope.servers.map((s) => [s.id, s.name]));
  const [announcements, closed] = await Promise.all([
    store.announcements({ now, endedAfter: since, limit: 500 }),
    store.incidents({ open: false, endedAfter: since, limit: 500, ...(scope.servers.length === 1 && !scope.all ? { serverId: scope.servers[0]!.id } : {}) }),
  ]);
  const concerns = (a: Announcement) => scope.all || a.servers === null || a.servers.some((id) => shown.has(id));
  const mine = announcements.filter(concerns);
  const maintenance = scope.servers
    .flatMap((server) =>
      // The next time of each window: a daily one listed seven times would crowd out the rest.
      server.maintenance
        .filter((w) => !scope.onlyNamed || !w.services || w.services.some((id) => scope.names.has(`${server.id}/${id}`)))
        .flatMap((window) => upcomingWindows([window], now, now + aheadDays * dayMs, 1))
        .map(
        (w): ScheduledMaintenance => ({
          serverId: server.id,
          serverName: server.name,
          services: w.window.services ?? null,
          repeats: w.window.cron,
          timezone: w.window.timezone ?? "UTC",
          startsAt: iso(w.start),
          endsAt: iso(w.end),
          reason: scope.public ? null : (w.window.reason ?? null),
        }),
      ),
    )
    .sort((a, b) => a.startsAt.localeCompare(b.startsAt))
    .slice(0, most);
  return {
    announcements: mine.filter((a) => a.startsAt <= now && (a.endsAt === null || a.endsAt > now)).map(announcementView),
    scheduled: {
      announcements: mine.filter((a) => a.startsAt > now).sort((a, b) => a.startsAt - b.startsAt).slice(0, most).map(announcementView),
      maintenance,
    },
    past: {
      announcements: mine.filter((a) => a.endsAt !== null && a.endsAt <= now).sort((a, b) => b.endsAt! - a.endsAt!).slice(0, most).map(announcementView),
      incidents: closed.incidents
        .filter((i) => shown.has(i.serverId) && (!scope.onlyNamed || scope.names.has(`${i.serverId}/${i.serviceId}`)))
        .sort((a, b) => b.closedAt! - a.closedAt!)
        .slice(0, most)
        .map((i) => ({
          serverId: i.serverId,
          serverName: serverNames.get(i.serverId) ?? i.serverId,
          serviceId: i.serviceId,
          name: scope.names.get(`${i.serverId}/${i.serviceId}`) ?? i.serviceId,
          startedAt: iso(i.startedAt),
          openedAt: iso(i.openedAt),
          closedAt: iso(i.closedAt!),
          durationMs: outageMs(i, now),
        })),
    },
  };
}
