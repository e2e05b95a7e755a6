/**
 * What a service is shown as, decided once for every place that shows it: a service's state in the API, the
 * counts of GET /services, the status page and its JSON, the badges.
 * - paused: its check is paused, whatever it last said;
 * - blocked: it fails without an incident of its own while services it depends on have one (blockedBy);
 * - otherwise what the incident machine last said (up, down), or unknown before its first check.
 */
import { qualify, type Upstream } from "../model.ts";
import { blockers } from "../policy/dependencies.ts";
import type { StoredService } from "../store/store.ts";

export const shownStatuses = ["up", "down", "unknown", "paused", "blocked"] as const;
export type ShownStatus = (typeof shownStatuses)[number];

export interface Shown {
  readonly status: ShownStatus;
  /** With status blocked: the services it depends on that have an open incident ("serverId/serviceId"). */
  readonly blockedBy?: readonly string[];
}

/** `upstream`: what the services it depends on say of themselves (ConfigurationStore.upstream). */
export function shown(service: StoredService, upstream: ReadonlyMap<string, Upstream>): Shown {
  if (service.check.paused) return { status: "paused" };
  const state = service.state;
  if (state === null) return { status: "unknown" };
  if (state.status === "down" && state.incidentOpenSince === null && service.check.dependsOn.length > 0) {
    const blockedBy = blockers(service.check.dependsOn.map((ref) => qualify(ref, service.serverId)), (name) => upstream.get(name));
    if (blockedBy.length > 0) return { status: "blocked", blockedBy };
  }
  return { status: state.status };
}

/** How many of `services` are shown as each status. */
export function countShown(services: Iterable<{ readonly status: ShownStatus }>): Record<ShownStatus, number> & { services: number } {
  const counts = { services: 0, up: 0, down: 0, unknown: 0, paused: 0, blocked: 0 };
  for (const s of services) (counts.services++, counts[s.status]++);
  return counts;
}

/** Everything upstream of `services`, read once for all of them. */
export function upstreamRefs(services: readonly StoredService[]): string[] {
  return services.flatMap((s) => s.check.dependsOn.map((ref) => qualify(ref, s.serverId)));
}
