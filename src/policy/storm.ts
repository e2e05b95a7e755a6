/**
 * Storms: when more than a server's `groupThreshold` of its services fail within one check interval, they are
 * told of as one. Pure. Each service still opens and closes its own incident; only what is sent changes:
 * - When a service's DOWN is due and its server has no open storm, healthd looks at the server's services that
 *   fail now and began failing within one interval (the DOWN's service's) of it. More than groupThreshold of
 *   them: a storm opens, naming them all, and ONE grouped DOWN goes out instead of their DOWNs. Most services
 *   count a few failures before an incident (notifyThreshold, default 2), so the services of one outage have
 *   all failed once by the time the first incident opens; with notifyThreshold 0, those whose DOWN went before
 *   the storm was seen were told of alone (they are still named in it).
 * - While a storm is open, its members' DOWNs and RECOVEREDs are not sent (a member that recovers and fails
 *   again stays in it). A service that fails later and was not named is news: it speaks for itself.
 * - When every member passes again (or is gone), ONE grouped RECOVERED goes out and the storm closes. A partial
 *   recovery sends nothing: the point of a storm is one message each way, and the status page and the API show
 *   each service's own state meanwhile.
 * A grouped notification goes to every channel any member's would, and names no incident (`group` is its id).
 */
import type { NotificationWrite } from "../domain/batch.ts";
import type { Routes } from "../domain/notification.ts";
import { duration } from "./message.ts";
import { route } from "./route.ts";

/** A service of a server that groups, as the batch leaves it. */
export interface StormService {
  readonly serviceId: string;
  /** Its last result (or verdict) failed. */
  readonly failing: boolean;
  /** Its first failure in a row; null while passing, or held by a dependency. */
  readonly failingSince: number | null;
  readonly incidentOpen: boolean;
  /** Its check's interval (a cron's gap between runs). */
  readonly intervalMs: number;
  /** notify on and not paused: a service that says nothing is not in a storm either. */
  readonly speaks: boolean;
  /** Its check's channels, else its server's (null: the default). */
  readonly channels: readonly string[] | null;
}

export interface OpenStorm {
  readonly id: number;
  /** The first failure of its services (stored as the storm's opened_at). */
  readonly openedAt: number;
  /** The service ids its DOWN named. */
  readonly members: readonly string[];
}

/** A server whose services' DOWNs or RECOVEREDs a batch decided, with groupThreshold above 0. */
export interface StormServer {
  readonly serverId: string;
  readonly serverName: string;
  readonly groupThreshold: number;
  readonly services: ReadonlyMap<string, StormService>;
  readonly storm: OpenStorm | null;
}

export type StormWrite =
  | { readonly kind: "open"; readonly id: number; readonly serverId: string; readonly openedAt: number; readonly members: readonly string[] }
  | { readonly kind: "close"; readonly id: number; readonly closedAt: number };

export interface Grouped {
  readonly notifications: NotificationWrite[];
  /** Storms opened (ids below zero, until the store gives them theirs) and closed. */
  readonly storms: StormWrite[];
}

/** How many services a grouped message lists line by line; the event's `services` holds them all. */
export const groupListed = 50;

export function groupStorms(notifications: readonly NotificationWrite[], servers: ReadonlyMap<string, StormServer>, routes: Routes, now: number): Grouped {
  const dropped = new Set<NotificationWrite>();
  const added: NotificationWrite[] = [];
  const storms: StormWrite[] = [];
  for (const server of servers.values()) {
    if (server.groupThreshold <= 0) continue;
    const mine = notifications.filter((n) => n.serverId === server.serverId && (n.kind === "down" || n.kind === "recovered") && n.incidentId !== null);
    let storm = server.storm;
    if (storm === null) {
      for (const down of mine.filter((n) => n.kind === "down")) {
        const members = together(server, down);
        if (members.length <= server.groupThreshold) continue;
        // A storm begins with the first failure of its services: its DOWN says since when, its RECOVERED how long.
        const since = Math.min(down.at, ...members.flatMap((id) => server.services.get(id)?.failingSince ?? []));
        storm = { id: -1 - storms.length, openedAt: since, members };
        storms.push({ kind: "open", id: storm.id, serverId: server.serverId, openedAt: since, members });
        added.push(grouped("down", server, storm, down.at, routes));
        break;
      }
      if (storm === null) continue;
    }
    const members = new Set(storm.members);
    for (const n of mine) if (members.has(n.serviceId)) dropped.add(n);
    const back = storm.members.every((id) => {
      const s = server.services.get(id);
      return s === undefined || (!s.failing && !s.incidentOpen);
    });
    if (back && storm.id > 0) {
      const at = Math.max(now, ...mine.map((n) => n.at));
      storms.push({ kind: "close", id: storm.id, closedAt: at });
      added.push(grouped("recovered", server, storm, at, routes));
    }
  }
  if (added.length === 0 && dropped.size === 0) return { notifications: [...notifications], storms };
  return { notifications: [...notifications.filter((n) => !dropped.has(n)), ...added], storms };
}

/** The services of `server` failing together with the one `down` is about: within one of its intervals of its start. */
function together(server: StormServer, down: NotificationWrite): string[] {
  const own = server.services.get(down.serviceId);
  const start = own?.failingSince ?? down.at;
  const window = own?.intervalMs ?? 60_000;
  return [...server.services.values()]
    .filter((s) => s.speaks && s.failing && s.failingSince !== null && Math.abs(s.failingSince - start) <= window)
    .map((s) => s.serviceId)
    .sort();
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

function grouped(kind: "down" | "recovered", server: StormServer, storm: OpenStorm, at: number, routes: Routes): NotificationWrite {
  const names = storm.members.map((id) => `${server.serverId}/${id}`);
  const n = names.length;
  const listed = [...names.slice(0, groupListed), ...(n > groupListed ? [`and ${n - groupListed} more`] : [])];
  const since = storm.openedAt;
  const title = `${kind === "down" ? "DOWN" : "RECOVERED"}: ${n} services of ${server.serverId}`;
  const message =
    kind === "down"
      ? [
          `${n} services of ${server.serverId} failed within one check interval (more than its groupThreshold of ${server.groupThreshold}):`,
          ...listed,
          `Failing since ${iso(since)}. Each has its own incident; one RECOVERED follows when all of them pass again.`,
        ].join("\n")
      : [`All ${n} services of ${server.serverId} that failed together pass again, after ${duration(at - since)}:`, ...listed, `Down since ${iso(since)}, recovered at ${iso(at)}`].join("\n");
  const channels = [...new Set(storm.members.flatMap((id) => route(server.services.get(id)?.channels ?? null, kind, routes)))];
  return {
    at, serverId: server.serverId, serviceId: "*", kind, topic: null, incidentId: null, channels,
    body: kind === "down" ? { title, message, priority: 4, tags: ["rotating_light", "healthd", "down"] } : { title, message, priority: 3, tags: ["white_check_mark", "healthd", "recovered"] },
    event: {
      event: kind, server: server.serverId, service: "*", serverName: server.serverName, serviceName: `${n} services`, url: "",
      error: kind === "down" ? `${n} services failed within one check interval` : null, since: iso(since), duration: kind === "recovered" ? duration(at - since) : null,
      incidentId: null, at: iso(at), title, message, services: names, group: storm.id,
    },
  };
}
