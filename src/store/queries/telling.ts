/**
 * What a batch's notifications say of other services, read only when a batch has something to say: the graph
 * of dependsOn, for a DOWN to name the services it holds (policy/held.ts), and the storms of servers whose
 * services fail together (policy/storm.ts), which the same transaction writes. Decides nothing.
 */
import type { Kysely } from "kysely";
import type { BatchDecision, NotificationWrite } from "../../domain/batch.ts";
import { periodOf } from "../../domain/schedule.ts";
import { nameHeld, type Dependent } from "../../policy/held.ts";
import { groupStorms, type StormServer, type StormService, type StormWrite } from "../../policy/storm.ts";
import type { Backend } from "../backend.ts";
import type { Tables } from "../tables.ts";
import type { ReadBatch } from "./results.ts";
import { dependsOnFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/** The decision, with its DOWNs naming what they hold and storms told as one. A batch with nothing to say reads nothing more. */
export async function told(trx: Db, backend: Backend, batch: ReadBatch, decision: BatchDecision, now: number): Promise<BatchDecision> {
  let notifications = decision.notifications;
  const servers = stormServers(batch, decision);
  if (servers.size > 0) {
    // One decider at a time across nodes: the storm a batch reads is the one the last batch left.
    await backend.lock(trx, "storms");
    const facts = await stormFacts(trx, servers, decision, now);
    if (facts.size > 0) {
      const grouped = groupStorms(notifications, facts, batch.facts.routes, now);
      notifications = await writeStorms(trx, grouped.storms, grouped.notifications);
    }
  }
  if (notifications.some((n) => n.kind === "down" && n.incidentId !== null)) {
    const graph = await dependencyGraph(trx, decision);
    if (graph.length > 0) notifications = nameHeld(notifications, graph);
  }
  return notifications === decision.notifications ? decision : { ...decision, notifications };
}

/** The servers a storm may concern: of a DOWN or RECOVERED, or of a service the batch brought back from failing. */
function stormServers(batch: ReadBatch, decision: BatchDecision): Set<string> {
  const servers = new Set(decision.notifications.flatMap((n) => (n.incidentId !== null && (n.kind === "down" || n.kind === "recovered") ? [n.serverId] : [])));
  for (const [key, after] of decision.services) {
    const before = batch.facts.services.get(key);
    if (before && before.progress.state.status === "down" && after.state.status !== "down") servers.add(before.record.serverId);
  }
  return servers;
}

/** Of `servers`, those that group (groupThreshold above 0), with their services as the batch leaves them and their open storm. */
async function stormFacts(trx: Db, servers: ReadonlySet<string>, decision: BatchDecision, now: number): Promise<Map<string, StormServer>> {
  const heads = await trx
    .selectFrom("servers as srv")
    .leftJoin("server_storms as st", (join) => join.onRef("st.server_id", "=", "srv.id").on("st.closed_at", "is", null))
    .select(["srv.id", "srv.name", "srv.group_threshold", "st.id as storm_id", "st.opened_at", "st.members"])
    .where("srv.id", "in", [...servers])
    .where("srv.group_threshold", ">", 0)
    .execute();
  // Without an open storm, only a DOWN may open one: a RECOVERED or a service back from failing has nothing to close.
  const downs = new Set(decision.notifications.flatMap((n) => (n.kind === "down" && n.incidentId !== null ? [n.serverId] : [])));
  const wanted = heads.filter((h) => h.storm_id !== null || downs.has(h.id));
  if (wanted.length === 0) return new Map();
  const rows = await trx
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .select(["s.key", "s.server_id", "s.id", "st.status", "st.failing_since", "st.incident_open_since", "c.notify", "c.paused", "c.interval_seconds", "c.cron"])
    .select(["c.channels", "srv.channels as server_channels"])
    .where("s.server_id", "in", wanted.map((h) => h.id))
    .execute();
  const services = new Map<string, Map<string, StormService>>();
  for (const r of rows) {
    const decided = decision.services.get(r.key)?.state;
    const service: StormService = {
      serviceId: r.id,
      failing: (decided?.status ?? r.status) === "down",
      failingSince: decided ? decided.failingSince : r.failing_since,
      incidentOpen: decided ? decided.incidentOpenSince !== null : r.incident_open_since !== null,
      intervalMs: periodOf({ intervalSeconds: r.interval_seconds, cron: r.cron }, now),
      speaks: Boolean(r.notify) && !r.paused,
      channels: JSON.parse(r.channels ?? r.server_channels ?? "null") as string[] | null,
    };
    services.set(r.server_id, (services.get(r.server_id) ?? new Map()).set(r.id, service));
  }
  return new Map(
    wanted.map((h) => [
      h.id,
      {
        serverId: h.id, serverName: h.name, groupThreshold: h.group_threshold, services: services.get(h.id) ?? new Map(),
        storm: h.storm_id === null ? null : { id: h.storm_id, openedAt: h.opened_at!, members: JSON.parse(h.members!) as string[] },
      },
    ]),
  );
}

/** Open and close the storms decided; answers the notifications with the opened storms' ids in their events. */
async function writeStorms(trx: Db, storms: readonly StormWrite[], notifications: readonly NotificationWrite[]): Promise<readonly NotificationWrite[]> {
  const ids = new Map<number, number>();
  for (const s of storms) {
    if (s.kind === "open") {
      const row = await trx.insertInto("server_storms").values({ server_id: s.serverId, opened_at: s.openedAt, members: JSON.stringify(s.members) }).returning("id").executeTakeFirstOrThrow();
      ids.set(s.id, row.id);
    } else await trx.updateTable("server_storms").set({ closed_at: s.closedAt }).where("id", "=", s.id).execute();
  }
  if (ids.size === 0) return notifications;
  return notifications.map((n) => (n.event.group != null && ids.has(n.event.group) ? { ...n, event: { ...n.event, group: ids.get(n.event.group)! } } : n));
}

/** Every service that depends on another, with whether it has an open incident, as the batch leaves it. */
async function dependencyGraph(trx: Db, decision: BatchDecision): Promise<Dependent[]> {
  const rows = await trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .select(["s.key", "s.server_id", "s.id", "c.depends_on", "st.incident_open_since"])
    .where("c.depends_on", "!=", "[]")
    .execute();
  return rows.map((r) => {
    const decided = decision.services.get(r.key);
    const incidentOpen = decided ? decided.state.incidentOpenSince !== null : r.incident_open_since !== null;
    return { name: `${r.server_id}/${r.id}`, dependsOn: dependsOnFromRow(r.depends_on, r.server_id), incidentOpen };
  });
}
