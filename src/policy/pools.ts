/**
 * Pools: which nodes may run which check, and what a rebalance or a placement changes of who owns it; pure.
 * A check runs once in each of its locations (a pool per location, of the live nodes there), or once anywhere
 * (the pool "*", of every live node); a paused check is in no pool. Ownership is per check and pool. Who
 * among a pool's nodes gets which check is assign.ts's; this says which pools and nodes, and what moves.
 */
import type { Policy } from "../domain/batch.ts";

/** The pool of checks without locations: every live node takes part. */
export const anywhere = "*";

/** A check as pooling sees it. */
export interface PooledCheck {
  readonly key: number;
  /** null: anywhere. */
  readonly locations: readonly string[] | null;
  readonly paused: boolean;
}

/** A node as pooling sees it. */
export interface PoolNode {
  readonly name: string;
  readonly location: string;
}

/** Who runs a check in a pool. */
export interface Ownership {
  readonly service: number;
  readonly pool: string;
  readonly node: string;
}

/** The pools a check belongs to: one per location, or anywhere; none while it is paused. */
export function poolsOf(check: Pick<PooledCheck, "locations" | "paused">): readonly string[] {
  if (check.paused) return [];
  return check.locations === null ? [anywhere] : check.locations;
}

/** The pools a node of `location` takes part in. */
export function nodePools(location: string): readonly string[] {
  return [anywhere, location];
}

/** The names of the nodes (of those given, the live ones) that take part in `pool`, in the order given. */
export function poolMembers(nodes: readonly PoolNode[], pool: string): string[] {
  return nodes.filter((n) => pool === anywhere || n.location === pool).map((n) => n.name);
}

const id = (service: number, pool: string) => `${service}:${pool}`;

/**
 * A rebalance of every check over the live `nodes`, as `assign` spreads each pool: `gone` are the ownerships
 * to drop (the check is paused, left the pool, or its pool has no live node), `moved` the ones to write (new,
 * or to another node). The store writes both in the transaction that read the facts.
 */
export function rebalancing(
  checks: readonly PooledCheck[],
  owners: readonly Ownership[],
  nodes: readonly PoolNode[],
  assign: Policy["assign"],
): { gone: Ownership[]; moved: Ownership[] } {
  const pools = new Map<string, number[]>();
  for (const check of checks) {
    for (const pool of poolsOf(check)) {
      let list = pools.get(pool);
      if (!list) pools.set(pool, (list = []));
      list.push(check.key);
    }
  }
  const current = new Map(owners.map((o) => [id(o.service, o.pool), o.node]));
  const wanted = new Map<string, Ownership>();
  for (const [pool, keys] of pools) {
    const poolOwners = new Map<number, string>();
    for (const key of keys) {
      const owner = current.get(id(key, pool));
      if (owner !== undefined) poolOwners.set(key, owner);
    }
    for (const [service, node] of assign({ services: keys, nodes: poolMembers(nodes, pool), owners: poolOwners })) wanted.set(id(service, pool), { service, pool, node });
  }
  const gone = owners.filter((o) => !wanted.has(id(o.service, o.pool)));
  const moved = [...wanted.values()].filter((o) => current.get(id(o.service, o.pool)) !== o.node);
  return { gone, moved };
}

/**
 * For `checks` (new, or whose check changed) and their ownerships: the ones to drop (pools they left, or all
 * when paused), and the pools each still needs an owner in. Every other check stays where it is.
 */
export function unplaced(checks: readonly PooledCheck[], owners: readonly Ownership[]): { gone: Ownership[]; missing: Map<string, number[]> } {
  const wanted = new Map(checks.map((c) => [c.key, new Set(poolsOf(c))]));
  const gone = owners.filter((o) => !wanted.get(o.service)?.has(o.pool));
  const owned = new Set(owners.map((o) => id(o.service, o.pool)));
  const missing = new Map<string, number[]>();
  for (const [key, pools] of wanted) {
    for (const pool of pools) {
      if (owned.has(id(key, pool))) continue;
      let list = missing.get(pool);
      if (!list) missing.set(pool, (list = []));
      list.push(key);
    }
  }
  return { gone, missing };
}

/** Owners for the checks each pool is `missing`, among the live `nodes`, as `place` puts them. */
export function placing(missing: ReadonlyMap<string, readonly number[]>, nodes: readonly PoolNode[], place: Policy["place"]): Ownership[] {
  const placed: Ownership[] = [];
  for (const [pool, services] of missing) {
    for (const [service, node] of place({ services, nodes: poolMembers(nodes, pool) })) placed.push({ service, pool, node });
  }
  return placed;
}
