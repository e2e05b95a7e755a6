/**
 * The one read model of what healthd shows about services: the status page and its JSON, the badges, and
 * GET …/stats all come from here, so they never disagree. Built from the store (states, last entries,
 * rollups) or the daemon's memory of it (memory.ts); the days and hours that are over are kept in memory
 * (history.ts), since they no longer change.
 */
import { targetOf, type Sketch } from "../domain/model.ts";
import { outageMs } from "../policy/outage.ts";
import { dayMs, hourMs } from "../policy/rollup.ts";
import { merge, quantile } from "../policy/sketch.ts";
import type { ReadModelStore, Store, StoredService } from "../store/store.ts";
import { History, historyDays, ratio, round, type Snapshot } from "./history.ts";
import { telling, type Telling } from "./telling.ts";
import { countShown, dueAt, quieting, shown, upstreamRefs, type Quieting, type Shown, type ShownStatus } from "./shown.ts";
import { pickSections } from "./sections.ts";

export { dayMs, History, historyDays };

/** Stats windows, in hours. */
export const windows = { "24h": 24, "7d": 168, "30d": 720, "365d": 8760 } as const;
export type Window = keyof typeof windows;

export type ServiceStatusName = ShownStatus;

/** A service's daily uptime over the last 90 days: share of passing checks, 0 to 1, or null without checks. */
export interface History90 {
  /** The first day, YYYY-MM-DD (UTC); the last is today. */
  readonly from: string;
  readonly uptime: readonly (number | null)[];
  /** How many of the first days are settled: they will read the same until `historyRevision` moves. */
  readonly settled: number;
}

export interface ServiceStatus {
  readonly serverId: string;
  readonly id: string;
  readonly name: string;
  readonly status: ServiceStatusName;
  /** With status blocked: the services it waits on ("serverId/serviceId"), which have an open incident. */
  readonly blockedBy?: readonly string[];
  /** Silenced or in maintenance: until when, and why (the reason only when not public). */
  readonly quiet?: { readonly kind: "silence" | "maintenance"; readonly until: string; readonly reason: string | null };
  readonly uptime24h: number | null;
  readonly uptime30d: number | null;
  /** When it was created: while younger than a window, its uptime over that window is over its life (page.ts says so). */
  readonly createdAt: string;
  /** The last 90 days, oldest first, today last. */
  readonly history: History90;
  /** The last check's total response time; null for a heartbeat, which is told, not checked (see lastRunMs). */
  readonly latencyMs: number | null;
  /** A heartbeat's: its last run's duration, start to finish (null when no start was seen). */
  readonly lastRunMs?: number | null;
  readonly lastCheckedAt: string | null;
  /** The open incident: since its first failed check (its stored startedAt), and for how long (policy/outage.ts). */
  readonly incident: { readonly since: string; readonly durationMs: number } | null;
  /** A heartbeat's: when its next ping is due (with status late: when it was due). */
  readonly dueAt?: string;
  /** Only when not public: where the check goes (an http check's URL), and its last error. */
  readonly url?: string | null;
  readonly error?: string | null;
}

export interface ServerStatus {
  readonly id: string;
  readonly name: string;
  /** The worst of its services: down, blocked, then up; paused when all are paused; unknown while none is checked. */
  readonly status: ServiceStatusName;
  readonly services: readonly ServiceStatus[];
}

/** A section of a page of chosen services: its title, and its services in the order the page names them. */
export interface SectionStatus {
  readonly title: string;
  readonly status: ServiceStatusName;
  readonly services: readonly ServiceStatus[];
}

export interface StatusModel {
  readonly generatedAt: string;
  /** Moves whenever a settled day of any history changes (a new day, results stored late). */
  readonly historyRevision: number;
  readonly overall: {
    readonly services: number;
    readonly up: number;
    readonly down: number;
    readonly unknown: number;
    readonly blocked: number;
    readonly paused: number;
    /** Heartbeats not pinged yet, and those whose ping is due (within their grace). */
    readonly new: number;
    readonly late: number;
    /** Up, but their last check passed slower than their slowMs. */
    readonly degraded: number;
    /** "All 42 services up", "2 of 42 down", ... */
    readonly summary: string;
  };
  /** Services with an open incident, the longest first. */
  readonly incidents: readonly ServiceStatus[];
  readonly servers: readonly ServerStatus[];
  /** A page of chosen services: what it shows, by section (the servers above hold the same services). */
  readonly sections?: readonly SectionStatus[];
  /** Announcements shown now, the latest first (src/status/telling.ts). */
  readonly announcements: Telling["announcements"];
  /** Announcements not begun, and maintenance windows of the next week. */
  readonly scheduled: Telling["scheduled"];
  /** Announcements ended and incidents closed in the last 30 days. */
  readonly past: Telling["past"];
}

export interface StatusOptions {
  readonly serverId?: string;
  /** A named page's servers, in the order it shows them. */
  readonly servers?: readonly string[];
  /** A named page's sections: only the services they name ("server/service", "server/*") are shown. */
  readonly sections?: readonly { readonly title: string; readonly services: readonly string[] }[];
  /** For anyone: no URLs, headers, bodies or error texts. */
  readonly public: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();
const dayOf = (ms: number) => Math.floor(ms / dayMs) * dayMs;

/** Where a model's services come from: the store, or the daemon's memory of it (memory.ts). */
export type ServiceSource = { services(filter: { readonly serverId?: string | undefined }): Promise<StoredService[]> };

/** The status of every service (of one server, or all), as of `now`. */
export async function statusModel(store: Store, history: History, now: number, options: StatusOptions, source: ServiceSource = store): Promise<StatusModel> {
  const today = dayOf(now);
  const since24h = Math.floor(now / hourMs) * hourMs - 23 * hourMs;
  const chosen = options.servers && new Map(options.servers.map((id, i) => [id, i]));
  const [all, snapshot] = await Promise.all([source.services({ serverId: options.serverId }), history.snapshot(store, now)]);
  const picked = options.sections && pickSections(options.sections, all);
  const services = picked ? picked.services : chosen ? all.filter((s) => chosen.has(s.serverId)).sort((a, b) => chosen.get(a.serverId)! - chosen.get(b.serverId)!) : all;
  const [upstream, quiet] = await Promise.all([store.upstream(upstreamRefs(services)), quieting(store, now, options.serverId)]);
  // The dates of the history, once for all services.
  const dates = Array.from({ length: historyDays }, (_, i) => today - (historyDays - 1 - i) * dayMs);
  const from = iso(dates[0]!).slice(0, 10);
  const settled = dates.filter((day) => day < snapshot.settledUntil).length;

  const statuses: ServiceStatus[] = [];
  const byRef = new Map<string, ServiceStatus>();
  const grouped = new Map<string, { id: string; name: string; services: ServiceStatus[] }>();
  for (const s of services) {
    const status = serviceStatus(s, upstream, quiet, snapshot, { now, since24h, dates, from, settled }, options.public);
    statuses.push(status);
    byRef.set(`${s.serverId}/${s.id}`, status);
    let server = grouped.get(s.serverId);
    if (!server) grouped.set(s.serverId, (server = { id: s.serverId, name: s.serverName, services: [] }));
    server.services.push(status);
  }
  const servers = [...grouped.values()].map((server): ServerStatus => ({
    ...server,
    status: worst(counts(server.services)),
    services: orderServices(server.services),
  }));
  const overall = counts(statuses);
  const told = await telling(store, now, {
    servers: chosen ? quiet.servers.filter((s) => chosen.has(s.id)).sort((a, b) => chosen.get(a.id)! - chosen.get(b.id)!) : quiet.servers,
    all: !options.serverId && !chosen,
    names: new Map(services.map((s) => [`${s.serverId}/${s.id}`, s.name])),
    onlyNamed: picked !== undefined,
    public: options.public,
  });
  return {
    generatedAt: iso(now),
    historyRevision: snapshot.revision,
    overall: { ...overall, summary: summary(overall) },
    incidents: statuses.filter((s) => s.incident).sort((a, b) => b.incident!.durationMs - a.incident!.durationMs),
    servers,
    ...(picked ? { sections: picked.sections.map(({ title, refs }) => sectionStatus(title, refs.flatMap((r) => byRef.get(r) ?? []))) } : {}),
    ...told,
  };
}

function serviceStatus(
  s: StoredService,
  upstream: Parameters<typeof shown>[1],
  quiet: Quieting,
  snapshot: Snapshot,
  at: { now: number; since24h: number; dates: readonly number[]; from: string; settled: number },
  isPublic: boolean,
): ServiceStatus {
  const monthFrom = at.dates[at.dates.length - 30]!;
  const settled = snapshot.settledDays(s.key, at.dates, at.settled, monthFrom);
  const uptime = [...settled.uptime];
  let monthChecks = settled.month.checks;
  let monthFailures = settled.month.failures;
  for (let i = at.settled; i < at.dates.length; i++) {
    const counts = snapshot.day(s.key, at.dates[i]!);
    uptime.push(counts ? round(ratio(counts.checks, counts.failures)) : null);
    if (counts && at.dates[i]! >= monthFrom) (monthChecks += counts.checks), (monthFailures += counts.failures);
  }
  const last24h = snapshot.since(s.key, at.since24h);
  const startedAt = s.state?.incidentStartedAt ?? null;
  const heartbeat = s.check.type === "heartbeat";
  return {
    serverId: s.serverId,
    id: s.id,
    name: s.name,
    ...shownStatus(shown(s, upstream, at.now, quiet), isPublic),
    ...(heartbeat ? { dueAt: iso(dueAt(s)!), lastRunMs: s.state?.lastDurationMs ?? null } : {}),
    uptime24h: round(ratio(last24h.checks, last24h.failures)),
    uptime30d: round(ratio(monthChecks, monthFailures)),
    createdAt: iso(s.createdAt),
    history: { from: at.from, uptime, settled: at.settled },
    latencyMs: heartbeat ? null : (s.lastEntry?.latencyMs ?? null),
    lastCheckedAt: s.state?.lastCheckedAt == null ? null : iso(s.state.lastCheckedAt),
    incident: startedAt === null ? null : { since: iso(startedAt), durationMs: outageMs({ startedAt, closedAt: null }, at.now) },
    ...(isPublic ? {} : { url: targetOf(s.check), error: s.lastEntry?.error ?? null }),
  };
}

/** A status as the page shows it: a silence's reason is the operator's note, kept off public pages. */
function shownStatus({ quiet, ...status }: Shown, isPublic: boolean): Pick<ServiceStatus, "status" | "blockedBy" | "quiet"> {
  return quiet ? { ...status, quiet: { kind: quiet.kind, until: iso(quiet.until), reason: isPublic ? null : quiet.reason } } : status;
}


/** Most in need of attention first: down, blocked, late or slow, not checked yet, paused, up; in the order they were created within each. */
const rank: Record<ServiceStatusName, number> = { down: 0, blocked: 1, late: 2, degraded: 2, unknown: 3, new: 3, paused: 4, up: 5 };

function orderServices(services: readonly ServiceStatus[]): ServiceStatus[] {
  return services.map((s, i) => [s, i] as const).sort(([a, i], [b, j]) => rank[a.status] - rank[b.status] || i - j).map(([s]) => s);
}

type Counted = ReturnType<typeof countShown>;
const counts = countShown;

const sectionStatus = (title: string, services: ServiceStatus[]): SectionStatus => ({ title, status: worst(counts(services)), services });

/** A group's status: the worst of its services, paused only when all are. */
export function worst(c: Counted): ServiceStatusName {
  if (c.down > 0) return "down";
  if (c.blocked > 0) return "blocked";
  if (c.late > 0) return "late";
  if (c.degraded > 0) return "degraded";
  if (c.up > 0) return "up";
  if (c.paused > 0 && c.paused === c.services) return "paused";
  return "unknown";
}

export function summary(c: Counted): string {
  const plural = (n: number) => `${n} service${n === 1 ? "" : "s"}`;
  const paused = c.paused > 0 ? `, ${c.paused} paused` : "";
  if (c.services === 0) return "No services yet";
  if (c.down > 0) return `${c.down} of ${c.services} down${c.blocked > 0 ? `, ${c.blocked} blocked` : ""}${paused}`;
  if (c.blocked > 0) return `${c.blocked} of ${c.services} blocked by a dependency${paused}`;
  if (c.late > 0) return `${c.late} of ${c.services} late${c.degraded > 0 ? `, ${c.degraded} slow` : ""}${paused}`;
  if (c.degraded > 0 && c.up + c.degraded + c.paused === c.services) return `All ${plural(c.up + c.degraded)} up, ${c.degraded} slow${paused}`;
  if (c.paused === c.services) return `All ${plural(c.services)} paused`;
  if (c.up + c.paused === c.services) return `All ${plural(c.up)} up${paused}`;
  return `${c.up + c.degraded} of ${c.services} up${c.degraded > 0 ? ` (${c.degraded} slow)` : ""}, ${c.unknown + c.new} not checked yet${paused}`;
}

/** GET …/stats and the uptime and latency badges: one service over an hour-aligned window. */
export async function serviceStats(store: ReadModelStore, serviceKey: number, window: Window, now: number) {
  const since = Math.floor((now - windows[window] * hourMs) / hourMs) * hourMs;
  const totals = { checks: 0, failures: 0, silencedChecks: 0, silencedFailures: 0, slowChecks: 0, latencySum: 0, sketch: new Map() as Sketch };
  for (const r of await store.rollups(serviceKey, since)) {
    totals.checks += r.checks;
    totals.failures += r.failures;
    totals.silencedChecks += r.silencedChecks;
    totals.slowChecks += r.slowChecks;
    totals.silencedFailures += r.silencedFailures;
    totals.latencySum += r.latencySum;
    merge(totals.sketch, r.sketch);
  }
  const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 10) / 10);
  return {
    window,
    since: iso(since),
    checks: totals.checks,
    failures: totals.failures,
    silencedChecks: totals.silencedChecks,
    degraded: totals.slowChecks,
    uptime: ratio(totals.checks - totals.silencedChecks, totals.failures - totals.silencedFailures),
    latencyMs: {
      mean: round(totals.checks === 0 ? null : totals.latencySum / totals.checks),
      p50: round(quantile(totals.sketch, 0.5)),
      p95: round(quantile(totals.sketch, 0.95)),
    },
  };
}
