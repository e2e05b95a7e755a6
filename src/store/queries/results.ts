/**
 * Storing finished checks: the write path. One transaction per batch stores the entries, decides each
 * service's new state from the state it reads (the incident machine is pure; this feeds it and writes what
 * it returns), adds to the hourly rollups and queues the notifications. A handful of statements per batch,
 * whatever its size: the per-row cost is building values, not round trips.
 */
import type { Insertable, Kysely } from "kysely";
import { initialState, transition, type IncidentState } from "../../notify/incident.ts";
import { renderNotification } from "../../notify/message.ts";
import { hourMs, rollupDeltas } from "../../rollup/deltas.ts";
import { merge, type Sketch } from "../../rollup/sketch.ts";
import type { CheckRun, Engine, RecordedRun } from "../store.ts";
import type { HealthCheckDataEntriesTable, NotificationsTable, Tables } from "../tables.ts";
import { insertMany, type Columns } from "./bulk.ts";
import { entryFromRow, stateFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/** Rows per multi-row statement: far below SQLite's 32,766 and PostgreSQL's 65,535 parameters. */
const chunkSize = 1000;

export async function recordResults(trx: Db, engine: Engine, runs: readonly CheckRun[]): Promise<(RecordedRun | undefined)[]> {
  if (runs.length === 0) return [];
  const keys = [...new Set(runs.map((r) => r.serviceKey))].sort((a, b) => a - b);
  // The hour most of the batch falls in: its rollup rows are read with the states, in the same query.
  const hour = Math.floor(Math.max(...runs.map((r) => r.outcome.checkedAt)) / hourMs) * hourMs;
  const rows = await readServices(trx, engine, keys, hour);
  const services = new Map(
    rows.map((row) => {
      // A service checked for the first time has no state row yet.
      const state = row.status === null ? initialState : stateFromRow({ ...row, status: row.status, consecutive_failures: row.consecutive_failures ?? 0 });
      return [row.key, { row, state, lastEntryId: row.last_entry_id, lastCheckedAt: 0 }];
    }),
  );
  const rollups = new Map(rows.filter((r) => r.checks !== null).map((r) => [`${r.key}:${hour}`, r as RollupRow]));

  const entries: Insertable<HealthCheckDataEntriesTable>[] = [];
  const stored: { index: number; run: CheckRun }[] = [];
  const notifications: Insertable<NotificationsTable>[] = [];
  const recorded: ({ state: IncidentState; notify: RecordedRun["notify"] } | undefined)[] = [];
  for (const run of runs) {
    const service = services.get(run.serviceKey);
    if (!service) {
      recorded.push(undefined); // deleted while its check ran: the result has nowhere to go
      continue;
    }
    const { outcome } = run;
    const { row } = service;
    const before = service.state;
    const settings = { notify: Boolean(row.notify), notifyThreshold: row.notify_threshold };
    const { state, notify } = transition(before, { ok: outcome.ok, checkedAt: outcome.checkedAt, count: run.folded }, settings);
    service.state = state;
    service.lastCheckedAt = Math.max(service.lastCheckedAt, outcome.checkedAt);
    if (run.folded === undefined) {
      stored.push({ index: recorded.length, run });
      entries.push({
        service_key: run.serviceKey,
        checked_at: outcome.checkedAt,
        ok: outcome.ok,
        status: outcome.status,
        latency_ms: outcome.latencyMs,
        error_kind: outcome.errorKind,
        error: outcome.error,
        matched: outcome.matched,
      });
    }
    if (notify) {
      const subject = { serverId: row.server_id, serviceId: row.service_id, url: row.url };
      notifications.push({
        created_at: outcome.checkedAt,
        server_id: row.server_id,
        service_id: row.service_id,
        kind: notify,
        topic: row.notify_topic,
        message: JSON.stringify(renderNotification(notify, subject, outcome, before, state)),
        next_attempt_at: outcome.checkedAt,
      });
    }
    recorded.push({ state, notify });
  }

  const ids: number[] = [];
  for (let i = 0; i < entries.length; i += chunkSize) {
    // Both engines answer RETURNING rows of a multi-row VALUES insert in the order of the values.
    const rows = await insertMany(trx, engine, "health_check_data_entries", entryColumns, entries.slice(i, i + chunkSize)).returning("id").execute();
    ids.push(...rows.map((r) => r.id));
  }
  const result: (RecordedRun | undefined)[] = recorded.map((r) => r && { ...r, entry: null });
  stored.forEach(({ index, run }, i) => {
    const id = ids[i]!;
    services.get(run.serviceKey)!.lastEntryId = id;
    const o = run.outcome;
    result[index] = {
      ...recorded[index]!,
      entry: entryFromRow({ id, checked_at: o.checkedAt, ok: o.ok, status: o.status, latency_ms: o.latencyMs, error_kind: o.errorKind, error: o.error, matched: o.matched }),
    };
  });

  await writeStates(trx, engine, [...services.entries()].filter(([, s]) => s.lastCheckedAt > 0));
  await addRollups(trx, engine, stored.map(({ run }) => ({ serviceKey: run.serviceKey, checkedAt: run.outcome.checkedAt, result: run.outcome })), rollups);
  for (let i = 0; i < notifications.length; i += chunkSize) {
    await insertMany(trx, engine, "notifications", notificationColumns, notifications.slice(i, i + chunkSize)).execute();
  }
  return result;
}

/**
 * The services of a batch with their notify settings, their state, and their rollup of `hour`. On PostgreSQL
 * the services' rows are locked (FOR NO KEY UPDATE, which leaves foreign-key checks free): several nodes may
 * store results of one service at once (several locations), and each must decide from the other's outcome.
 */
async function readServices(trx: Db, engine: Engine, keys: number[], hour: number) {
  let query = trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .leftJoin("service_rollups as r", (join) => join.onRef("r.service_key", "=", "s.key").on("r.hour", "=", hour))
    .select(["s.key", "s.server_id", "s.id as service_id", "c.url", "c.notify", "c.notify_threshold", "c.notify_topic"])
    .select(["st.status", "st.consecutive_failures", "st.failing_since", "st.incident_open_since", "st.last_entry_id"])
    .select(["r.checks", "r.failures", "r.latency_sum", "r.sketch"])
    .where("s.key", "in", keys)
    .orderBy("s.key");
  if (engine === "postgres") query = query.forNoKeyUpdate(["s"]);
  return query.execute();
}

const entryColumns: Columns<"health_check_data_entries"> = [
  ["service_key", "bigint"], ["checked_at", "bigint"], ["ok", "boolean"], ["status", "integer"], ["latency_ms", "double precision"],
  ["error_kind", "text"], ["error", "text"], ["matched", "integer"],
];
const stateColumns: Columns<"service_states"> = [
  ["service_key", "bigint"], ["status", "text"], ["consecutive_failures", "integer"], ["last_checked_at", "bigint"],
  ["last_entry_id", "bigint"], ["incident_open_since", "bigint"], ["failing_since", "bigint"],
];
const rollupColumns: Columns<"service_rollups"> = [
  ["service_key", "bigint"], ["hour", "bigint"], ["checks", "integer"], ["failures", "integer"], ["latency_sum", "double precision"], ["sketch", "text"],
];
const notificationColumns: Columns<"notifications"> = [
  ["created_at", "bigint"], ["server_id", "text"], ["service_id", "text"], ["kind", "text"], ["topic", "text"], ["message", "text"],
  ["next_attempt_at", "bigint"],
];

type RollupRow = { checks: number; failures: number; latency_sum: number; sketch: string };

async function writeStates(
  trx: Db,
  engine: Engine,
  services: [number, { state: IncidentState; lastEntryId: number | null; lastCheckedAt: number }][],
): Promise<void> {
  for (let i = 0; i < services.length; i += chunkSize) {
    const values = services.slice(i, i + chunkSize).map(([key, s]) => ({
      service_key: key,
      status: s.state.status,
      consecutive_failures: s.state.consecutiveFailures,
      last_checked_at: s.lastCheckedAt,
      last_entry_id: s.lastEntryId,
      incident_open_since: s.state.incidentOpenSince,
      failing_since: s.state.failingSince,
    }));
    await insertMany(trx, engine, "service_states", stateColumns, values)
      .onConflict((oc) =>
        oc.column("service_key").doUpdateSet((eb) => ({
          status: eb.ref("excluded.status"),
          consecutive_failures: eb.ref("excluded.consecutive_failures"),
          last_checked_at: eb.ref("excluded.last_checked_at"),
          last_entry_id: eb.ref("excluded.last_entry_id"),
          incident_open_since: eb.ref("excluded.incident_open_since"),
          failing_since: eb.ref("excluded.failing_since"),
        })),
      )
      .execute();
  }
}

/**
 * Add a batch's checks to their services' hours. The hours' rows are read, merged and written whole; on
 * PostgreSQL the state rows locked above keep two nodes from merging the same service's hour at once.
 */
async function addRollups(trx: Db, engine: Engine, finished: Parameters<typeof rollupDeltas>[0], known: Map<string, RollupRow>): Promise<void> {
  const deltas = rollupDeltas(finished);
  if (deltas.length === 0) return;
  // Hours other than the one read with the states (a batch across an hour's end): read them now.
  const missing = deltas.filter((d) => !known.has(`${d.serviceKey}:${d.hour}`));
  if (missing.length > 0) {
    const rows = await trx
      .selectFrom("service_rollups")
      .selectAll()
      .where("service_key", "in", [...new Set(missing.map((d) => d.serviceKey))])
      .where("hour", "in", [...new Set(missing.map((d) => d.hour))])
      .execute();
    for (const r of rows) known.set(`${r.service_key}:${r.hour}`, r);
  }
  const values = deltas.map((d) => {
    const o = known.get(`${d.serviceKey}:${d.hour}`);
    return {
      service_key: d.serviceKey,
      hour: d.hour,
      checks: d.checks + (o?.checks ?? 0),
      failures: d.failures + (o?.failures ?? 0),
      latency_sum: d.latencySum + (o?.latency_sum ?? 0),
      sketch: JSON.stringify(o ? merge(JSON.parse(o.sketch) as Sketch, d.sketch) : d.sketch),
    };
  });
  for (let i = 0; i < values.length; i += chunkSize) {
    await insertMany(trx, engine, "service_rollups", rollupColumns, values.slice(i, i + chunkSize))
      .onConflict((oc) =>
        oc.columns(["service_key", "hour"]).doUpdateSet((eb) => ({
          checks: eb.ref("excluded.checks"),
          failures: eb.ref("excluded.failures"),
          latency_sum: eb.ref("excluded.latency_sum"),
          sketch: eb.ref("excluded.sketch"),
        })),
      )
      .execute();
  }
}
