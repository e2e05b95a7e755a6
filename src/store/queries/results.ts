/**
 * Storing finished checks: the write path. One transaction per batch stores the entries, decides each
 * service's new state from the state it reads (the incident machine is pure; this feeds it and writes what
 * it returns), adds to the hourly rollups and queues the notifications. A handful of statements per batch,
 * whatever its size: the per-row cost is building values, not round trips.
 */
import type { Kysely } from "kysely";
import { initialState, transition, type IncidentState } from "../../notify/incident.ts";
import { renderNotification } from "../../notify/message.ts";
import { hourMs, rollupDeltas } from "../../rollup/deltas.ts";
import { merge, type Sketch } from "../../rollup/sketch.ts";
import { settleMs, type CheckRun, type Engine, type RecordedRun } from "../store.ts";
import type { Tables } from "../tables.ts";
import { bulkInsert, type BulkInsert } from "./bulk.ts";
import { entryFromRow, stateFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/** Rows per multi-row statement: far below SQLite's 32,766 and PostgreSQL's 65,535 parameters. */
const chunkSize = 1000;

const entries: BulkInsert<"health_check_data_entries"> = {
  table: "health_check_data_entries",
  columns: [
    ["service_key", "bigint"], ["checked_at", "bigint"], ["ok", "boolean"], ["status", "integer"], ["latency_ms", "double precision"],
    ["error_kind", "text"], ["error", "text"], ["matched", "integer"],
  ],
  returning: "id",
};
const states: BulkInsert<"service_states"> = {
  table: "service_states",
  columns: [
    ["service_key", "bigint"], ["status", "text"], ["consecutive_failures", "integer"], ["last_checked_at", "bigint"],
    ["last_entry_id", "bigint"], ["incident_open_since", "bigint"], ["failing_since", "bigint"],
  ],
  upsert: {
    key: ["service_key"],
    update: ["status", "consecutive_failures", "last_checked_at", "last_entry_id", "incident_open_since", "failing_since"],
  },
};
const rollups: BulkInsert<"service_rollups"> = {
  table: "service_rollups",
  columns: [
    ["service_key", "bigint"], ["hour", "bigint"], ["checks", "integer"], ["failures", "integer"], ["latency_sum", "double precision"],
    ["sketch", "text"],
  ],
  upsert: { key: ["service_key", "hour"], update: ["checks", "failures", "latency_sum", "sketch"] },
};
const notifications: BulkInsert<"notifications"> = {
  table: "notifications",
  columns: [
    ["created_at", "bigint"], ["server_id", "text"], ["service_id", "text"], ["kind", "text"], ["topic", "text"], ["message", "text"],
    ["next_attempt_at", "bigint"],
  ],
};

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
  const known = new Map(rows.filter((r) => r.checks !== null).map((r) => [`${r.key}:${hour}`, r as RollupRow]));

  const entryRows: unknown[][] = [];
  const stored: { index: number; run: CheckRun }[] = [];
  const notificationRows: unknown[][] = [];
  const recorded: ({ state: IncidentState; notify: RecordedRun["notify"] } | undefined)[] = [];
  for (const run of runs) {
    const service = services.get(run.serviceKey);
    if (!service) {
      recorded.push(undefined); // deleted while its check ran: the result has nowhere to go
      continue;
    }
    const { outcome: o } = run;
    const { row } = service;
    const before = service.state;
    const settings = { notify: Boolean(row.notify), notifyThreshold: row.notify_threshold };
    const { state, notify } = transition(before, { ok: o.ok, checkedAt: o.checkedAt, count: run.folded }, settings);
    service.state = state;
    service.lastCheckedAt = Math.max(service.lastCheckedAt, o.checkedAt);
    if (run.folded === undefined) {
      stored.push({ index: recorded.length, run });
      entryRows.push([run.serviceKey, o.checkedAt, o.ok, o.status, o.latencyMs, o.errorKind, o.error, o.matched]);
    }
    if (notify) {
      const message = renderNotification(notify, { serverId: row.server_id, serviceId: row.service_id, url: row.url }, o, before, state);
      notificationRows.push([o.checkedAt, row.server_id, row.service_id, notify, row.notify_topic, JSON.stringify(message), o.checkedAt]);
    }
    recorded.push({ state, notify });
  }

  const ids: number[] = [];
  for (let i = 0; i < entryRows.length; i += chunkSize) {
    // Both engines answer the RETURNING rows of a multi-row insert in the order of its rows.
    const returned = await bulkInsert<"health_check_data_entries", { id: number }>(trx, engine, entries, entryRows.slice(i, i + chunkSize));
    for (const r of returned) ids.push(r.id);
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

  const stateRows = [...services]
    .filter(([, s]) => s.lastCheckedAt > 0)
    .map(([key, s]) => [key, s.state.status, s.state.consecutiveFailures, s.lastCheckedAt, s.lastEntryId, s.state.incidentOpenSince, s.state.failingSince]);
  for (let i = 0; i < stateRows.length; i += chunkSize) await bulkInsert(trx, engine, states, stateRows.slice(i, i + chunkSize));
  await addRollups(trx, engine, stored.map(({ run }) => ({ serviceKey: run.serviceKey, checkedAt: run.outcome.checkedAt, result: run.outcome })), known);
  for (let i = 0; i < notificationRows.length; i += chunkSize) await bulkInsert(trx, engine, notifications, notificationRows.slice(i, i + chunkSize));
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

type RollupRow = { checks: number; failures: number; latency_sum: number; sketch: string };

/**
 * Add a batch's checks to their services' hours. The hours' rows are read, merged and written whole; on
 * PostgreSQL the services' rows locked above keep two nodes from merging the same service's hour at once.
 */
async function addRollups(trx: Db, engine: Engine, finished: Parameters<typeof rollupDeltas>[0], known: Map<string, RollupRow>): Promise<void> {
  const deltas = rollupDeltas(finished);
  if (deltas.length === 0) return;
  // Hours other than the one read with the states (a batch across an hour's end): read them now.
  const missing = deltas.filter((d) => !known.has(`${d.serviceKey}:${d.hour}`));
  if (missing.length > 0) {
    const found = await trx
      .selectFrom("service_rollups")
      .selectAll()
      .where("service_key", "in", [...new Set(missing.map((d) => d.serviceKey))])
      .where("hour", "in", [...new Set(missing.map((d) => d.hour))])
      .execute();
    for (const r of found) known.set(`${r.service_key}:${r.hour}`, r);
  }
  const rows = deltas.map((d) => {
    const o = known.get(`${d.serviceKey}:${d.hour}`);
    const sketch = JSON.stringify(o ? merge(JSON.parse(o.sketch) as Sketch, d.sketch) : d.sketch);
    return [d.serviceKey, d.hour, d.checks + (o?.checks ?? 0), d.failures + (o?.failures ?? 0), d.latencySum + (o?.latency_sum ?? 0), sketch];
  });
  for (let i = 0; i < rows.length; i += chunkSize) await bulkInsert(trx, engine, rollups, rows.slice(i, i + chunkSize));
  // Results added to a settled hour: whoever keeps past hours in memory must read them again.
  const settled = Math.floor((Date.now() - settleMs) / hourMs) * hourMs;
  if (deltas.some((d) => d.hour < settled)) {
    await trx.updateTable("rollup_revisions").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  }
}
