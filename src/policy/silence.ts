/**
 * Whether a service is silenced at a moment: by a silence (its server's, or its own) or by one of its server's
 * recurring maintenance windows. Pure.
 */
import type { MaintenanceWindow } from "../domain/model.ts";
import type { SilenceSpan } from "../domain/batch.ts";
import { cronOf } from "../domain/schedule.ts";

type ServiceRef = { readonly serverId: string; readonly serviceId: string };

/** The window `at` falls in, if any, with when it began: at an occurrence of its pattern less than its duration ago. */
function windowAt(windows: readonly MaintenanceWindow[], serviceId: string, at: number): { window: MaintenanceWindow; began: number } | undefined {
  for (const window of windows) {
    if (window.services && !window.services.includes(serviceId)) continue;
    const began = cronOf(window.cron, window.timezone).nextRun(new Date(at - window.durationMinutes * 60_000));
    if (began !== null && began.getTime() <= at) return { window, began: began.getTime() };
  }
  return undefined;
}

/** The window `at` falls in, if any. */
export function maintenanceAt(windows: readonly MaintenanceWindow[], serviceId: string, at: number): MaintenanceWindow | undefined {
  return windowAt(windows, serviceId, at)?.window;
}

/** Whether `span` silences `service` at `at`: its server's, or its own, and running. */
const covers = (span: SilenceSpan, service: ServiceRef, at: number) =>
  span.serverId === service.serverId && (span.serviceId === null || span.serviceId === service.serviceId) && span.startsAt <= at && at < span.endsAt;

export function silencedAt(spans: readonly SilenceSpan[], windows: readonly MaintenanceWindow[], service: ServiceRef, at: number): boolean {
  return spans.some((s) => covers(s, service, at)) || maintenanceAt(windows, service.serviceId, at) !== undefined;
}

/** Why a service says nothing now, and until when: a silence (the one that lasts longest) or a maintenance window. */
export interface Quiet {
  readonly kind: "silence" | "maintenance";
  readonly until: number;
  readonly reason: string | null;
}

/** What keeps a service quiet at `at`, if anything: what its state and the status page say of it. */
export function quietAt(
  silences: readonly (SilenceSpan & { readonly reason: string | null })[],
  windows: readonly MaintenanceWindow[],
  service: ServiceRef,
  at: number,
): Quiet | undefined {
  let quiet: Quiet | undefined;
  for (const s of silences) {
    if (covers(s, service, at) && (quiet === undefined || s.endsAt > quiet.until)) quiet = { kind: "silence", until: s.endsAt, reason: s.reason };
  }
  const found = windowAt(windows, service.serviceId, at);
  if (found) {
    const until = found.began + found.window.durationMinutes * 60_000;
    if (quiet === undefined || until > quiet.until) quiet = { kind: "maintenance", until, reason: found.window.reason ?? null };
  }
  return quiet;
}

/** A span of time, Unix ms, from `start` to before `end`. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/**
 * The occurrences of a server's maintenance windows that begin from `from` to before `until`, by start, at most
 * `max` of them: what the status page lists ahead as "Scheduled maintenance".
 */
export function upcomingWindows(windows: readonly MaintenanceWindow[], from: number, until: number, max: number): (Span & { window: MaintenanceWindow })[] {
  const found: (Span & { window: MaintenanceWindow })[] = [];
  for (const window of windows) {
    let at = from - 1;
    for (let i = 0; i < max; i++) {
      const next = cronOf(window.cron, window.timezone).nextRun(new Date(at))?.getTime();
      if (next === undefined || next >= until) break;
      found.push({ start: next, end: next + window.durationMinutes * 60_000, window });
      at = next;
    }
  }
  return found.sort((a, b) => a.start - b.start).slice(0, max);
}

/**
 * When a service was quiet (silenced, or in one of its server's maintenance windows) between `from` and
 * `until`, as spans that do not overlap, by start: what a report leaves out of downtime. `occurrences`: its
 * server's windows from before `from` (upcomingWindows, read once per server).
 */
export function quietSpans(spans: readonly SilenceSpan[], occurrences: readonly (Span & { window: MaintenanceWindow })[], service: ServiceRef, from: number, until: number): Span[] {
  const all: Span[] = [];
  for (const s of spans) {
    if (s.serverId === service.serverId && (s.serviceId === null || s.serviceId === service.serviceId)) all.push({ start: s.startsAt, end: s.endsAt });
  }
  for (const o of occurrences) if (!o.window.services || o.window.services.includes(service.serviceId)) all.push(o);
  return union(all.map((s) => ({ start: Math.max(s.start, from), end: Math.min(s.end, until) })).filter((s) => s.end > s.start));
}

/** Spans merged where they overlap or touch, by start. */
export function union(spans: readonly Span[]): Span[] {
  const merged: Span[] = [];
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    const last = merged.at(-1);
    if (last && s.start <= last.end) merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, s.end) };
    else merged.push(s);
  }
  return merged;
}

/** How much of `span` the spans (merged, as union gives them) cover, ms. */
export function overlap(span: Span, spans: readonly Span[]): number {
  let total = 0;
  for (const s of spans) total += Math.max(0, Math.min(span.end, s.end) - Math.max(span.start, s.start));
  return total;
}
