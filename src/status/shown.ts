/**
 * What a service is shown as, decided once for every place that shows it: a service's state in the API, the
 * counts of GET /services, the status page and its JSON, the badges, `healthd check`.
 * - paused: its check is paused, whatever it last said;
 * - blocked: it fails without an incident of its own while services it depends on have one (blockedBy);
 * - late: a heartbeat whose ping is due and has not come, still within its grace (not yet a failure);
 * - degraded: up, but its last check passed slower than its slowMs (amber; up for uptime);
 * - otherwise what the incident machine last said (up, down), or before the first result unknown (new for a
 *   heartbeat).
 * Beside its status, a silenced or in-maintenance service says so (`quiet`), with until when and why.
 */
import { qualify } from "../domain/model.ts";
import { type Upstream } from "../domain/batch.ts";
import { blockers } from "../policy/dependencies.ts";
import { nextDue, timingOf } from "../policy/heartbeat.ts";
import { quietAt, type Quiet } from "../policy/silence.ts";
import type { MaintenanceWindow } from "../domain/model.ts";
import type { Silence, StoredService } from "../store/store.ts";

export const shownStatuses = ["up", "down", "unknown", "paused", "blocked", "new", "late", "degraded"] as const;
export type ShownStatus = (typeof shownStatuses)[number];

export interface Shown {
  readonly status: ShownStatus;
  /** With status blocked: the services it depends on that have an open incident ("serverId/serviceId"). */
  readonly blockedBy?: readonly string[];
  /** Silenced, or in a maintenance window: notifications wait until then (not paused services). */
  readonly quiet?: Quiet;
}

/** What silences a service: the silences not over, and each server's maintenance windows. */
export interface Quieting {
  readonly silences: readonly Silence[];
  readonly windows: (serverId: string) => readonly MaintenanceWindow[];
  /** The servers read for their windows. */
  readonly servers: readonly { readonly id: string; readonly name: string; readonly maintenance: readonly MaintenanceWindow[] }[];
}

/**
 * `upstream`: what the services it depends on say of themselves (ConfigurationStore.upstream); `now`, the time;
 * `quieting`: the silences and windows, for saying a service is silenced (left out: not said).
 */
export function shown(service: StoredService, upstream: ReadonlyMap<string, Upstream>, now: number, quieting?: Quieting): Shown {
  const status = shownStatus(service, upstream, now);
  if (!quieting || status.status === "paused") return status;
  const quiet = quietAt(quieting.silences, quieting.windows(service.serverId), { serverId: service.serverId, serviceId: service.id }, now);
  return quiet ? { ...status, quiet } : status;
}

function shownStatus(service: StoredService, upstream: ReadonlyMap<string, Upstream>, now: number): Shown {
  if (service.check.paused) return { status: "paused" };
  const state = service.state;
  const heartbeat = service.check.type === "heartbeat";
  const due = dueAt(service);
  if (due !== null && state?.status !== "down" && now >= due) return { status: "late" };
  if (state === null || state.status === "unknown") return { status: heartbeat ? "new" : "unknown" };
  if (state.status === "down" && state.incidentOpenSince === null && service.check.dependsOn.length > 0) {
    const blockedBy = blockers(service.check.dependsOn.map((ref) => qualify(ref, service.serverId)), (name) => upstream.get(name));
    if (blockedBy.length > 0) return { status: "blocked", blockedBy };
  }
  if (state.status === "up" && state.slowStreak > 0) return { status: "degraded" };
  return { status: state.status };
}

/** When a heartbeat's next ping is due (null for other kinds of check). */
export function dueAt(service: StoredService): number | null {
  if (service.check.type !== "heartbeat") return null;
  return nextDue(timingOf(service.check, service.changedAt), { lastFinishAt: service.state?.lastFinishAt ?? null, missedDueAt: service.state?.missedDueAt ?? null });
}

/** How many of `services` are shown as each status. */
export function countShown(services: Iterable<{ readonly status: ShownStatus }>): Record<ShownStatus, number> & { services: number } {
  const counts = { services: 0, up: 0, down: 0, unknown: 0, paused: 0, blocked: 0, new: 0, late: 0, degraded: 0 };
  for (const s of services) (counts.services++, counts[s.status]++);
  return counts;
}

/** Everything upstream of `services`, read once for all of them. */
export function upstreamRefs(services: readonly StoredService[]): string[] {
  return services.flatMap((s) => s.check.dependsOn.map((ref) => qualify(ref, s.serverId)));
}

/** The silences and maintenance windows of the store (of one server, or all) as of `now`, for shown(). */
export async function quieting(
  store: { silences(now: number): Promise<Silence[]>; servers(serverId?: string): Promise<{ id: string; name: string; maintenance: readonly MaintenanceWindow[] }[]> },
  now: number,
  serverId?: string,
): Promise<Quieting> {
  const [silences, servers] = await Promise.all([store.silences(now), store.servers(serverId)]);
  const windows = new Map(servers.map((s) => [s.id, s.maintenance]));
  return { silences, windows: (serverId) => windows.get(serverId) ?? [], servers };
}
