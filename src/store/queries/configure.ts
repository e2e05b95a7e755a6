/**
 * Changing servers, their services and their checks: PUT and DELETE on /services, and `healthd apply`. Each
 * change runs in one transaction and leaves the graph of dependsOn whole (the policy says what is wrong with
 * it, and the change is then refused whole), or changes nothing.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { qualify, type MaintenanceWindow, type ScheduleChange, type ServerDocument, type ServiceDocument } from "../../domain/model.ts";
import type { Policy } from "../../domain/batch.ts";
import { checkChange, planServerChange, retagged } from "../../policy/change.ts";
import { ChannelsRefused, DependenciesRefused, PingKeyTaken } from "../errors.ts";
import { channels, checkChannelNames, deleteChannel, putChannel } from "./channels.ts";
import type { ApplyOptions, ApplyResult, ChannelChange, ServerChange } from "../store.ts";
import type { Tables } from "../tables.ts";
import { checkFromRow, checkToRow, type CheckRow, type HeartbeatKeys } from "./check-rows.ts";
import { findService, serverExists } from "./servers.ts";

type Db = Kysely<Tables>;
type DependencyProblems = Policy["dependencyProblems"];

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
  problems: DependencyProblems,
  servers: ReadonlyMap<string, ServerDocument>,
  options: ApplyOptions,
  after: (trx: Db, result: ApplyResult) => Promise<void>,
): Promise<ApplyResult> {
  try {
    return await write(async (trx) => {
      const changes: ServerChange[] = [];
      const started: number[] = [];
      const stopped: number[] = [];
      const channelChanges: ChannelChange[] = [];
      for (const [name, doc] of options.channels ?? []) {
        const { created, changed } = await putChannel(trx, name, doc, options.now);
        channelChanges.push({ name, outcome: created ? "created" : changed ? "updated" : "unchanged" });
      }
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
          changes.push({ serverId: id, outcome: "deleted", fields: [], services: { created: [], updated: [], deleted: services } });
        }
        if (options.channels) {
          for (const { name } of await channels(trx)) {
            if (options.channels.has(name)) continue;
            const gone = await deleteChannel(trx, name);
            if (gone.namedBy.length > 0) throw new ChannelsRefused(gone.namedBy.map((user) => ({ serverId: user.split("/")[0]!, serviceId: user.split("/")[1] ?? null, channel: name })));
            channelChanges.push({ name, outcome: "deleted" });
          }
        }
      }
      await checkChannelNames(trx, [...servers.keys()]);
      // The whole graph of dependsOn must hold after the write, or none of it is made.
      const deleted = changes.some((c) => c.services.deleted.length > 0);
      if (deleted || [...servers.values()].some(hasDependencies)) {
        await checkDependencies(trx, problems, (service) => servers.has(service.slice(0, service.indexOf("/"))));
      }
      const result = { servers: changes, channels: channelChanges, schedule: { started, stopped } };
      // A dry run does the real work and rolls it back, so it reports exactly what a real one would do.
      if (options.dryRun) throw new DryRun(result);
      await after(trx, result);
      return result;
    });
  } catch (error) {
    if (error instanceof DryRun) return error.result;
    throw error;
  }
}

async function putServer(trx: Db, serverId: string, doc: ServerDocument, now: number): Promise<{ server: ServerChange; schedule: ScheduleChange }> {
  const existing = await trx.selectFrom("servers").select(["name", "maintenance", "channels", "ping_key", "auto_provision", "heartbeat_defaults", "group_threshold", "escalate"]).where("id", "=", serverId).executeTakeFirst();
  const maintenance = JSON.stringify(doc.maintenance);
  const channels = doc.channels === null ? null : JSON.stringify(doc.channels);
  const pingKey = doc.pingKey ?? existing?.ping_key ?? serverPingKey();
  if (pingKey !== existing?.ping_key) {
    const other = await trx.selectFrom("servers").select("id").where("ping_key", "=", pingKey).where("id", "!=", serverId).executeTakeFirst();
    if (other) throw new PingKeyTaken(serverId, other.id);
  }
  const slugs = {
    ping_key: pingKey, auto_provision: doc.autoProvision, heartbeat_defaults: doc.heartbeatDefaults === null ? null : JSON.stringify(doc.heartbeatDefaults),
    group_threshold: doc.groupThreshold,
    escalate: doc.escalate ? JSON.stringify(doc.escalate) : null,
  };
  const current = existing
    ? await trx.selectFrom("services").select(["key", "id", "name", "tags"]).where("server_id", "=", serverId).orderBy("key").execute()
    : [];
  const plan = planServerChange(serverId, existing && { name: existing.name, services: current }, doc);
  if (!existing) await trx.insertInto("servers").values({ id: serverId, name: plan.name, maintenance, channels, ...slugs, created_at: now, updated_at: now }).execute();

  const started: number[] = [];
  const stopped = plan.delete.map((s) => s.key);
  if (stopped.length > 0) await trx.deleteFrom("services").where("key", "in", stopped).execute();

  const created: string[] = [];
  for (const service of plan.create) {
    started.push(await createService(trx, serverId, service, now));
    created.push(service.id);
  }

  const updated: { id: string; fields: string[] }[] = [];
  for (const { key, doc: service, renamed, retagged } of plan.keep) {
    const { fields, checkChanged } = await rewriteService(trx, key, `${serverId}/${service.id}`, service, { renamed, retagged }, now);
    if (checkChanged) started.push(key);
    if (fields.length > 0) updated.push({ id: service.id, fields });
  }

  const fields = existing
    ? [...(plan.renamed ? ["name"] : []), ...(existing.maintenance !== maintenance ? ["maintenance"] : []), ...(existing.channels !== channels ? ["channels"] : []),
        ...(existing.ping_key !== slugs.ping_key ? ["pingKey"] : []), ...(Boolean(existing.auto_provision) !== slugs.auto_provision ? ["autoProvision"] : []),
        ...(existing.heartbeat_defaults !== slugs.heartbeat_defaults ? ["heartbeatDefaults"] : []),
        ...(existing.group_threshold !== slugs.group_threshold ? ["groupThreshold"] : []),
        ...(existing.escalate !== slugs.escalate ? ["escalate"] : [])]
    : [];
  const changed = fields.length > 0 || created.length + updated.length + stopped.length > 0;
  if (existing && changed) await trx.updateTable("servers").set({ name: plan.name, maintenance, channels, ...slugs, updated_at: now }).where("id", "=", serverId).execute();
  return {
    server: {
      serverId,
      outcome: !existing ? "created" : changed ? "updated" : "unchanged",
      fields,
      services: { created, updated, deleted: plan.delete.map((s) => s.id) },
    },
    schedule: { started, stopped },
  };
}

/**
 * Whether a write of `doc` can break the graph of dependsOn by what it writes: only a reference can name a
 * service that does not exist or close a cycle. (Deleting services can leave others pointing at nothing: a
 * write that deletes is checked too.) Checking every write read every service with dependencies, a scan of
 * the whole table for a PUT of one service.
 */
function hasDependencies(doc: ServerDocument): boolean {
  return doc.services.some((s) => s.check.dependsOn.length > 0);
}

/**
 * Refuse the write (throw DependenciesRefused) when it leaves the graph of dependsOn broken. `written` says
 * which services the write's documents named: their unknown references are their own fault.
 */
export async function checkDependencies(trx: Db, problemsOf: DependencyProblems, written: (service: string) => boolean): Promise<void> {
  // Only services with dependencies can be in a cycle or point at nothing: usually a few of many.
  const rows = await trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .select(["s.server_id", "s.id", "c.depends_on"])
    .where("c.depends_on", "!=", "[]")
    .execute();
  if (rows.length === 0) return;
  // As written: a problem names a reference the way its document wrote it.
  const nodes = rows.map((r) => ({ serverId: r.server_id, serviceId: r.id, dependsOn: JSON.parse(r.depends_on) as string[] }));
  const targets = new Set(nodes.flatMap((n) => n.dependsOn.map((ref) => qualify(ref, n.serverId).split("/")[0]!)));
  const existing = await trx.selectFrom("services").select(["server_id", "id"]).where("server_id", "in", [...targets]).execute();
  const exists = new Set(existing.map((r) => `${r.server_id}/${r.id}`));
  const problems = problemsOf(nodes, (service) => exists.has(service), written);
  if (problems.length > 0) throw new DependenciesRefused(problems);
}

/** PUT of one service of an existing server: the whole-server PUT's rules for that one. Undefined: no such server. */
export async function putService(
  trx: Db,
  problems: DependencyProblems,
  serverId: string,
  service: ServiceDocument,
  now: number,
): Promise<{ outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange } | undefined> {
  if (!(await serverExists(trx, serverId))) return undefined;
  const existing = await trx.selectFrom("services").select(["key", "name", "tags"]).where("server_id", "=", serverId).where("id", "=", service.id).executeTakeFirst();
  let result: { outcome: "created" | "updated" | "unchanged"; schedule: ScheduleChange };
  if (!existing) {
    result = { outcome: "created", schedule: { started: [await createService(trx, serverId, service, now)], stopped: [] } };
  } else {
    const { fields, checkChanged } = await rewriteService(trx, existing.key, `${serverId}/${service.id}`, service, { renamed: existing.name !== (service.name ?? service.id), retagged: retagged(existing, service) }, now);
    result = { outcome: fields.length > 0 ? "updated" : "unchanged", schedule: { started: checkChanged ? [existing.key] : [], stopped: [] } };
  }
  if (result.outcome !== "unchanged") await trx.updateTable("servers").set({ updated_at: now }).where("id", "=", serverId).execute();
  if (service.check.channels !== null || service.check.escalate) await checkChannelNames(trx, [serverId]);
  if (service.check.dependsOn.length > 0) await checkDependencies(trx, problems, (name) => name === `${serverId}/${service.id}`);
  return result;
}

async function createService(trx: Db, serverId: string, service: ServiceDocument, now: number): Promise<number> {
  const { key } = await trx
    .insertInto("services")
    .values({ server_id: serverId, id: service.id, name: service.name ?? service.id, tags: JSON.stringify(service.tags), created_at: now, updated_at: now })
    .returning("key")
    .executeTakeFirstOrThrow();
  await trx.insertInto("http_check_configs").values(checkToRow(key, service.check, await keysFor(trx, key, `${serverId}/${service.id}`, service))).execute();
  return key;
}

/**
 * A heartbeat's addresses: its ping key, the one its document gives (no other service may have it), else the
 * one it had, else a new one; its push token likewise (true: the one it had, else a new one; null: none); its
 * Gatus key as given. Undefined for another kind of check.
 */
async function keysFor(trx: Db, key: number, name: string, service: ServiceDocument, stored: Partial<Pick<CheckRow, "ping_key" | "push_token">> = {}): Promise<HeartbeatKeys | undefined> {
  const check = service.check;
  if (check.type !== "heartbeat") return undefined;
  const pushToken = check.pushToken === true ? (stored.push_token ?? newPushToken()) : check.pushToken === undefined ? (stored.push_token ?? null) : check.pushToken;
  const keys = { pingKey: check.pingKey ?? stored.ping_key ?? randomUUID(), pushToken, gatusKey: check.gatusKey };
  // Each is unique: one the document gives is refused whole when another service has it (one kept is this
  // service's, one made is new: neither is looked up, so a large apply asks nothing more of a plain heartbeat).
  const columns = { pingKey: "ping_key", pushToken: "push_token", gatusKey: "gatus_key" } as const;
  const given = { pingKey: check.pingKey, pushToken: typeof check.pushToken === "string" ? check.pushToken : undefined, gatusKey: check.gatusKey ?? undefined };
  for (const field of ["pingKey", "pushToken", "gatusKey"] as const) {
    const value = given[field];
    if (value === undefined) continue;
    const other = await trx
      .selectFrom("http_check_configs as c")
      .innerJoin("services as s", "s.key", "c.service_key")
      .select(["s.server_id", "s.id"])
      .where(`c.${columns[field]}`, "=", value)
      .where("c.service_key", "!=", key)
      .executeTakeFirst();
    if (other) throw new PingKeyTaken(name, `${other.server_id}/${other.id}`, field);
  }
  return keys;
}

/** A new push token as Uptime Kuma makes them: 32 letters and digits. */
function newPushToken(): string {
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // 248 is the largest multiple of 62 below 256: bytes above it are dropped, so every letter is as likely.
  let token = "";
  while (token.length < 32) for (const byte of randomBytes(48)) if (byte < 248 && token.length < 32) token += letters[byte % 62];
  return token;
}

/**
 * Write a kept service's check again; answers what changed, as the policy compares them (policy/change.ts
 * checkChange): the fields (its labels, name and tags, included) and whether its check did.
 */
async function rewriteService(
  trx: Db,
  key: number,
  name: string,
  service: ServiceDocument,
  labels: { renamed: boolean; retagged: boolean },
  now: number,
): Promise<{ fields: string[]; checkChanged: boolean }> {
  const before = await trx.deleteFrom("http_check_configs").where("service_key", "=", key).returningAll().executeTakeFirst();
  // Written again whole: the schema fills what the document leaves out, so compare what was stored.
  const keys = await keysFor(trx, key, name, service, before);
  const after = await trx.insertInto("http_check_configs").values(checkToRow(key, service.check, keys)).returningAll().executeTakeFirstOrThrow();
  const { fields, checkChanged } = checkChange(before && checkFromRow(before), checkFromRow(after), labels.renamed, labels.retagged);
  if (fields.length > 0) {
    await trx.updateTable("services").set({ name: service.name ?? service.id, tags: JSON.stringify(service.tags), updated_at: now }).where("key", "=", key).execute();
  }
  return { fields, checkChanged };
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

/**
 * A server's windows once `serviceId` is deleted: it leaves every list that names it, and a window that named
 * only it goes too (it would silence nothing, and the server's document would no longer validate).
 */
export function withoutService(windows: readonly MaintenanceWindow[], serviceId: string): MaintenanceWindow[] {
  return windows.flatMap((w) => {
    if (!w.services?.includes(serviceId)) return [w];
    const services = w.services.filter((id) => id !== serviceId);
    return services.length === 0 ? [] : [{ ...w, services }];
  });
}

/** 22 characters of a-z 0-9 (about 113 bits), as Healthchecks.io makes a project's ping key. */
export function serverPingKey(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let key = "";
  while (key.length < 22) for (const byte of randomBytes(32)) if (byte < 252 && key.length < 22) key += alphabet[byte % 36];
  return key;
}

/** A server's new ping key for its slug URLs (the old one stops working at once); undefined when there is no such server. */
export async function renewServerPingKey(trx: Db, serverId: string): Promise<string | undefined> {
  const pingKey = serverPingKey();
  const result = await trx.updateTable("servers").set({ ping_key: pingKey }).where("id", "=", serverId).executeTakeFirst();
  return Number(result.numUpdatedRows) === 0 ? undefined : pingKey;
}

/** A heartbeat's new ping key (the old one stops working at once); undefined when it has none (not a heartbeat). */
export async function renewPingKey(trx: Db, serviceKey: number): Promise<string | undefined> {
  const pingKey = randomUUID();
  const result = await trx.updateTable("http_check_configs").set({ ping_key: pingKey }).where("service_key", "=", serviceKey).where("type", "=", "heartbeat").executeTakeFirst();
  return Number(result.numUpdatedRows) === 0 ? undefined : pingKey;
}
