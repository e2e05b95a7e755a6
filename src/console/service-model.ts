/**
 * The console's read model of one service: its state, its recent entries (a heartbeat's are its ping log), its
 * incidents each with a timeline, its silences, and its latency over 24 hours from the rollups. All the queries
 * of the service page are here; the page (service-page.ts) only renders what this returns.
 */
import type { Entry } from "../domain/model.ts";
import { hourMs } from "../policy/rollup.ts";
import { quantile } from "../policy/sketch.ts";
import { outageMs } from "../policy/outage.ts";
import type { Incident, IncidentDelivery, Silence, Store, StoredService } from "../store/store.ts";
import type { LatencyPoint } from "../status/chart.ts";
import { quieting, shown, upstreamRefs, type Shown } from "../status/shown.ts";
import { consoleState, type ConsoleState } from "./model.ts";

/** One line of an incident's timeline. */
export interface TimelineEvent {
  readonly at: number;
  readonly kind: "started" | "opened" | "notified" | "silence" | "acknowledged" | "closed";
  readonly text: string;
}

export interface ConsoleIncident {
  readonly incident: Incident;
  readonly durationMs: number;
  readonly timeline: readonly TimelineEvent[];
}

export interface ServiceModel {
  readonly now: number;
  readonly service: StoredService;
  readonly shown: Shown;
  readonly state: ConsoleState;
  readonly entries: readonly Entry[];
  readonly incidents: readonly ConsoleIncident[];
  /** Silences of the service (or its whole server) not over yet. */
  readonly silences: readonly Silence[];
  readonly latency: readonly LatencyPoint[];
  /** The server's ping key, for a heartbeat's slug URL (null: not a heartbeat). */
  readonly serverPingKey: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The timeline of an incident: its first failure, its opening, each notification to each channel with how its delivery went, the silences that overlapped it, its acknowledgement, its close. */
export function timeline(i: Incident, silences: readonly Silence[], deliveries: readonly IncidentDelivery[]): TimelineEvent[] {
  const events: TimelineEvent[] = [{ at: i.startedAt, kind: "started", text: `First failed check${i.firstError ? `: ${i.firstError}` : ""}` }];
  events.push({ at: i.openedAt, kind: "opened", text: `Incident opened after failed checks; ${i.notified ? "its DOWN notification queued for its channels" : "no DOWN sent (silenced, or notify off)"}` });
  for (const s of silences) {
    if (s.startsAt > (i.closedAt ?? Infinity) || s.endsAt < i.startedAt) continue;
    events.push({ at: s.startsAt, kind: "silence", text: `Silenced until ${iso(s.endsAt)}${s.reason ? ` (${s.reason})` : ""}${s.serviceId === null ? ", the whole server" : ""}` });
  }
  for (const d of deliveries) events.push({ at: d.deliveredAt ?? d.createdAt, kind: "notified", text: delivered(d) });
  const ack = i.acknowledged;
  if (ack) events.push({ at: ack.at, kind: "acknowledged", text: `Acknowledged by ${ack.by}${ack.note ? `: ${ack.note}` : ""}; its reminders and escalations stopped` });
  if (i.closedAt !== null) events.push({ at: i.closedAt, kind: "closed", text: `Closed by a passing check, after ${i.failures} failed check${i.failures === 1 ? "" : "s"}` });
  return events.sort((a, b) => a.at - b.at);
}

/** "DOWN to ops-email: delivered", "RECOVERED to pagerduty: failed after 12 attempts (HTTP 400 ...)". */
function delivered(d: IncidentDelivery): string {
  const what = `${d.kind.toUpperCase()} to ${d.channel}`;
  const error = d.lastError ? ` (${d.lastError})` : "";
  switch (d.status) {
    case "delivered":
      return `${what}: delivered${d.attempts > 1 ? ` at attempt ${d.attempts}` : ""}`;
    case "pending":
      return `${what}: ${d.attempts === 0 ? "queued" : `not delivered yet, ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}${error}`}`;
    case "failed":
      return `${what}: given up after ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}${error}`;
    case "unsent":
      return `${what}: not sent (no topic or channel to send it to)`;
  }
}

export async function serviceModel(store: Store, serverId: string, serviceId: string, now: number): Promise<ServiceModel | undefined> {
  const [service] = await store.services({ serverId, serviceId });
  if (!service) return undefined;
  const last = Math.floor(now / hourMs) * hourMs;
  const since = last - 23 * hourMs;
  const [upstream, quiet, entries, incidents, sums, past, servers] = await Promise.all([
    store.upstream(upstreamRefs([service])),
    quieting(store, now, serverId),
    store.readEntries(service.key, { limit: 50 }),
    store.incidents({ serverId, serviceId, limit: 20 }),
    store.rollupSums({ since, until: last + hourMs, per: "hour", serviceKeys: [service.key] }),
    store.silencesBetween(now - 90 * 86_400_000, now + 366 * 86_400_000),
    store.servers(serverId),
  ]);
  const mine = past.filter((s) => s.serverId === serverId && (s.serviceId === null || s.serviceId === serviceId));
  const byHour = new Map(sums.map((s) => [s.at, s]));
  const latency = Array.from({ length: 24 }, (_, i): LatencyPoint => {
    const sum = byHour.get(since + i * hourMs);
    const counted = sum ? sum.checks - sum.silencedChecks : 0;
    return {
      at: iso(since + i * hourMs),
      checks: sum?.checks ?? 0,
      uptime: sum && counted > 0 ? (counted - (sum.failures - sum.silencedFailures)) / counted : null,
      p50: sum ? quantile(sum.sketch, 0.5) : null,
      p95: sum ? quantile(sum.sketch, 0.95) : null,
    };
  });
  const status = shown(service, upstream, now, quiet);
  const deliveries = await store.incidentDeliveries(incidents.incidents.map((i) => i.id));
  return {
    now,
    service,
    shown: status,
    state: consoleState(status),
    entries: entries.entries,
    incidents: incidents.incidents.map((i) => ({ incident: i, durationMs: outageMs(i, now), timeline: timeline(i, mine, deliveries.filter((d) => d.incidentId === i.id)) })),
    silences: mine.filter((s) => s.endsAt > now),
    latency,
    serverPingKey: service.check.type === "heartbeat" ? (servers[0]?.pingKey ?? null) : null,
  };
}
