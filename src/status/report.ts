/**
 * Monthly reports (GET /reports, `healthd report`): per service the uptime, checks, failures, incidents,
 * downtime and latency of a calendar month (UTC), and whether its check's slaTarget was met. Time a service
 * was silenced or in maintenance is left out: its checks from uptime (the rollups count them apart), its
 * hours from downtime; the report says how much was left out.
 */
import { stringify } from "csv-stringify/sync";
import { outageSpan } from "../policy/outage.ts";
import { quantile } from "../policy/sketch.ts";
import { overlap, quietSpans, upcomingWindows, union } from "../policy/silence.ts";
import type { AlertingStore, ConfigurationStore, ReadModelStore } from "../store/store.ts";

export interface ServiceReport {
  readonly server: string;
  readonly service: string;
  readonly name: string;
  /** Share of passing checks, 0 to 1, leaving out those made while silenced or in maintenance; null without checks. */
  readonly uptime: number | null;
  readonly checks: number;
  readonly failures: number;
  /** Incidents open at any time in the month. */
  readonly incidents: number;
  /** Time in incidents (each from its first failed check to the pass that closed it) within the month, less the time it was silenced or in maintenance. */
  readonly downtimeMs: number;
  readonly latencyMs: { readonly p50: number | null; readonly p95: number | null };
  /** The check's slaTarget (percent), and whether uptime reached it (null: no target, or no checks). */
  readonly slaTarget: number | null;
  readonly slaMet: boolean | null;
  /** Left out: the checks made while silenced or in maintenance, and how long that was. */
  readonly excluded: { readonly checks: number; readonly quietMs: number };
}

export interface Report {
  readonly month: string;
  readonly from: string;
  /** The month's end, or now while it lasts. */
  readonly until: string;
  /** The month is over: the figures will not change (unless results are stored late). */
  readonly complete: boolean;
  readonly note: string;
  readonly services: readonly ServiceReport[];
}

export const monthPattern = /^(\d{4})-(0[1-9]|1[0-2])$/;
const note = "Checks made while a service was silenced or in maintenance are left out of its uptime, and that time is left out of its downtime.";

/** Uptime as a percentage to three places, rounded down: a report never says 99.9 % for 99.8996. */
export const uptimePercent = (uptime: number) => (Math.floor(uptime * 100_000) / 1000).toFixed(3);

/** The month's first moment and the next month's, Unix ms (UTC). */
export function monthSpan(month: string): { from: number; until: number } {
  const [, year, m] = monthPattern.exec(month)!;
  return { from: Date.UTC(Number(year), Number(m) - 1, 1), until: Date.UTC(Number(year), Number(m), 1) };
}

export async function monthlyReport(store: AlertingStore & ConfigurationStore & ReadModelStore, month: string, now: number, serverId?: string): Promise<Report> {
  const span = monthSpan(month);
  const until = Math.min(span.until, now);
  const services = await store.services(serverId === undefined ? {} : { serverId });
  const [servers, sums, incidents, silences] = await Promise.all([
    store.servers(serverId),
    store.rollupSums({ since: span.from, until, per: "span", serviceKeys: services.map((s) => s.key) }),
    store.incidents({ ...(serverId === undefined ? {} : { serverId }), startedBefore: until, endedAfter: span.from, limit: 1_000_000 }),
    store.silencesBetween(span.from, until),
  ]);
  const byKey = new Map(sums.map((s) => [s.serviceKey, s]));
  const incidentsOf = new Map<string, (typeof incidents.incidents)[number][]>();
  for (const i of incidents.incidents) {
    const key = `${i.serverId}/${i.serviceId}`;
    incidentsOf.set(key, [...(incidentsOf.get(key) ?? []), i]);
  }
  // Each server's windows once: every service of it shares them.
  const occurrences = new Map(
    servers.map((s) => {
      const longest = Math.max(0, ...s.maintenance.map((w) => w.durationMinutes)) * 60_000;
      return [s.id, upcomingWindows(s.maintenance, span.from - longest, until, 100_000)];
    }),
  );
  // A server's windows did not silence anything before it existed.
  const since = new Map(servers.map((s) => [s.id, Math.max(span.from, s.createdAt)]));
  const report = services.map((s): ServiceReport => {
    const sum = byKey.get(s.key);
    const quiet = quietSpans(silences, occurrences.get(s.serverId) ?? [], { serverId: s.serverId, serviceId: s.id }, since.get(s.serverId) ?? span.from, until);
    // Each incident's outage (from its first failed check), the part of it inside the month.
    const own = (incidentsOf.get(`${s.serverId}/${s.id}`) ?? []).map((i) => {
      const outage = outageSpan(i, now);
      return { start: Math.max(outage.start, span.from), end: Math.min(outage.end, until) };
    });
    const down = union(own.filter((i) => i.end > i.start));
    const downtimeMs = down.reduce((total, d) => total + (d.end - d.start) - overlap(d, quiet), 0);
    const counted = sum ? sum.checks - sum.silencedChecks : 0;
    const failed = sum ? sum.failures - sum.silencedFailures : 0;
    const uptime = counted > 0 ? (counted - failed) / counted : null;
    const slaTarget = s.check.slaTarget;
    return {
      server: s.serverId,
      service: s.id,
      name: s.name,
      uptime: uptime === null ? null : Math.round(uptime * 1e7) / 1e7,
      checks: counted,
      failures: failed,
      incidents: own.length,
      downtimeMs,
      latencyMs: { p50: sum ? round(quantile(sum.sketch, 0.5)) : null, p95: sum ? round(quantile(sum.sketch, 0.95)) : null },
      slaTarget,
      slaMet: slaTarget === null || uptime === null ? null : uptime * 100 >= slaTarget,
      excluded: { checks: sum?.silencedChecks ?? 0, quietMs: quiet.reduce((total, q) => total + (q.end - q.start), 0) },
    };
  });
  return { month, from: iso(span.from), until: iso(until), complete: now >= span.until, note, services: report };
}

const iso = (ms: number) => new Date(ms).toISOString();
const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 10) / 10);

/**
 * A text cell a spreadsheet would read as a formula (`=`, `+`, `-`, `@`, or a tab or CR before one) gets a
 * leading `'`, which spreadsheets show as text (OWASP's advice on CSV injection). Only text cells: a name or id
 * comes from whoever wrote the service; the numbers are healthd's own and are written as numbers, so a negative
 * one (none today) would stay a number rather than turn into text.
 */
export const spreadsheetText = (value: string): string => (/^[=+\-@\t\r]/.test(value) ? `'${value}` : value);

/** The report as CSV (RFC 4180), a row per service, with a header. */
export function reportCsv(report: Report): string {
  return stringify(
    report.services.map((s) => [
      s.server,
      s.service,
      s.name,
      s.uptime === null ? "" : uptimePercent(s.uptime),
      s.checks,
      s.failures,
      s.incidents,
      Math.round(s.downtimeMs / 1000),
      s.latencyMs.p50 ?? "",
      s.latencyMs.p95 ?? "",
      s.slaTarget ?? "",
      s.slaMet === null ? "" : s.slaMet ? "yes" : "no",
      s.excluded.checks,
      Math.round(s.excluded.quietMs / 1000),
    ]),
    {
      cast: { string: spreadsheetText },
      header: true,
      columns: ["server", "service", "name", "uptime_percent", "checks", "failures", "incidents", "downtime_seconds", "p50_ms", "p95_ms", "sla_target_percent", "sla_met", "excluded_checks", "excluded_seconds"],
    },
  );
}
