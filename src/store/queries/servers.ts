/**
 * Servers, their services and their checks as stored: what GET /services, the status page and the scheduler
 * read. Writing them is configure.ts.
 */
import type { Kysely } from "kysely";
import type { Entry, MaintenanceWindow, ScheduledService } from "../../domain/model.ts";
import { type Upstream } from "../../domain/batch.ts";
import type { Backend } from "../backend.ts";
import type { ServerRecord, ServiceFilter, StoredService } from "../store.ts";
import type { Tables } from "../tables.ts";
import { chunkSize } from "./bulk.ts";
import { checkFromRow } from "./check-rows.ts";
import { beatFromRow, dependsOnFromRow, entryColumns, entryFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

export async function servers(db: Db, serverId?: string): Promise<ServerRecord[]> {
  let query = db.selectFrom("servers").selectAll();
  if (serverId !== undefined) query = query.where("id", "=", serverId);
  const rows = await query.orderBy("id").execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    maintenance: JSON.parse(r.maintenance) as MaintenanceWindow[],
    channels: JSON.parse(r.channels ?? "null") as string[] | null,
    pingKey: r.ping_key,
    autoProvision: Boolean(r.auto_provision),
    heartbeatDefaults: JSON.parse(r.heartbeat_defaults ?? "null") as Record<string, unknown> | null,
    groupThreshold: r.group_threshold,
    ...(r.escalate === null ? {} : { escalate: JSON.parse(r.escalate) as { afterMinutes: number; channels: string[] }[] }),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}

/** The server whose slug URLs' ping key this is, if any. */
export async function serverByPingKey(db: Db, pingKey: string): Promise<string | undefined> {
  return (await db.selectFrom("servers").select("id").where("ping_key", "=", pingKey).executeTakeFirst())?.id;
}

/** Services with their checks, states and last entries, by server and then creation order. */
export async function services(db: Db, backend: Backend, filter: ServiceFilter = {}): Promise<StoredService[]> {
  let query = db
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .leftJoin("incidents as i", "i.id", "st.incident_id")
    .selectAll("c")
    .select(["s.key", "s.server_id", "srv.name as server_name", "s.id as service_id", "s.name as service_name", "s.tags as service_tags"])
    .select(["st.status", "st.consecutive_failures", "st.last_checked_at", "st.incident_open_since", "i.started_at as incident_started_at", "st.last_entry_id"])
    .select(["s.created_at", "s.updated_at", "st.last_ping_at", "st.open_runs", "st.last_duration_ms", "st.last_finish_at", "st.missed_due_at", "st.slow_streak"]);
  if (filter.serverId !== undefined) query = query.where("s.server_id", "=", filter.serverId);
  if (filter.serviceId !== undefined) query = query.where("s.id", "=", filter.serviceId);
  if (filter.keys !== undefined) query = query.where(backend.keyIn("s.key", filter.keys));
  const rows = await query.orderBy("s.server_id").orderBy("s.key").execute();
  const ids = rows.flatMap((r) => (r.last_entry_id === null ? [] : [r.last_entry_id]));
  const entries = new Map<number, Entry>();
  for (let i = 0; i < ids.length; i += chunkSize) {
    const page = await db.selectFrom("health_check_data_entries").select(entryColumns).where(backend.keyIn("id", ids.slice(i, i + chunkSize))).execute();
    for (const e of page) entries.set(e.id, entryFromRow(e));
  }
  return rows.map((r) => {
    const openRuns = r.open_runs === null ? [] : Object.values(JSON.parse(r.open_runs) as Record<string, number>);
    return {
      key: r.key,
      serverId: r.server_id,
      serverName: r.server_name,
      id: r.service_id,
      name: r.service_name,
      tags: JSON.parse(r.service_tags) as string[],
      check: checkFromRow(r),
      state:
        r.status === null
          ? null
          : {
              status: r.status,
              consecutiveFailures: r.consecutive_failures ?? 0,
              lastCheckedAt: r.last_checked_at,
              incidentOpenSince: r.incident_open_since,
              // The open incident's start as stored with it; an incident open without a record (none: the
              // migration that added incidents gave each its record) would count from its opening.
              incidentStartedAt: r.incident_open_since === null ? null : (r.incident_started_at ?? r.incident_open_since),
              lastPingAt: r.last_ping_at,
              lastStartAt: openRuns.length === 0 ? null : Math.max(...openRuns),
              lastDurationMs: r.last_duration_ms,
              lastFinishAt: r.last_finish_at,
              missedDueAt: r.missed_due_at,
              slowStreak: r.slow_streak ?? 0,
            },
      changedAt: r.updated_at,
      createdAt: r.created_at,
      lastEntry: r.last_entry_id === null ? null : (entries.get(r.last_entry_id) ?? null),
    };
  });
}

/**
 * What the services named by `refs` ("serverId/serviceId") and everything upstream of them say of
 * themselves: their dependencies, open incident and last check. Read a server at a time, level by level up
 * the graph (chains are short; the graph has no cycle).
 */
export async function upstreamOf(db: Db, refs: readonly string[]): Promise<Map<string, Upstream>> {
  const found = new Map<string, Upstream>();
  const loaded = new Set<string>();
  let wanted = refs;
  while (wanted.length > 0) {
    const servers = [...new Set(wanted.map((ref) => ref.slice(0, ref.indexOf("/"))))].filter((s) => !loaded.has(s));
    if (servers.length === 0) break;
    servers.forEach((s) => loaded.add(s));
    const rows = await db
      .selectFrom("services as s")
      .innerJoin("http_check_configs as c", "c.service_key", "s.key")
      .leftJoin("service_states as st", "st.service_key", "s.key")
      .select(["s.server_id", "s.id", "c.depends_on", "st.status", "st.incident_open_since"])
      .where("s.server_id", "in", servers)
      .execute();
    const next: string[] = [];
    for (const r of rows) {
      const dependsOn = dependsOnFromRow(r.depends_on, r.server_id);
      found.set(`${r.server_id}/${r.id}`, { dependsOn, incidentOpen: r.incident_open_since !== null, failing: r.status === "down" });
      next.push(...dependsOn);
    }
    wanted = next;
  }
  return found;
}

export async function findService(db: Db, serverId: string, serviceId: string): Promise<{ key: number } | undefined> {
  return db.selectFrom("services").select("key").where("server_id", "=", serverId).where("id", "=", serviceId).executeTakeFirst();
}

export async function serverExists(db: Db, serverId: string): Promise<boolean> {
  return (await db.selectFrom("servers").select("id").where("id", "=", serverId).executeTakeFirst()) !== undefined;
}

/**
 * The checks to run (a paused one is not): of all services, of those `node` owns, or of `keys`. With
 * `heartbeats`, every heartbeat (of `keys`) whoever owns it, paused too: what a ping may name.
 */
export async function scheduledServices(
  db: Db,
  backend: Backend,
  filter: { readonly node?: string; readonly keys?: readonly number[]; readonly heartbeats?: boolean } = {},
): Promise<ScheduledService[]> {
  if (filter.keys?.length === 0) return [];
  let query = db
    .selectFrom("services")
    .innerJoin("http_check_configs as c", "c.service_key", "services.key")
    .leftJoin("service_states as st", "st.service_key", "services.key")
    .selectAll("c")
    .select(["services.server_id", "services.id as service_id", "services.updated_at", "st.last_checked_at", "st.last_ping_at", "st.open_runs"])
    .select(["st.last_duration_ms", "st.last_finish_at", "st.missed_due_at"]);
  query = filter.heartbeats ? query.where("c.type", "=", "heartbeat") : query.where("c.paused", "=", false);
  // A node runs what it owns (in whichever pool: a service is in one of a node's pools at most). Joined, not
  // `IN (owners of the node)`: SQLite built that whole set first, 7 ms at 50,000 services for a PUT of one.
  const { node, keys } = filter;
  if (node !== undefined) query = query.innerJoin("service_owners as o", "o.service_key", "services.key").where("o.node", "=", node);
  if (keys !== undefined) query = query.where(backend.keyIn("services.key", keys));
  const rows = await query.orderBy("services.key").execute();
  return rows.map((r) => {
    const check = checkFromRow(r);
    return {
      key: r.service_key,
      serverId: r.server_id,
      serviceId: r.service_id,
      check,
      lastCheckedAt: r.last_checked_at,
      ...(check.type === "heartbeat" ? { since: r.updated_at, beat: beatFromRow(r) } : {}),
    };
  });
}
