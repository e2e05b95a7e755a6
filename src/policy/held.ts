/**
 * Root cause: a DOWN names the services it holds through dependsOn. Pure. While a service has an open
 * incident, the services that depend on it (directly, or through services that depend on it) open none of
 * their own (dependencies.ts blockers, incident.ts): the DOWN is the one message about them all, so it says
 * who waits on it ("5 services that depend on db1/postgres are held: shop/checkout, ..."). A dependent with an
 * open incident of its own was told of already, and is not held. Each held service's state says why
 * (status blocked, blockedBy) in the API and on the status page.
 */
import type { NotificationWrite } from "../domain/batch.ts";

/** A service that depends on others, as the graph of dependsOn holds it. */
export interface Dependent {
  /** "serverId/serviceId". */
  readonly name: string;
  /** Full names. */
  readonly dependsOn: readonly string[];
  /** It has an open incident of its own (as the batch leaves it). */
  readonly incidentOpen: boolean;
}

/** How many held services a DOWN lists by name; the rest are counted. */
export const heldListed = 10;

/**
 * The services held while `name` is down, sorted: those that depend on it, and those that depend on them, and
 * so on; a service with its own open incident is not held, and holds nothing further (its own DOWN names them).
 */
export function heldBy(name: string, graph: readonly Dependent[]): string[] {
  const dependents = new Map<string, Dependent[]>();
  for (const d of graph) for (const on of d.dependsOn) dependents.set(on, [...(dependents.get(on) ?? []), d]);
  const held = new Set<string>();
  const stack = [name];
  while (stack.length > 0) {
    for (const d of dependents.get(stack.pop()!) ?? []) {
      if (d.incidentOpen || held.has(d.name) || d.name === name) continue;
      held.add(d.name);
      stack.push(d.name);
    }
  }
  return [...held].sort();
}

/** The line a DOWN adds: how many are held, the first `heldListed` by name, then how many more. */
export function heldLine(name: string, held: readonly string[]): string {
  const n = held.length;
  const listed = held.slice(0, heldListed).join(", ");
  const more = n > heldListed ? `, and ${n - heldListed} more` : "";
  return `${n} ${n === 1 ? "service that depends on" : "services that depend on"} ${name} ${n === 1 ? "is" : "are"} held: ${listed}${more}`;
}

/** The notifications with each DOWN naming the services it holds (its second line, after the error). */
export function nameHeld(notifications: readonly NotificationWrite[], graph: readonly Dependent[]): NotificationWrite[] {
  return notifications.map((n) => {
    if (n.kind !== "down") return n;
    const name = `${n.serverId}/${n.serviceId}`;
    const held = heldBy(name, graph);
    if (held.length === 0) return n;
    const lines = (n.body.message ?? "").split("\n");
    const message = [lines[0]!, heldLine(name, held), ...lines.slice(1)].join("\n");
    return { ...n, body: { ...n.body, message }, event: { ...n.event, message, held } };
  });
}
