/**
 * A page for one service, GET /status/{serverId}/{serviceId}: what the status page says of it, its latency
 * (p50 and p95 per hour over 24 hours, per day over 30 or 90 days, from the rollups) as a chart and a table,
 * its uptime per day, and its incidents with their durations.
 */
import { z } from "zod";
import { outageMs } from "../policy/outage.ts";
import { hourMs } from "../policy/rollup.ts";
import { quantile } from "../policy/sketch.ts";
import { duration } from "../policy/message.ts";
import type { AlertingStore, ReadModelStore } from "../store/store.ts";
import { latencyChart, type LatencyPoint } from "./chart.ts";
import { html, type Html } from "./html.ts";
import { announcementsOf, barOf, latencyFact, layout, label, life, uptimeFacts } from "./page.ts";
import { defaultTimeZone, moment, withDates, type Face } from "./when.ts";
import { dayMs, type ServiceStatus, type StatusModel } from "./read-model.ts";

export const ranges = { "24h": { per: "hour", count: 24, words: "last 24 hours" }, "30d": { per: "day", count: 30, words: "last 30 days" }, "90d": { per: "day", count: 90, words: "last 90 days" } } as const;
export type Range = keyof typeof ranges;
export const rangeQuery = z.strictObject({
  range: z.enum(Object.keys(ranges) as [Range, ...Range[]], 'must be "24h", "30d" or "90d"').default("24h").describe("The chart's span"),
});

export interface ServicePageModel {
  readonly generatedAt: string;
  readonly serverName: string;
  readonly service: ServiceStatus;
  readonly range: Range;
  readonly latency: readonly LatencyPoint[];
  /** Its incidents open or closed in the last 90 days, the latest first. */
  /** Each from its first failed check (startedAt) to the pass that closed it, its duration policy/outage.ts's. */
  readonly incidents: readonly {
    readonly startedAt: string;
    readonly openedAt: string;
    readonly closedAt: string | null;
    readonly durationMs: number;
    readonly failures: number;
    readonly error: string | null;
  }[];
  readonly announcements: StatusModel["announcements"];
  readonly historyRevision: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** `server`: the read model of the service's server (shared with its page); undefined when it has no such service. */
export async function servicePageModel(store: AlertingStore & ReadModelStore, server: StatusModel, key: number, serviceId: string, range: Range, now: number, isPublic: boolean): Promise<ServicePageModel | undefined> {
  const service = server.servers[0]?.services.find((s) => s.id === serviceId);
  if (!service) return undefined;
  const { per, count } = ranges[range];
  const size = per === "hour" ? hourMs : dayMs;
  const last = Math.floor(now / size) * size;
  const span = last - (count - 1) * size;
  const [sums, incidents] = await Promise.all([
    store.rollupSums({ since: span, until: last + size, per, serviceKeys: [key] }),
    store.incidents({ serverId: service.serverId, serviceId, limit: 100, endedAfter: now - 90 * dayMs }),
  ]);
  // A service younger than the span is charted over its life (or from its first figures, when it has older
  // ones: copied or imported): a new one's first hour fills the chart, not one point after 23 empty hours.
  const born = Math.floor(Date.parse(service.createdAt) / size) * size;
  const since = Math.max(span, Math.min(born, ...sums.map((s) => s.at)));
  const points = (last - since) / size + 1;
  const byTime = new Map(sums.map((s) => [s.at, s]));
  const latency = Array.from({ length: points }, (_, i): LatencyPoint => {
    const start = since + i * size;
    const sum = byTime.get(start);
    const counted = sum ? sum.checks - sum.silencedChecks : 0;
    return {
      at: iso(start),
      checks: sum?.checks ?? 0,
      uptime: sum && counted > 0 ? (counted - (sum.failures - sum.silencedFailures)) / counted : null,
      p50: sum ? quantile(sum.sketch, 0.5) : null,
      p95: sum ? quantile(sum.sketch, 0.95) : null,
    };
  });
  return {
    generatedAt: server.generatedAt,
    serverName: server.servers[0]!.name,
    service,
    range,
    latency,
    incidents: incidents.incidents.map((i) => ({
      startedAt: iso(i.startedAt),
      openedAt: iso(i.openedAt),
      closedAt: i.closedAt === null ? null : iso(i.closedAt),
      durationMs: outageMs(i, now),
      failures: i.failures,
      error: isPublic ? null : i.firstError,
    })),
    announcements: server.announcements,
    historyRevision: server.historyRevision,
  };
}

/** The page. `base`: the path of the service page (/status/web-01/home, or under a named page); `feed`: the announcements' feed to link to. */
export function renderServicePage(model: ServicePageModel, options: { base: string; back: { href: string; text: string }; feed?: string; version: string; timeZone?: string }): string {
  const s = model.service;
  const face: Face = { now: Date.parse(model.generatedAt), timeZone: options.timeZone ?? defaultTimeZone };
  const { per, count } = ranges[model.range];
  // Fewer points than the span has: the service is younger, and the chart covers its life (servicePageModel).
  const words = model.latency.length < count ? `since it was created, ${life(face.now - Date.parse(s.createdAt))} ago` : ranges[model.range].words;
  const rangeLinks = (Object.keys(ranges) as Range[]).map(
    (r) => html`<li><a href="${options.base}?range=${r}"${r === model.range ? html` aria-current="page"` : ""}>${ranges[r].words}</a></li>`,
  );
  const main: Html = html`<div id="content"><p class="crumbs"><a href="${options.back.href}">${options.back.text}</a> / ${model.serverName}</p>
${announcementsOf(model.announcements, face)}
<p class="overall ${s.quiet ? "unknown" : s.status}" role="status">${label[s.status]}${s.quiet && html` (${s.quiet.kind === "silence" ? "silenced" : "in maintenance"} until ${moment(s.quiet.until, face, "date")})`}</p>
<p class="updated">Updated ${moment(model.generatedAt, face)}${s.lastCheckedAt && html`; checked ${moment(s.lastCheckedAt, face)}`}</p>
<dl class="facts">${uptimeFacts(s, face.now)}${latencyFact(s, "Last latency")}</dl>
${s.error && (s.status === "down" || s.status === "blocked") && html`<p class="error">${withDates(s.error, face.timeZone)}</p>`}
${
  // A heartbeat is told, not checked: it has no latency to chart (only a heartbeat has lastRunMs).
  s.lastRunMs === undefined &&
  html`<section aria-labelledby="latency"><h2 id="latency">Latency, ${words}</h2>
<nav aria-label="Chart span"><ul class="ranges">${rangeLinks}</ul></nav>
${latencyChart(model.latency, { title: `Latency, ${words}`, per, id: "chart" })}</section>`
}
<section aria-labelledby="uptime"><h2 id="uptime">Uptime per day</h2>
${barOf(s, model.historyRevision)}</section>
<section aria-labelledby="incidents"><h2 id="incidents">Incidents</h2>
${
  model.incidents.length === 0
    ? html`<p class="quiet-note">None in the last 90 days.</p>`
    : html`<table><caption class="when">The last 90 days, the latest first</caption><thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col">Lasted</th><th scope="col">Failed checks</th></tr></thead><tbody>
${model.incidents.map(
  (i) =>
    html`<tr><td>${moment(i.startedAt, face, "date")}</td><td>${i.closedAt ? moment(i.closedAt, face, "date") : "still open"}</td><td>${duration(i.durationMs)}</td><td>${i.failures}</td></tr>
`,
)}</tbody></table>`
}</section></div>`;
  return layout(`${s.name}: ${label[s.status]}`, s.name, main, options.version, options.feed ? { feed: options.feed } : {});
}
