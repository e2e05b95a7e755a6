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
