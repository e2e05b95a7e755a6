/**
 * Servers, their services and their checks: what PUT, GET and DELETE on /services read and write.
 */
import type { Kysely } from "kysely";
import {
  fingerprint,
  shownStatus,
  unknownState,
  type ScheduleChange,
  type ScheduledService,
  type ServerDocument,
  type ServerSummary,
  type ServerView,
  type MaintenanceWindow,
  type ServiceDocument,
  type ServiceState,
  type ServiceView,
} from "../../model.ts";
import type { IncidentState } from "../../notify/incident.ts";
import { blockers, dependencyProblems, qualify, type Upstream } from "../../alerting/dependencies.ts";
import { withoutService } from "../../alerting/silence.ts";
import { planServerChange } from "../../server-change.ts";
import { DependencyError, type ApplyOptions, type ApplyResult, type ServerChange } from "../store.ts";
import type { Tables } from "../tables.ts";
import { liveNodes } from "./nodes.ts";
import { checkFromRow, checkToRow, entryFromRow, iso, stateFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

export async function listServers(db: Db): Promise<ServerSummary[]> {
  const rows = await db
    .selectFrom("servers")
    .leftJoin("services", "services.server_id", "servers.id")
    .leftJoin("http_check_configs as c", "c.service_key", "services.key")
    .leftJoin("service_states", "service_states.service_key", "services.key")
    .select(({ fn, eb }) => {
      const counted = (status: "up" | "down") =>
        fn.count<number>(eb.case().when(eb.and([eb("service_states.status", "=", status), eb("c.paused", "=", false)])).then(1).end());
      return [
        "servers.id",
        "servers.name",
        fn.count<number>("services.key").as("serviceCount"),
        counted("up").as("up"),
        counted("down").as("down"),
        fn.count<number>(eb.case().when("c.paused", "=", true).then(1).end()).as("paused"),
      ];
    })
    .groupBy(["servers.id", "servers.name"])
    .orderBy("servers.id")
    .execute();
  const blocked = await blockedCounts(db);
  // count() is bigint on PostgreSQL: numbers out.
  return rows.map((r) => {
    const [serviceCount, up, failing, paused] = [Number(r.serviceCount), Number(r.up), Number(r.down), Number(r.paused)];
    // Two reads, not one snapshot: a service that failed between them must not take down below zero.
    const b = Math.min(blocked.get(r.id) ?? 0, failing);
    return { id: r.id, name: r.name, serviceCount, up, down: failing - b, unknown: serviceCount - up - failing - paused, paused, blocked: b };
  });
}

/**
 * Per server, its services shown as blocked: shownStatus decides, as for the service view. Only failing
 * services with dependencies can be blocked, so only those are read: nothing where no dependency is declared.
 */
async function blockedCounts(db: Db): Promise<Map<string, number>> {
  const failing = await db
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .innerJoin("service_states as st", "st.service_key", "s.key")
    .select(["s.server_id", "c.depends_on", "c.paused", "st.incident_open_since"])
    .where("st.status", "=", "down")
    .where("c.depends_on", "<>", "[]")
    .execute();
  const counts = new Map<string, number>();
  if (failing.length === 0) return counts;
  const dependsOn = failing.map((r) => (JSON.parse(r.depends_on) as string[]).map((ref) => qualify(ref, r.server_id)));
  const upstream = await upstreamOf(db, dependsOn.flat());
  failing.forEach((r, i) => {
    const blockedBy = blockers(dependsOn[i]!, (name) => upstream.get(name));
    if (shownStatus("down", Boolean(r.paused), r.incident_open_since !== null, blockedBy).status === "blocked") {
      counts.set(r.server_id, (counts.get(r.server_id) ?? 0) + 1);
    }
  });
  return counts;
}

export async function getServer(db: Db, serverId: string): Promise<ServerView | undefined> {
  const server = await db.selectFrom("servers").selectAll().where("id", "=", serverId).executeTakeFirst();
  if (!server) return undefined;
  return {
    id: server.id,
    name: server.name,
    maintenance: JSON.parse(server.maintenance) as MaintenanceWindow[],
    createdAt: iso(server.created_at),
    updatedAt: iso(server.updated_at),
    services: await serviceViews(db, serverId),
  };
}

/** The services of a server (or one of them), with their checks and states, in creation order. */
export async function serviceViews(db: Db, serverId: string, serviceId?: string): Promise<ServiceView[]> {
  let query = db
    .selectFrom("services")
    .innerJoin("http_check_configs as c", "c.service_key", "services.key")
    .leftJoin("service_states as s", "s.service_key", "services.key")
    .leftJoin("health_check_data_entries as e", "e.id", "s.last_entry_id")
    .selectAll("c")
    .select([
      "services.id as service_id",
      "services.name as service_name",
      "s.status",
      "s.consecutive_failures",
      "s.last_checked_at",
      "s.incident_open_since",
      "e.id as entry_id",
      "e.checked_at as entry_checked_at",
      "e.ok as entry_ok",
      "e.status as entry_status",
      "e.latency_ms as entry_latency_ms",
      "e.error_kind as entry_error_kind",
      "e.error as entry_error",
      "e.matched as entry_matched",
      "e.location as entry_location",
    ])
    .where("services.server_id", "=", serverId);
  if (serviceId !== undefined) query = query.where("services.id", "=", serviceId);
  const rows = await query.orderBy("services.key").execute();
  const upstream = await upstreamOf(db, rows.flatMap((r) => (JSON.parse(r.depends_on) as string[]).map((ref) => qualify(ref, serverId))));
  const located = await locationsOf(db, rows.filter((r) => r.locations !== null).map((r) => r.service_key));
  return rows.map((r) => {
    const lastEntry =
      r.entry_id === null
        ? null
        : entryFromRow({
            id: r.entry_id,
            checked_at: r.entry_checked_at!,
            ok: r.entry_ok!,
            status: r.entry_status,
            latency_ms: r.entry_latency_ms!,
            error_kind: r.entry_error_kind,
            error: r.entry_error,
            matched: r.entry_matched,
            location: r.entry_location,
          });
    const check = checkFromRow(r);
    const stored: ServiceState =
      r.status === null || r.last_checked_at === null
        ? unknownState
        : {
            status: r.status,
            consecutiveFailures: r.consecutive_failures ?? 0,
            lastCheckedAt: iso(r.last_checked_at),
            lastEntry,
            incidentOpenSince: r.incident_open_since === null ? null : iso(r.incident_open_since),
          };
    const blockedBy = blockers(check.dependsOn.map((ref) => qualify(ref, serverId)), (name) => upstream.get(name));
    const shown = shownStatus(r.last_checked_at === null ? "unknown" : (r.status ?? "unknown"), check.paused, r.incident_open_since !== null, blockedBy);
    const state: ServiceState = { ...stored, ...shown, ...(check.locations ? { locations: located(r.service_key, check.locations) } : {}) };
    return { id: r.service_id, name: r.service_name, check, state };
  });
}

/**
 * Each listed location's latest result of the services `keys`: up or down, or unmonitored while no live node
 * is in that location (or none has checked it yet).
 */
async function locationsOf(db: Db, keys: readonly number[]) {
  type Shown = NonNullable<ServiceState["locations"]>;
  if (keys.length === 0) return (): Shown => ({});
  const now = Date.now();
  const [results, nodes] = await Promise.all([
    db.selectFrom("location_results").selectAll().where("service_key", "in", keys).execute(),
    liveNodes(db, now),
  ]);
  const live = new Set(nodes.map((n) => n.location));
  return (key: number, locations: readonly string[]): Shown =>
    Object.fromEntries(
      locations.map((name) => {
        const r = results.find((x) => x.service_key === key && x.location === name);
        const lastCheckedAt = r ? iso(r.checked_at) : null;
        const status = !live.has(name) || !r ? "unmonitored" : r.ok ? "up" : "down";
        return [name, { status, lastCheckedAt }];
      }),
    );
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
      const dependsOn = (JSON.parse(r.depends_on) as string[]).map((ref) => qualify(ref, r.server_id));
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

/** Thrown inside a dry run's transaction to roll it back with its result. */
class DryRun extends Error {
  constructor(readonly result: ApplyResult) {
    super("dry run");
  }
}

/**
 * Make each stored server exactly its document, and with `prune` delete the servers not named; all in the
 * transaction `write` opens. A service whose check did not change keeps its row, its state and its entries.
 */
export async function applyServers(
  write: <T>(fn: (trx: Db) => Promise<T>) => Promise<T>,
  servers: ReadonlyMap<string, ServerDocument>,
  options: ApplyOptions,
  announce: (trx: Db) => Promise<void>,
): Promise<ApplyResult> {
  try {
    return await write(async (trx) => {
      const changes: ServerChange[] = [];
      const started: number[] = [];
      const stopped: number[] = [];
      for (const [serverId, doc] of servers) {
        const change = await putServer(trx, serverId, doc, options.now);
        changes.push(change.server);
        started.push(...change.schedule.started);
        stopped.push(...change.schedule.stopped);
      }
      if (options.prune) {
        const stored = await trx.selectFrom("servers").select("id").orderBy("id").execute();
        for (const { id } of stored) {
          if (servers.has(id)) continue;
          const gone = await deleteServer(trx, id);
          stopped.push(...(gone?.stopped ?? []));
          const services = gone?.services ?? [];
          changes.push({ serverId: id, outcome: "deleted", services: { created: [], updated: [], deleted: services } });
        }
      }
      // The whole graph of dependsOn must hold after the write, or none of it is made.
      await checkDependencies(trx, (service, index) => {
        const [serverId, serviceId] = service.split("/") as [string, string];
        const doc = servers.get(serverId);
        const position = doc?.services.findIndex((s) => s.id === serviceId) ?? -1;
        if (position === -1) return undefined;
        return `${options.keyed ? `/${serverId}` : ""}/services/${position}/check/dependsOn/${index}`;
      });
      const result = { servers: changes, schedule: { started, stopped } };
      // A dry run does the real work and rolls it back, so it reports exactly what a real one would do.
      if (options.dryRun) throw new DryRun(result);
      if (changes.some((c) => c.outcome !== "unchanged")) await announce(trx);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRun) return error.result;
    throw error;
  }
}

async function putServer(trx: Db, serverId: string, doc: ServerDocument, now: number): Promise<{ server: ServerChange; schedule: ScheduleChange }> {
  const existing = await trx.selectFrom("servers").select(["name", "maintenance"]).where("id", "=", serverId).executeTakeFirst();
  const maintenance = JSON.stringify(doc.maintenance);
  const current = existing
    ? await trx.selectFrom("services").select(["key", "id", "name"]).where("server_id", "=", serverId).orderBy("key").execute()
    : [];
  const plan = planServerChange(serverId, existing && { name: existing.name, services: current }, doc);
  if (!existing) await trx.insertInto("servers").values({ id: serverId, name: plan.name, maintenance, created_at: now, updated_at: now }).execute();

  const started: number[] = [];
  const stopped = plan.delete.map((s) => s.key);
  if (stopped.length > 0) await trx.deleteFrom("services").where("key", "in", stopped).execute();

  const created: string[] = [];
  for (const service of plan.create) {
    started.push(await createService(trx, serverId, service, now));
    created.push(service.id);
  }

  const updated: { id: string; fields: string[] }[] = [];
  for (const { key, doc: service, renamed } of plan.keep) {
    const { fields, checkChanged } = await rewriteService(trx, key, service, renamed, now);
    if (checkChanged) started.push(key);
    if (fields.length > 0) updated.push({ id: service.id, fields });
  }

  const changed = plan.renamed || existing?.maintenance !== maintenance || created.length + updated.length + stopped.length > 0;
  if (existing && changed) await trx.updateTable("servers").set({ name: plan.name, maintenance, updated_at: now }).where("id", "=", serverId).execute();
  return {
    server: {
      serverId,
      outcome: !existing ? "created" : changed ? "updated" : "unchanged",
      services: { created, updated, deleted: plan.delete.map((s) => s.id) },
    },
    schedule: { started, stopped },
  };
}

/**
 * Refuse the write (throw DependencyError) when it leaves the graph of dependsOn broken. `pathOf` says where
 * in the written documents a service's reference sits; a service it knows nothing of was not written.
 */
export async function checkDependencies(trx: Db, pathOf: (service: string, index: number) => string | undefined): Promise<void> {
  // Only services with dependencies can be in a cycle or point at nothing: usually a few of many.
  const rows = await trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .select(["s.server_id", "s.id", "c.depends_on"])
    .where("c.depends_on", "!=", "[]")
    .execute();
  if (rows.length === 0) return;
  const nodes = rows.map((r) => ({ serverId: r.server_id, serviceId: r.id, dependsOn: JSON.parse(r.depends_on) as string[] }));
  const targets = nodes.flatMap((n) => n.dependsOn.map((ref) => qualify(ref, n.serverId)));
  const existing = await trx
    .selectFrom("services")
    .select(["server_id", "id"])
    .where("server_id", "in", [...new Set(targets.map((t) => t.slice(0, t.indexOf("/"))))])
    .execute();
  const exists = new Set(existing.map((r) => `${r.server_id}/${r.id}`));
  const problems = dependencyProblems(nodes, (service) => exists.has(service), (service) => pathOf(service, 0) !== undefined);
  if (problems.length === 0) return;
  const unknown = problems.flatMap((p) =>
    p.kind === "unknown" ? [{ path: pathOf(p.service, p.index)!, message: `names ${p.ref}, which does not exist; create it, or remove it from dependsOn` }] : [],
  );
  const cycle = problems.find((p) => p.kind === "cycle");
  if (unknown.length > 0 || cycle) {
    const errors = [...unknown];
    if (cycle) {
      // Told from a service the write named, which is where the reader will look.
      const ring = cycle.cycle.slice(0, -1);
      const at = Math.max(0, ring.findIndex((service) => pathOf(service, 0) !== undefined));
      const path = [...ring.slice(at), ...ring.slice(0, at), ring[at]!];
      errors.push({
        path: pathOf(path[0]!, 0)?.replace(/\/\d+$/, "") ?? "",
        message: `makes a cycle: ${path.join(" -> ")}; a service cannot depend on itself, even through others`,
      });
    }
    throw new DependencyError(400, `dependsOn is invalid: ${errors[0]!.message}`, errors);
  }
  const dangling = problems.filter((p) => p.kind === "dangling");
  const named = dangling.map((p) => `${p.dependents.join(", ")} ${p.dependents.length === 1 ? "depends" : "depend"} on ${p.missing}`);
  throw new DependencyError(409, `${named.join("; ")}: remove it from their dependsOn first`, []);
}

/** PUT of one service of an existing server: the whole-server PUT's rules for that one. Undefined: no such server. */
export async function putService(
  trx: Db,
  serverId: string,
  service: ServiceDocument,
  now: number,
): Promise<{ outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange } | undefined> {
  if (!(await serverExists(trx, serverId))) return undefined;
  const existing = await trx.selectFrom("services").select(["key", "name"]).where("server_id", "=", serverId).where("id", "=", service.id).executeTakeFirst();
  let result: { outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange };
  if (!existing) {
    result = { outcome: "created", schedule: { started: [await createService(trx, serverId, service, now)], stopped: [] } };
  } else {
    const { fields, checkChanged } = await rewriteService(trx, existing.key, service, existing.name !== (service.name ?? service.id), now);
    result = { outcome: fields.length > 0 ? "updated" : "unchanged", schedule: { started: checkChanged ? [existing.key] : [], stopped: [] } };
  }
  if (result.outcome !== "unchanged") await trx.updateTable("servers").set({ updated_at: now }).where("id", "=", serverId).execute();
  await checkDependencies(trx, (name, index) => (name === `${serverId}/${service.id}` ? `/check/dependsOn/${index}` : undefined));
  return result;
}

async function createService(trx: Db, serverId: string, service: ServiceDocument, now: number): Promise<number> {
  const { key } = await trx
    .insertInto("services")
    .values({ server_id: serverId, id: service.id, name: service.name ?? service.id, created_at: now, updated_at: now })
    .returning("key")
    .executeTakeFirstOrThrow();
  await trx.insertInto("http_check_configs").values(checkToRow(key, service.check)).execute();
  return key;
}

/** Write a kept service's check again; answers the fields that changed (name included) and whether its check did. */
async function rewriteService(trx: Db, key: number, service: ServiceDocument, renamed: boolean, now: number): Promise<{ fields: string[]; checkChanged: boolean }> {
  const before = await trx.deleteFrom("http_check_configs").where("service_key", "=", key).returningAll().executeTakeFirst();
  // Written again whole: the schema fills what the document leaves out, so compare what was stored.
  const after = await trx.insertInto("http_check_configs").values(checkToRow(key, service.check)).returningAll().executeTakeFirstOrThrow();
  const fields = changedFields(before && checkFromRow(before), checkFromRow(after));
  const checkChanged = fields.length > 0;
  if (renamed) fields.unshift("name");
  if (fields.length > 0) {
    await trx.updateTable("services").set({ name: service.name ?? service.id, updated_at: now }).where("key", "=", key).execute();
  }
  return { fields, checkChanged };
}

/** The fields of a check that differ (`check.url`, ...), or every field when there was none before. */
function changedFields(before: ReturnType<typeof checkFromRow> | undefined, after: ReturnType<typeof checkFromRow>): string[] {
  if (!before) return ["check"];
  if (fingerprint(before) === fingerprint(after)) return [];
  return (Object.keys(after) as (keyof typeof after)[])
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .map((k) => `check.${k}`);
}

/** Delete a server and, by cascade, everything of it; answers its services' keys and ids, or undefined. */
export async function deleteServer(trx: Db, serverId: string): Promise<(ScheduleChange & { services: string[] }) | undefined> {
  const services = await trx.selectFrom("services").select(["key", "id"]).where("server_id", "=", serverId).orderBy("key").execute();
  const deleted = await trx.deleteFrom("servers").where("id", "=", serverId).executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) return undefined;
  return { started: [], stopped: services.map((s) => s.key), services: services.map((s) => s.id) };
}

export async function deleteService(trx: Db, serverId: string, serviceId: string, now: number): Promise<ScheduleChange | undefined> {
  const service = await findService(trx, serverId, serviceId);
  if (!service) return undefined;
  await trx.deleteFrom("services").where("key", "=", service.key).execute();
  const { maintenance } = await trx.selectFrom("servers").select("maintenance").where("id", "=", serverId).executeTakeFirstOrThrow();
  const windows = JSON.stringify(withoutService(JSON.parse(maintenance) as MaintenanceWindow[], serviceId));
  await trx.updateTable("servers").set({ maintenance: windows, updated_at: now }).where("id", "=", serverId).execute();
  return { started: [], stopped: [service.key] };
}

export async function scheduledServices(db: Db, node?: string): Promise<ScheduledService[]> {
  let query = db
    .selectFrom("services")
    .innerJoin("http_check_configs as c", "c.service_key", "services.key")
    .leftJoin("service_states as st", "st.service_key", "services.key")
    .selectAll("c")
    .select(["services.server_id", "services.id as service_id", "st.last_checked_at"]);
  // A node runs what it owns (in whichever pool: a service is in one of a node's pools at most).
  if (node !== undefined) query = query.where("services.key", "in", (eb) => eb.selectFrom("service_owners").select("service_key").where("node", "=", node));
  // A paused check is not run.
  const rows = (await query.orderBy("services.key").execute()).filter((r) => !r.paused);
  return rows.map((r) => {
    const check = checkFromRow(r);
    return { key: r.service_key, serverId: r.server_id, serviceId: r.service_id, check, fingerprint: fingerprint(check), lastCheckedAt: r.last_checked_at };
  });
}

export async function serviceStates(db: Db): Promise<Map<number, IncidentState>> {
  const rows = await db
    .selectFrom("service_states")
    .select(["service_key", "status", "consecutive_failures", "consecutive_passes", "failing_since", "incident_open_since", "down_sent", "last_reminded_at"])
    .execute();
  return new Map(rows.map((r) => [r.service_key, stateFromRow(r)]));
}
