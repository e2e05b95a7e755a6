/**
 * The API's answers, made from what the store holds: times as ISO 8601, ids as strings, each service's status
 * as shown (src/status/shown.ts). The shapes are answers.ts's, which the OpenAPI document describes.
 */
import type { Entry } from "../domain/model.ts";
import { outageMs } from "../policy/outage.ts";
import { maskedCheck } from "../domain/schema/secrets.ts";
import { countShown, dueAt, quieting, shown, upstreamRefs, type Shown } from "../status/shown.ts";
import { mainSlug } from "../domain/schema/status-page.ts";
import type { Announcement, ConfigurationStore, Incident, Silence, StatusPage, Store, StoredService, TokenRecord } from "../store/store.ts";

export const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

export function entryJson(e: Entry) {
  return {
    id: String(e.id),
    checkedAt: iso(e.checkedAt),
    ok: e.ok,
    status: e.status,
    latencyMs: e.latencyMs,
    errorKind: e.errorKind,
    error: e.error,
    matched: e.matched,
    location: e.location,
    type: e.type,
    kind: e.kind,
    exitCode: e.exitCode,
    durationMs: e.durationMs,
    body: e.body,
    answers: e.answers,
    method: e.method,
    userAgent: e.userAgent,
    remoteAddr: e.remoteAddr,
    scheme: e.scheme,
    rid: e.rid,
  };
}

/**
 * The services of one server (or one of them), as GET /services/{serverId}[/{serviceId}] shows them; with
 * `secrets` false (a read token: access.ts, seesSecrets; the default, so a caller that forgets says nothing) their
 * checks as maskedCheck shows them.
 */
export async function serviceViews(store: Store, now: number, serverId: string, serviceId?: string, secrets = false) {
  const services = await store.services({ serverId, serviceId });
  const [upstream, quiet] = await Promise.all([store.upstream(upstreamRefs(services)), quieting(store, now, serverId)]);
  const located = services.filter((s) => s.check.type !== "heartbeat" && s.check.locations !== null);
  const [results, live] =
    located.length === 0 ? [new Map(), new Set<string>()] : [await store.locationResults(located.map((s) => s.key)), new Set((await store.liveNodes(now)).map((n) => n.location))];
  return services.map((s) => {
    const state = s.state;
    const locations = s.check.type !== "heartbeat" && s.check.locations && {
      locations: Object.fromEntries(
        s.check.locations.map((name) => {
          const r = results.get(s.key)?.get(name);
          // A location with no live node, or that never checked it, watches nothing.
          const status = !live.has(name) || !r ? "unmonitored" : r.ok ? "up" : "down";
          return [name, { status, lastCheckedAt: r ? iso(r.checkedAt) : null }];
        }),
      ),
    };
    return {
      id: s.id,
      name: s.name,
      tags: s.tags,
      check: secrets ? s.check : maskedCheck(s.check),
      state: {
        ...shownJson(shown(s, upstream, now, quiet)),
        ...locations,
        consecutiveFailures: state?.consecutiveFailures ?? 0,
        lastCheckedAt: isoOrNull(state?.lastCheckedAt ?? null),
        lastEntry: s.lastEntry && entryJson(s.lastEntry),
        incidentOpenSince: isoOrNull(state?.incidentOpenSince ?? null),
        incidentStartedAt: isoOrNull(state?.incidentStartedAt ?? null),
        ...(s.check.type === "heartbeat"
          ? {
              lastPingAt: isoOrNull(state?.lastPingAt ?? null),
              lastStartAt: isoOrNull(state?.lastStartAt ?? null),
              lastDurationMs: state?.lastDurationMs ?? null,
              nextDueAt: isoOrNull(dueAt(s)),
            }
          : {}),
      },
    };
  });
}

/** A service's status as the API says it: a silence or a maintenance window as silencedUntil, with why. */
export function shownJson({ quiet, ...status }: Shown) {
  return quiet ? { ...status, silencedUntil: iso(quiet.until), silenceReason: quiet.reason, maintenance: quiet.kind === "maintenance" } : status;
}

/** GET /services/{serverId}: the server with its services (their checks' secrets shown as serviceViews says), or undefined. */
export async function serverView(store: Store, now: number, serverId: string, secrets: boolean) {
  const [server] = await store.servers(serverId);
  if (!server) return undefined;
  return {
    id: server.id,
    name: server.name,
    maintenance: server.maintenance,
    channels: server.channels,
    // The first segment of its slug URLs pings any of its heartbeats: a secret, as a heartbeat's pingKey is.
    ...(secrets ? { pingKey: server.pingKey } : {}),
    autoProvision: server.autoProvision,
    heartbeatDefaults: server.heartbeatDefaults,
    groupThreshold: server.groupThreshold,
    ...(server.escalate ? { escalate: server.escalate } : {}),
    createdAt: iso(server.createdAt),
    updatedAt: iso(server.updatedAt),
    services: await serviceViews(store, now, serverId, undefined, secrets),
  };
}

/** Whether a service carries every one of `tags` (lowercase, as stored). */
export const hasTags = (service: Pick<StoredService, "tags">, tags: readonly string[]) => tags.every((t) => service.tags.includes(t));

/**
 * GET /services: every server with how many of its services are shown as each status. With `tags` (?tag=),
 * only the services carrying all of them count, a server with none is left out, and each server names them.
 */
export async function serverSummaries(store: ConfigurationStore, now: number, tags?: readonly string[]) {
  const [servers, all] = await Promise.all([store.servers(), store.services()]);
  const services = tags ? all.filter((s) => hasTags(s, tags)) : all;
  const upstream = await store.upstream(upstreamRefs(services));
  const byServer = new Map<string, StoredService[]>();
  for (const s of services) {
    let list = byServer.get(s.serverId);
    if (!list) byServer.set(s.serverId, (list = []));
    list.push(s);
  }
  return servers.flatMap((server) => {
    const own = byServer.get(server.id) ?? [];
    if (tags && own.length === 0) return [];
    const counts = countShown(own.map((s) => shown(s, upstream, now)));
    // A heartbeat not pinged yet is not checked yet; one that is late is not down yet, nor up: counted apart.
    return {
      id: server.id,
      name: server.name,
      serviceCount: counts.services,
      up: counts.up,
      down: counts.down,
      unknown: counts.unknown + counts.new,
      paused: counts.paused,
      blocked: counts.blocked,
      late: counts.late,
      degraded: counts.degraded,
      ...(tags ? { services: own.map((s) => s.id) } : {}),
    };
  });
}

export function silenceJson(s: Silence) {
  return { id: String(s.id), server: s.serverId, service: s.serviceId, startsAt: iso(s.startsAt), endsAt: iso(s.endsAt), reason: s.reason, createdAt: iso(s.createdAt) };
}

export function incidentJson(i: Incident, now: number) {
  return {
    id: String(i.id),
    server: i.serverId,
    service: i.serviceId,
    startedAt: iso(i.startedAt),
    openedAt: iso(i.openedAt),
    closedAt: isoOrNull(i.closedAt),
    durationMs: outageMs(i, now),
    failures: i.failures,
    firstError: i.firstError,
    notified: i.notified,
    acknowledged: i.acknowledged ? { by: i.acknowledged.by, at: iso(i.acknowledged.at), note: i.acknowledged.note } : null,
  };
}

export function tokenJson(t: TokenRecord) {
  return { id: String(t.id), name: t.name, scope: t.scope, servers: t.servers, createdAt: iso(t.createdAt) };
}

export function announcementJson(a: Announcement, now: number) {
  return {
    id: String(a.id),
    title: a.title,
    message: a.message,
    severity: a.severity,
    servers: a.servers,
    startsAt: iso(a.startsAt),
    endsAt: a.endsAt === null ? null : iso(a.endsAt),
    active: a.startsAt <= now && (a.endsAt === null || a.endsAt > now),
    createdAt: iso(a.createdAt),
    updatedAt: iso(a.updatedAt),
    updates: a.updates.map((u) => ({ id: String(u.id), message: u.message, severity: u.severity, createdAt: iso(u.createdAt) })),
  };
}

export function statusPageJson(p: StatusPage) {
  return {
    slug: p.slug,
    title: p.title,
    description: p.description,
    servers: p.servers,
    sections: p.sections,
    public: p.public,
    accentColor: p.accentColor,
    footerLinks: p.footerLinks,
    hostnames: p.hostnames,
    showUptime: p.showUptime,
    showLatency: p.showLatency,
    showHistory: p.showHistory,
    timeZone: p.timeZone,
    logo: p.logo && `/status/p/${encodeURIComponent(p.slug)}/logo?v=${p.logo.updatedAt}`,
    url: p.slug === mainSlug ? "/status" : `/status/p/${encodeURIComponent(p.slug)}`,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  };
}
