/**
 * Nodes and who runs which check. Every `healthd serve` registers a row and heartbeats it; a node is live
 * while its heartbeat is younger than its lease. Ownership (service_owners) is rebalanced in one transaction
 * that holds the cluster's rebalancing lock (PostgreSQL: an advisory lock; SQLite: its write lock), from the
 * live nodes and the services, by the policy's assignment (src/policy/assign.ts).
 */
import { sql, type Kysely } from "kysely";
import type { Policy } from "../../domain/batch.ts";
import type { Backend } from "../backend.ts";
import type { NodeRecord } from "../store.ts";
import type { Tables } from "../tables.ts";
import { chunkSize, type BulkInsert } from "./bulk.ts";

type Db = Kysely<Tables>;

/** The pool of checks without locations: every live node takes part. */
const anywhere = "*";

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

const live = (now: number) => sql<boolean>`last_seen_at + lease_ms > ${now}`;

/**
 * Register `node`, unless a live node of the same name is another process: then answer that one. A dead
 * node's row (or this node's own, from before a restart) is taken over. `alone`: no other node can be live
 * (one daemon serves the database), so every other row is of a node that died: they go, with their checks,
 * rather than count as live until their leases run out.
 */
export async function registerNode(trx: Db, node: NodeRecord, now: number, replacing?: string, alone = false): Promise<NodeRecord | undefined> {
  if (alone) {
    await trx.deleteFrom("service_owners").where("node", "<>", node.name).execute();
    await trx.deleteFrom("nodes").where("name", "<>", node.name).execute();
  }
  const existing = await trx.selectFrom("nodes").selectAll().where("name", "=", node.name).executeTakeFirst();
  const other = existing && existing.instance !== node.instance && existing.instance !== replacing;
  if (other && !alone && existing.last_seen_at + existing.lease_ms > now) return recordFromRow(existing);
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
  // A node's location may have changed across the restart: what it owned elsewhere goes back to the pools.
  await trx.deleteFrom("service_owners").where("node", "=", node.name).where("pool", "not in", [anywhere, node.location]).execute();
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

/** Every registered node (live or not), by name. Rows dead for more than a day are forgotten first. */
export async function listNodes(db: Db, now: number): Promise<(NodeRecord & { readonly services: number })[]> {
  const rows = await db
    .selectFrom("nodes as n")
    .leftJoin("service_owners as o", "o.node", "n.name")
    .selectAll("n")
    .select((eb) => eb.fn.count<number>("o.service_key").as("services"))
    .where(sql<boolean>`n.last_seen_at + n.lease_ms > ${now - 86_400_000}`)
    .groupBy(["n.name", "n.instance", "n.host", "n.pid", "n.location", "n.version", "n.started_at", "n.last_seen_at", "n.lease_ms"])
    .orderBy("n.name")
    .execute();
  return rows.map((r) => ({ ...recordFromRow(r), services: Number(r.services) }));
}

export async function liveNodes(db: Db, now: number): Promise<NodeRecord[]> {
  const rows = await db.selectFrom("nodes").selectAll().where(live(now)).orderBy("name").execute();
  return rows.map(recordFromRow);
}

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
  const owners = await trx.selectFrom("service_owners").selectAll().execute();

  const pools = new Map<string, number[]>();
  for (const s of services) {
    if (s.paused) continue;
    // A check runs once in each of its locations, or once anywhere.
    for (const pool of s.locations === null ? [anywhere] : (JSON.parse(s.locations) as string[])) {
      let list = pools.get(pool);
      if (!list) pools.set(pool, (list = []));
      list.push(s.key);
    }
  }
  const current = new Map(owners.map((o) => [`${o.service_key}:${o.pool}`, o.node]));
  const wanted = new Map<string, string>();
  for (const [pool, keys] of pools) {
    const members = nodes.filter((n) => pool === anywhere || n.location === pool).map((n) => n.name);
    const poolOwners = new Map<number, string>();
    for (const key of keys) {
      const owner = current.get(`${key}:${pool}`);
      if (owner !== undefined) poolOwners.set(key, owner);
    }
    for (const [key, node] of assign({ services: keys, nodes: members, owners: poolOwners })) wanted.set(`${key}:${pool}`, node);
  }

  // A node's first start (or every start after a clean stop) moves every service: a statement per row took
  // a second of the 5 s before 50,000 services were scheduled (bench:start), so both go by the thousand.
  const gone = owners.filter((o) => wanted.get(`${o.service_key}:${o.pool}`) === undefined);
  const gonePools = new Map<string, number[]>();
  for (const o of gone) {
    let keys = gonePools.get(o.pool);
    if (!keys) gonePools.set(o.pool, (keys = []));
    keys.push(o.service_key);
  }
  for (const [pool, keys] of gonePools) {
    for (let i = 0; i < keys.length; i += chunkSize) {
      await trx.deleteFrom("service_owners").where("pool", "=", pool).where("service_key", "in", keys.slice(i, i + chunkSize)).execute();
    }
  }
  const moved = [...wanted]
    .filter(([id, node]) => current.get(id) !== node)
    .map(([id, node]) => [Number(id.slice(0, id.indexOf(":"))), id.slice(id.indexOf(":") + 1), node]);
  await backend.bulkInsert(trx, ownerRows, moved);
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
  const services = await trx.selectFrom("http_check_configs").select(["service_key", "locations", "paused"]).where(backend.keyIn("service_key", keys)).execute();
  const owners = await trx.selectFrom("service_owners").selectAll().where(backend.keyIn("service_key", keys)).execute();
  const wanted = new Map(services.map((s) => [s.service_key, new Set(s.paused ? [] : s.locations === null ? [anywhere] : (JSON.parse(s.locations) as string[]))]));
  for (const o of owners) {
    if (!wanted.get(o.service_key)?.has(o.pool)) await trx.deleteFrom("service_owners").where("service_key", "=", o.service_key).where("pool", "=", o.pool).execute();
  }
  const owned = new Set(owners.map((o) => `${o.service_key}:${o.pool}`));
  const missing = new Map<string, number[]>();
  for (const [key, pools] of wanted) {
    for (const pool of pools) {
      if (owned.has(`${key}:${pool}`)) continue;
      let list = missing.get(pool);
      if (!list) missing.set(pool, (list = []));
      list.push(key);
    }
  }
  if (missing.size === 0) return;
  const nodes = await liveNodes(trx, now);
  const rows: unknown[][] = [];
  for (const [pool, services] of missing) {
    const members = nodes.filter((n) => pool === anywhere || n.location === pool).map((n) => n.name);
    for (const [key, node] of place({ services, nodes: members })) rows.push([key, pool, node]);
  }
  await backend.bulkInsert(trx, ownerRows, rows);
}
