/**
 * The SERVER or SERVER/SERVICE argument of check and tail: parsed, and looked up among the stored services
 * with the same message for both commands when it names nothing.
 */
import { UsageError } from "../platform/usage.ts";

export interface Target {
  readonly serverId?: string;
  readonly serviceId?: string;
}

export function parseTarget(target: string | undefined): Target {
  if (target === undefined) return {};
  const [serverId, serviceId, extra] = target.split("/");
  if (extra !== undefined || !serverId || serviceId === "") {
    throw new UsageError(`the target is SERVER or SERVER/SERVICE (got ${JSON.stringify(target)})`);
  }
  return serviceId === undefined ? { serverId } : { serverId, serviceId };
}

/** The services `target` names among `services`; a usage error (exit 2) saying what is missing when none. */
export function selectTarget<S extends { readonly serverId: string; readonly serviceId: string }>(services: readonly S[], target: Target): S[] {
  const { serverId, serviceId } = target;
  const chosen = services.filter((s) => (!serverId || s.serverId === serverId) && (!serviceId || s.serviceId === serviceId));
  if (serverId && chosen.length === 0) {
    const known = services.some((s) => s.serverId === serverId);
    throw new UsageError(
      known ? `server ${serverId} has no service ${serviceId}; healthd export lists its services` : `no server ${serverId}; healthd export lists the servers`,
    );
  }
  return chosen;
}
