/**
 * Servers, their services and their checks: what PUT, GET and DELETE on /services read and write.
 */
import type { Check, Entry, ServerDocument, ServiceState } from "../model.ts";
import { unknownState } from "../model.ts";
import type { Store } from "./db.ts";
import { entryFromRow } from "./entries.ts";
import type { HttpCheckConfigsTable } from "./tables.ts";
import type { Selectable } from "kysely";

export interface ServerSummary {
  readonly id: string;
  readonly name: string;
  readonly serviceCount: number;
  readonly up: number;
  readonly down: number;
  readonly unknown: number;
}

export interface ServiceView {
  readonly id: string;
  readonly name: string;
  readonly check: Check & { notify: boolean; notifyThreshold: number };
  readonly state: ServiceState;
}

export interface ServerView {
  readonly id: string;
  readonly name: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly services: readonly ServiceView[];
}

/** A service whose check the scheduler runs. */
export interface ScheduledService {
  readonly key: number;
  readonly serverId: string;
  readonly serviceId: string;
  readonly check: Check & { notify: boolean; notifyThreshold: number };
  /** Identifies the check's configuration: equal fingerprints mean an unchanged check. */
  readonly fingerprint: string;
}

/** What a write changed, for the scheduler: services to (re)start and services to stop. */
export interface ScheduleChange {
  readonly started: readonly number[];
  readonly stopped: readonly number[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export function listServers(store: Store): ServerSummary[] {
  const { db } = store;
  const rows = store.all(
    db
      .selectFrom("servers")
      .leftJoin("services", "services.server_id", "servers.id")
      .leftJoin("service_states", "service_states.service_key", "services.key")
      .select(({ fn, eb }) => [
        "servers.id",
        "servers.name",
        fn.count<number>("services.key").as("serviceCount"),
        fn.count<number>(eb.case().when("service_states.status", "=", "up").then(1).end()).as("up"),
        fn.count<number>(eb.case().when("service_states.status", "=", "down").then(1).end()).as("down"),
      ])
      .groupBy("servers.id")
      .orderBy("servers.id"),
  );
  return rows.map((r) => ({ ...r, unknown: r.serviceCount - r.up - r.down }));
}

export function getServer(store: Store, serverId: string): ServerView | undefined {
  const { db } = store;
  const server = store.get(db.selectFrom("servers").selectAll().where("id", "=", serverId));
  if (!server) return undefined;
  const rows = store.all(
    db
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
      ])
      .where("services.server_id", "=", serverId)
      .orderBy("services.key"),
  );
  return {
    id: server.id,
    name: server.name,
    createdAt: iso(server.created_at),
    updatedAt: iso(server.updated_at),
    services: rows.map((r) => {
      const lastEntry: Entry | null =
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
            });
      const state: ServiceState =
        r.status === null
          ? unknownState
          : {
              status: r.status,
              consecutiveFailures: r.consecutive_failures ?? 0,
              lastCheckedAt: r.last_checked_at === null ? null : iso(r.last_checked_at),
              lastEntry,
              incidentOpenSince: r.incident_open_since === null ? null : iso(r.incident_open_since),
            };
      return { id: r.service_id, name: r.service_name, check: checkFromRow(r), state };
    }),
  };
}

/**
 * Make the stored server exactly `doc`: create or update its services, delete the ones the document leaves
 * out (their entries and state go with them by cascade). One transaction; a service whose check did not change
 * keeps its row, its state and its entries.
 */
export function putServer(
  store: Store,
  serverId: string,
  doc: ServerDocument,
  now: number,
): { created: boolean; changed: boolean; schedule: ScheduleChange } {
  const { db } = store;
  return store.transaction(() => {
    const existing = store.get(db.selectFrom("servers").selectAll().where("id", "=", serverId));
    const name = doc.name ?? serverId;
    if (!existing) {
      store.run(db.insertInto("servers").values({ id: serverId, name, created_at: now, updated_at: now }));
    }
    let changed = !existing || existing.name !== name;
    const current = store.all(
      db.selectFrom("services").select(["key", "id", "name"]).where("server_id", "=", serverId),
    );
    const byId = new Map(current.map((s) => [s.id, s]));
    const started: number[] = [];
    const stopped: number[] = [];

    const wanted = new Set(doc.services.map((s) => s.id));
    for (const old of current) {
      if (wanted.has(old.id)) continue;
      store.run(db.deleteFrom("services").where("key", "=", old.key));
      stopped.push(old.key);
      changed = true;
    }

    for (const service of doc.services) {
      const serviceName = service.name ?? service.id;
      const old = byId.get(service.id);
      if (!old) {
        const inserted = store.get(
          db
            .insertInto("services")
            .values({ server_id: serverId, id: service.id, name: serviceName, created_at: now, updated_at: now })
            .returning("key"),
        )!;
        writeCheck(store, inserted.key, service.check);
        started.push(inserted.key);
        changed = true;
        continue;
      }
      const before = readCheckRow(store, old.key);
      store.run(db.deleteFrom("http_check_configs").where("service_key", "=", old.key));
      writeCheck(store, old.key, service.check);
      // The schema supplies the notify defaults, so compare what was stored, not what was sent.
      const checkChanged = !before || fingerprint(before) !== fingerprint(readCheckRow(store, old.key)!);
      if (checkChanged) started.push(old.key);
      if (checkChanged || old.name !== serviceName) {
        store.run(db.updateTable("services").set({ name: serviceName, updated_at: now }).where("key", "=", old.key));
        changed = true;
      }
    }
    if (existing && changed) {
      store.run(db.updateTable("servers").set({ name, updated_at: now }).where("id", "=", serverId));
    }
    return { created: !existing, changed, schedule: { started, stopped } };
  });
}

/** Delete a server and, by cascade, everything of it. Answers the keys of the services that stop, or undefined. */
export function deleteServer(store: Store, serverId: string): ScheduleChange | undefined {
  const { db } = store;
  return store.transaction(() => {
    const keys = store.all(db.selectFrom("services").select("key").where("server_id", "=", serverId));
    const deleted = store.run(db.deleteFrom("servers").where("id", "=", serverId));
    if (deleted === 0) return undefined;
    return { started: [], stopped: keys.map((k) => k.key) };
  });
}

export function deleteService(store: Store, serverId: string, serviceId: string, now: number): ScheduleChange | undefined {
  const { db } = store;
  return store.transaction(() => {
    const service = findService(store, serverId, serviceId);
    if (!service) return undefined;
    store.run(db.deleteFrom("services").where("key", "=", service.key));
    store.run(db.updateTable("servers").set({ updated_at: now }).where("id", "=", serverId));
    return { started: [], stopped: [service.key] };
  });
}

export function findService(store: Store, serverId: string, serviceId: string): { key: number } | undefined {
  const { db } = store;
  return store.get(
    db.selectFrom("services").select("key").where("server_id", "=", serverId).where("id", "=", serviceId),
  );
}

export function serverExists(store: Store, serverId: string): boolean {
  return store.get(store.db.selectFrom("servers").select("id").where("id", "=", serverId)) !== undefined;
}

/** The checks to schedule: all of them, or those of some services. */
export function scheduledServices(store: Store, keys?: readonly number[]): ScheduledService[] {
  const { db } = store;
  let query = db
    .selectFrom("services")
    .innerJoin("http_check_configs as c", "c.service_key", "services.key")
    .selectAll("c")
    .select(["services.server_id", "services.id as service_id"]);
  if (keys) {
    if (keys.length === 0) return [];
    query = query.where("services.key", "in", keys);
  }
  return store.all(query).map((r) => ({
    key: r.service_key,
    serverId: r.server_id,
    serviceId: r.service_id,
    check: checkFromRow(r),
    fingerprint: fingerprint(r),
  }));
}

type CheckRow = Selectable<HttpCheckConfigsTable>;

function readCheckRow(store: Store, key: number): CheckRow | undefined {
  return store.get(store.db.selectFrom("http_check_configs").selectAll().where("service_key", "=", key));
}

function writeCheck(store: Store, key: number, check: Check): void {
  store.run(
    store.db.insertInto("http_check_configs").values({
      service_key: key,
      url: check.url,
      method: check.method,
      headers: JSON.stringify(check.headers),
      body: check.body,
      interval_seconds: check.intervalSeconds,
      cron: check.cron,
      timeout_ms: check.timeoutMs,
      follow_redirects: Number(check.followRedirects),
      verify_tls: Number(check.verifyTls),
      expect: JSON.stringify(check.expect),
      // Absent means "the schema's default": leave the column out of the insert.
      ...(check.notify === undefined ? {} : { notify: Number(check.notify) }),
      ...(check.notifyThreshold === undefined ? {} : { notify_threshold: check.notifyThreshold }),
      notify_topic: check.notifyTopic,
    }),
  );
}

function fingerprint(row: CheckRow): string {
  const { service_key: _key, ...config } = row;
  return JSON.stringify(config);
}

function checkFromRow(row: CheckRow): ScheduledService["check"] {
  return {
    url: row.url,
    method: row.method as Check["method"],
    headers: JSON.parse(row.headers) as Record<string, string>,
    body: row.body,
    intervalSeconds: row.interval_seconds,
    cron: row.cron,
    timeoutMs: row.timeout_ms,
    followRedirects: row.follow_redirects === 1,
    verifyTls: row.verify_tls === 1,
    expect: JSON.parse(row.expect) as Check["expect"],
    notify: row.notify === 1,
    notifyThreshold: row.notify_threshold,
    notifyTopic: row.notify_topic,
  };
}
