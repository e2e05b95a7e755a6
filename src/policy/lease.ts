/**
 * The lease, the rule by which nodes sharing a database know who is live, and who may take a node's name:
 * pure. A node is live while its last heartbeat is younger than its lease. Once it is not, the others take its
 * checks over (the rebalance counts only live nodes: pools.ts), its claims on deliveries lapse (the outbox's
 * claim), and another process may take its name.
 */
import { nodePools } from "./pools.ts";

/** What the lease is judged from: when the node last heartbeated, and how long that holds. */
export interface Leased {
  readonly lastSeenAt: number;
  readonly leaseMs: number;
}

/** When the lease of a node seen at `lastSeenAt` runs out: it is live before, dead from then on. */
export function leaseEnd(node: Leased): number {
  return node.lastSeenAt + node.leaseMs;
}

export function isLive(node: Leased, now: number): boolean {
  return leaseEnd(node) > now;
}

/** A dead node stays in the list of nodes (`healthd nodes`, GET /nodes) this long after its lease ran out: a day. */
export const listedAfterDeathMs = 86_400_000;

/** Whether the list of nodes still shows `node` at `now`. */
export function isListed(node: Leased, now: number): boolean {
  return isLive(node, now - listedAfterDeathMs);
}

/** The row that holds a name, as registration reads it. */
export interface NameHolder extends Leased {
  readonly instance: string;
}

/**
 * What registering a node (process `instance`, of `location`) under a name does:
 * - refused: a live node of that name is another process (and not the one this one replaces);
 * - taken: the row is written (a dead node's row, or this process's own from before a restart, is taken
 *   over); the node keeps only its ownerships in the pools it belongs to (its location may have changed across
 *   the restart: what it owned elsewhere goes back to the pools); and, when `alone` (no other node can be
 *   live: one daemon serves the database), every other node's row goes, with its checks, rather than count as
 *   live until its lease runs out.
 */
export type Registration = { readonly refused: true } | { readonly refused: false; readonly forgetOthers: boolean; readonly keepPools: readonly string[] };

export function register(
  existing: NameHolder | undefined,
  node: { readonly instance: string; readonly location: string },
  now: number,
  options: { readonly replacing?: string | undefined; readonly alone: boolean },
): Registration {
  const other = existing !== undefined && existing.instance !== node.instance && existing.instance !== options.replacing;
  if (other && !options.alone && isLive(existing, now)) return { refused: true };
  return { refused: false, forgetOthers: options.alone, keepPools: nodePools(node.location) };
}
