/**
 * Nodes and who runs which check. Every `healthd serve` registers a row and heartbeats it. What is live, who
 * may take a name (src/policy/lease.ts) and who owns which check (src/policy/pools.ts, assign.ts) are the
 * policy's: these read the rows, ask it, and write what it answers. Ownership (service_owners) is rebalanced in
 * one transaction that holds the cluster's rebalancing lock (PostgreSQL: an advisory lock; SQLite: its write
 * lock).
 */
import type { Kysely } from "kysely";
import type { Policy } from "../../domain/batch.ts";
import { isListed, isLive, register } from "../../policy/lease.ts";
import { placing, rebalancing, unplaced, type Ownership, type PooledCheck } from "../../policy/pools.ts";
import type { Backend } from "../backend.ts";
import type { NodeRecord } from "../store.ts";
import type { Tables } from "../tables.ts";
import { chunkSize, type BulkInsert } from "./bulk.ts";

type Db = Kysely<Tables>;

function recordFromRow(r: Tables["nodes"]): NodeRecord {
  return {
    name: r.name,
    instance: r.instance,
    host: r.host,
    pid: r.pid,
    location: r.location,
    version: r.version,
    startedAt: r.started_at,
    lastSeenAt: r.last_seen_at,
    leaseMs: r.lease_ms,
  };
}

/**
 * Register `node`, unless a live node of the same name is another process: then answer that one. The policy
 * says which (policy/lease.ts register): `alone` (one daemon serves the database) forgets every other node.
 */
export async function registerNode(trx: Db, node: NodeRecord, now: number, replacing?: string, alone = false): Promise<NodeRecord | undefined> {
  const existing = await trx.selectFrom("nodes").selectAll().where("name", "=", node.name).executeTakeFirst();
  const held = existing && recordFromRow(existing);
  const registration = register(held, node, now, { replacing, alone });
  if (registration.refused) return held;
  if (registration.forgetOthers) {
    await trx.deleteFrom("service_owners").where("node", "<>", node.name).execute();
    await trx.deleteFrom("nodes").where("name", "<>", node.name).execute();
  }
  const row = {
    name: node.name,
    instance: node.instance,
    host: node.host,
    pid: node.pid,
    location: node.location,
    version: node.version,
    started_at: node.startedAt,
    last_seen_at: now,
    lease_ms: node.leaseMs,
  };
  if (existing) await trx.updateTable("nodes").set(row).where("name", "=", node.name).execute();
  else await trx.insertInto("nodes").values(row).execute();
  await trx.deleteFrom("service_owners").where("node", "=", node.name).where("pool", "not in", registration.keepPools).execute();
  return undefined;
}

/** Answers false when the row is no longer this process's (another took the name after this one was dead). */
export async function heartbeat(db: Db, name: string, instance: string, now: number): Promise<boolean> {
  const result = await db.updateTable("nodes").set({ last_seen_at: now }).where("name", "=", name).where("instance", "=", instance).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A clean stop: the node's checks go back to the pools at once. */
export async function leaveNode(trx: Db, name: string, instance: string): Promise<void> {
  const mine = await trx.selectFrom("nodes").select("name").where("name", "=", name).where("instance", "=", instance).executeTakeFirst();
  if (!mine) return;
  await trx.deleteFrom("service_owners").where("node", "=", name).execute();
  await trx.deleteFrom("nodes").where("name", "=", name).execute();
}

/**
 * Every registered node (live or not), by name, but those dead for more than a day (policy/lease.ts isListed).
 * The nodes table holds a row per name ever started: a few, read whole and judged here.
 */
export async function listNodes(db: Db, now: number): Promise<(NodeRecord & { readonly services: number })[]> {
  const rows = await db
    .selectFrom("nodes as n")
    .leftJoin("service_owners as o", "o.node", "n.name")
    .selectAll("n")
    .select((eb) => eb.fn.count<number>("o.service_key").as("services"))
    .groupBy(["n.name", "n.instance", "n.host", "n.pid", "n.location", "n.version", "n.started_at", "n.last_seen_at", "n.lease_ms"])
    .orderBy("n.name")
    .execute();
  return rows.map((r) => ({ ...recordFromRow(r), services: Number(r.services) })).filter((n) => isListed(n, now));
}

/** The nodes live at `now` (policy/lease.ts isLive), by name. */
export async function liveNodes(db: Db, now: number): Promise<NodeRecord[]> {
  const rows = await db.selectFrom("nodes").selectAll().orderBy("name").execute();
  return rows.map(recordFromRow).filter((n) => isLive(n, now));
}

/** The checks as pooling sees them (policy/pools.ts). */
function pooled(rows: readonly { key: number; locations: string | null; paused: number | boolean }[]): PooledCheck[] {
  return rows.map((r) => ({ key: r.key, locations: r.locations === null ? null : (JSON.parse(r.locations) as string[]), paused: Boolean(r.paused) }));
}

const ownership = (o: Tables["service_owners"]): Ownership => ({ service: o.service_key, pool: o.pool, node: o.node });

/**
 * Give every check an owner among the nodes of its pool live at `liveAt`, as `assign` says; drop the ownership
 * of checks that are paused, gone from a pool, or whose pool has no live node. Answers how many ownerships
 * changed. One rebalancing at a time in the cluster.
 */
export async function rebalance(trx: Db, backend: Backend, assign: Policy["assign"], liveAt: number): Promise<number> {
  await backend.lock(trx, "rebalance");
  const nodes = await liveNodes(trx, liveAt);
  const services = await trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .select(["s.key", "c.locations", "c.paused"])
    .execute();
  const owners = (await trx.selectFrom("service_owners").selectAll().execute()).map(ownership);
  const { gone, moved } = rebalancing(pooled(services), owners, nodes, assign);

  // A node's first start (or every start after a clean stop) moves every service: a statement per row took
  // a second of the 5 s before 50,000 services were scheduled (bench:start), so both go by the thousand.
  const gonePools = new Map<string, number[]>();
  for (const o of gone) {
    let keys = gonePools.get(o.pool);
    if (!keys) gonePools.set(o.pool, (keys = []));
    keys.push(o.service);
  }
  for (const [pool, keys] of gonePools) {
    for (let i = 0; i < keys.length; i += chunkSize) {
      await trx.deleteFrom("service_owners").where("pool", "=", pool).where("service_key", "in", keys.slice(i, i + chunkSize)).execute();
    }
  }
  await backend.bulkInsert(trx, ownerRows, moved.map((o) => [o.service, o.pool, o.node]));
  return gone.length + moved.length;
}

const ownerRows: BulkInsert<"service_owners"> = {
  table: "service_owners",
  columns: [["service_key", "bigint"], ["pool", "text"], ["node", "text"]],
  upsert: { key: ["service_key", "pool"], update: ["node"] },
};

/**
 * Give the services `keys` (new, or whose check changed) an owner in each pool they belong to, among the
 * nodes live at `now`, as the policy places them; every other service stays where it is. Their ownerships in
 * pools they left (or all of them, when paused) go. A PUT of one service costs this much, not a rebalance of
 * every service.
 */
export async function placeServices(trx: Db, backend: Backend, place: Policy["place"], keys: readonly number[], now: number): Promise<void> {
  if (keys.length === 0) return;
  await backend.lock(trx, "rebalance");
  const services = await trx.selectFrom("http_check_configs").select(["service_key as key", "locations", "paused"]).where(backend.keyIn("service_key", keys)).execute();
  const owners = await trx.selectFrom("service_owners").selectAll().where(backend.keyIn("service_key", keys)).execute();
  const { gone, missing } = unplaced(pooled(services), owners.map(ownership));
  for (const o of gone) await trx.deleteFrom("service_owners").where("service_key", "=", o.service).where("pool", "=", o.pool).execute();
  if (missing.size === 0) return;
  const placed = placing(missing, await liveNodes(trx, now), place);
  await backend.bulkInsert(trx, ownerRows, placed.map((o) => [o.service, o.pool, o.node]));
}
