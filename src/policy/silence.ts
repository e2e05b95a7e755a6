/**
 * Whether a service is silenced at a moment: by a silence (its server's, or its own) or by one of its server's
 * recurring maintenance windows. Pure.
 */
import type { MaintenanceWindow } from "../model.ts";
import type { SilenceSpan } from "../batch.ts";
import { cronOf } from "../scheduler/plan.ts";

/** The window `at` falls in, if any: it began at an occurrence of its pattern less than its duration ago. */
export function maintenanceAt(windows: readonly MaintenanceWindow[], serviceId: string, at: number): MaintenanceWindow | undefined {
  return windows.find((w) => {
    if (w.services && !w.services.includes(serviceId)) return false;
    const began = cronOf(w.cron, w.timezone).nextRun(new Date(at - w.durationMinutes * 60_000));
    return began !== null && began.getTime() <= at;
  });
}

export function silencedAt(
  spans: readonly SilenceSpan[],
  windows: readonly MaintenanceWindow[],
  service: { readonly serverId: string; readonly serviceId: string },
  at: number,
): boolean {
  const silenced = spans.some(
    (s) => s.serverId === service.serverId && (s.serviceId === null || s.serviceId === service.serviceId) && s.startsAt <= at && at < s.endsAt,
  );
  return silenced || maintenanceAt(windows, service.serviceId, at) !== undefined;
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
  service: { readonly serverId: string; readonly serviceId: string },
  at: number,
): Quiet | undefined {
  let quiet: Quiet | undefined;
  for (const s of silences) {
    const covers = s.serverId === service.serverId && (s.serviceId === null || s.serviceId === service.serviceId) && s.startsAt <= at && at < s.endsAt;
    if (covers && (quiet === undefined || s.endsAt > quiet.until)) quiet = { kind: "silence", until: s.endsAt, reason: s.reason };
  }
  const window = maintenanceAt(windows, service.serviceId, at);
  if (window) {
    const began = cronOf(window.cron, window.timezone).nextRun(new Date(at - window.durationMinutes * 60_000))!.getTime();
    const until = began + window.durationMinutes * 60_000;
    if (quiet === undefined || until > quiet.until) quiet = { kind: "maintenance", until, reason: window.reason ?? null };
  }
  return quiet;
}
