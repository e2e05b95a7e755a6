/**
 * Who runs which check: pure. Each pool (a location, or "*" for checks that may run anywhere) spreads its
 * services over its live nodes so that every node has its share, give or take one, and moves as few
 * services as it can: a live owner keeps what it has up to its share, and only the excess and the services
 * without a live owner are handed out, to the nodes furthest below their share.
 */

import type { Pool } from "../domain/model.ts";

/** The owner each service of the pool should have; a service is left out when the pool has no live node. */
export function assign(pool: Pool): Map<number, string> {
  const result = new Map<number, string>();
  const nodes = [...pool.nodes].sort();
  if (nodes.length === 0) return result;
  const services = [...pool.services].sort((a, b) => a - b);
  const held = new Map<string, number[]>(nodes.map((n) => [n, []]));
  const free: number[] = [];
  for (const key of services) {
    const owner = pool.owners.get(key);
    const list = owner === undefined ? undefined : held.get(owner);
    if (list) list.push(key);
    else free.push(key);
  }
  // Shares: everyone gets `base`, and `extra` nodes one more; those that already hold the most get the extra
  // ones, so that fewer services move.
  const base = Math.floor(services.length / nodes.length);
  const extra = services.length % nodes.length;
  const byHolding = [...nodes].sort((a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1));
  const share = new Map(byHolding.map((n, i) => [n, base + (i < extra ? 1 : 0)]));
  for (const node of nodes) {
    const keys = held.get(node)!;
    // The excess goes back to the pool: the newest services (largest keys) move, the oldest stay put.
    free.push(...keys.splice(share.get(node)!));
    for (const key of keys) result.set(key, node);
  }
  free.sort((a, b) => a - b);
  for (const key of free) {
    let best = nodes[0]!;
    let room = -Infinity;
    for (const node of nodes) {
      const left = share.get(node)! - held.get(node)!.length;
      if (left > room) (best = node), (room = left);
    }
    held.get(best)!.push(key);
    result.set(key, best);
  }
  return result;
}

/**
 * New (or changed) services of a pool placed without moving any other and without counting what each node
 * runs (a count of a pool of 50,000 was most of a PUT's time on PostgreSQL): round the nodes by key, so that
 * services created together go round them. The balance is made exact by the next rebalance (see assign).
 */
export function place(pool: { readonly services: readonly number[]; readonly nodes: readonly string[] }): Map<number, string> {
  const nodes = [...pool.nodes].sort();
  return new Map(nodes.length === 0 ? [] : pool.services.map((key) => [key, nodes[key % nodes.length]!]));
}
