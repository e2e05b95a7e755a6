/**
 * Whether a service is silenced at a moment: by a silence (its server's, or its own) or by one of its server's
 * recurring maintenance windows. Pure.
 */
import type { MaintenanceWindow } from "../model.ts";
import type { SilenceSpan } from "../batch.ts";
import { cronOf } from "../scheduler/plan.ts";

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
