/**
 * Storing finished checks: the write path. One transaction per batch stores the entries, decides each
 * service's new state from what it reads (its state, its settings, its silences and maintenance windows, the
 * incidents of the services it depends on: the incident machine is pure, this feeds it and writes what it
 * returns), records incidents, adds to the hourly rollups and queues the notifications. A handful of
 * statements per batch, whatever its size: the per-row cost is building values, not round trips.
 */
import { sql, type Kysely } from "kysely";
import type { Outcome } from "../../checks/http.ts";
import { verdict, verdictDue, type LocationResult } from "../../cluster/quorum.ts";
import { defaults } from "../../config.ts";
import type { ErrorKind } from "../../model.ts";
import { periodOf } from "../../scheduler/plan.ts";
import { blockers, qualify, type Upstream } from "../../alerting/dependencies.ts";
import { silencedAt, type SilenceSpan } from "../../alerting/silence.ts";
import { certWarning, initialState, transition, type IncidentState } from "../../notify/incident.ts";
import { renderCertWarning, renderNotification, type Judged } from "../../notify/message.ts";
import { hourMs, rollupDeltas } from "../../rollup/deltas.ts";
import { add, type Sketch } from "../../rollup/sketch.ts";
import type { MaintenanceWindow } from "../../schema.ts";
import { settleMs, type CheckRun, type Engine, type IncidentChange, type NotificationKind, type RecordedRun } from "../store.ts";
import type { Tables } from "../tables.ts";
import { bulkInsert, type BulkInsert } from "./bulk.ts";
import { entryFromRow, locationToRow, stateFromRow, type StateRow } from "./rows.ts";
import { upstreamOf } from "./servers.ts";

type Db = Kysely<Tables>;

const entries: BulkInsert<"health_check_data_entries"> = {
  table: "health_check_data_entries",
  columns: [
    ["service_key", "bigint"], ["checked_at", "bigint"], ["ok", "boolean"], ["status", "integer"], ["latency_ms", "double precision"],
    ["error_kind", "text"], ["error", "text"], ["matched", "integer"], ["location", "text"],
  ],
  returning: "id",
};
const stateColumns = [
  "status", "consecutive_failures", "consecutive_passes", "last_checked_at", "last_entry_id", "incident_open_since", "failing_since",
  "incident_id", "incident_failures", "down_sent", "last_reminded_at", "cert_warned_expiry", "last_verdict_at",
] as const;
const states: BulkInsert<"service_states"> = {
  table: "service_states",
  columns: [
    ["service_key", "bigint"], ["status", "text"], ["consecutive_failures", "integer"], ["consecutive_passes", "integer"],
    ["last_checked_at", "bigint"], ["last_entry_id", "bigint"], ["incident_open_since", "bigint"], ["failing_since", "bigint"],
    ["incident_id", "bigint"], ["incident_failures", "integer"], ["down_sent", "boolean"], ["last_reminded_at", "bigint"],
    ["cert_warned_expiry", "bigint"], ["last_verdict_at", "bigint"],
  ],
  upsert: { key: ["service_key"], update: stateColumns },
};
const locationResults: BulkInsert<"location_results"> = {
  table: "location_results",
  columns: [["service_key", "bigint"], ["location", "text"], ["checked_at", "bigint"], ["ok", "boolean"], ["error_kind", "text"], ["error", "text"]],
  upsert: { key: ["service_key", "location"], update: ["checked_at", "ok", "error_kind", "error"] },
};
const rollups: BulkInsert<"service_rollups"> = {
  table: "service_rollups",
  columns: [
    ["service_key", "bigint"], ["hour", "bigint"], ["checks", "integer"], ["failures", "integer"], ["latency_sum", "double precision"],
    ["sketch", "text"], ["silenced_checks", "integer"], ["silenced_failures", "integer"],
  ],
  upsert: { key: ["service_key", "hour"], update: ["checks", "failures", "latency_sum", "sketch", "silenced_checks", "silenced_failures"] },
};
const notifications: BulkInsert<"notifications"> = {
  table: "notifications",
  columns: [
    ["created_at", "bigint"], ["server_id", "text"], ["service_id", "text"], ["kind", "text"], ["topic", "text"], ["message", "text"],
    ["next_attempt_at", "bigint"], ["incident_id", "bigint"],
  ],
};

export type ServiceRow = Awaited<ReturnType<typeof readServices>>[number];
type Mutable<T, K extends keyof T> = Omit<T, K> & { -readonly [P in K]: T[P] };

/** What a batch decides for a service and keeps in its state row: where the next batch starts from. */
export interface Decided {
  state: IncidentState;
  lastEntryId: number | null;
  incidentId: number | null;
  incidentFailures: number;
  /** The open incident's first error. */
  incidentError: string | null;
  certWarnedExpiry: number | null;
  lastVerdictAt: number | null;
}

interface Working extends Decided {
  readonly row: ServiceRow;
  lastCheckedAt: number;
  /** With locations: each location's latest result. */
  readonly latest: Map<string, LocationResult>;
}

/**
 * A service as a batch left it, for the next batch to start from where the engine can tell that nothing else
 * changed it (see ServiceMemo): its row as read (its settings; its state columns are as of that read) and
 * what the batch decided.
 */
export interface LeftService {
  readonly row: ServiceRow;
  readonly decided: Decided;
}
export type LeftRollup = { readonly serviceKey: number; readonly hour: number; readonly row: RollupRow };
export interface Left {
  readonly services: readonly LeftService[];
  /** The rollup rows written. */
  readonly rollups: readonly LeftRollup[];
}

/** What a batch may start from instead of reading: services by key, and each one's latest rollup. */
export interface Remembered {
  readonly services: ReadonlyMap<number, LeftService>;
  readonly rollups: ReadonlyMap<number, LeftRollup>;
}

/** What a service's row read from the database says was decided for it. */
function decidedFromRow(row: ServiceRow): Decided {
  return {
    // A service checked for the first time has no state row yet; a state row's columns are all NOT NULL.
    state: row.status === null ? initialState : stateFromRow(row as ServiceRow & StateRow),
    lastEntryId: row.last_entry_id,
    incidentId: row.incident_id,
    incidentFailures: row.incident_failures ?? 0,
    incidentError: row.first_error,
    certWarnedExpiry: row.cert_warned_expiry,
    lastVerdictAt: row.last_verdict_at,
  };
}

export async function recordResults(
  trx: Db,
  engine: Engine,
  runs: readonly CheckRun[],
  remembered?: Remembered,
): Promise<{ recorded: (RecordedRun | undefined)[]; left: Left }> {
  if (runs.length === 0) return { recorded: [], left: { services: [], rollups: [] } };
  const keys = [...new Set(runs.map((r) => r.serviceKey))].sort((a, b) => a - b);
  const times = runs.map((r) => r.outcome.checkedAt);
  // The hour most of the batch falls in: its rollup rows are read with the states, in the same query.
  const hour = Math.floor(Math.max(...times) / hourMs) * hourMs;
  const unread = remembered ? keys.filter((key) => !remembered.services.has(key)) : keys;
  const read = unread.length > 0 ? await readServices(trx, engine, unread, hour) : [];
  const known = new Map(read.filter((r) => r.checks !== null).map((r) => [`${r.key}:${hour}`, r as RollupRow]));
  // One object literal, one shape: a spread made these objects slow to build and to read (profiled).
  const start = (row: ServiceRow, d: Decided): Working => ({
    row, state: d.state, lastEntryId: d.lastEntryId, incidentId: d.incidentId, incidentFailures: d.incidentFailures, incidentError: d.incidentError,
    certWarnedExpiry: d.certWarnedExpiry, lastVerdictAt: d.lastVerdictAt, lastCheckedAt: 0, latest: new Map(),
  });
  const services = new Map<number, Working>(read.map((row) => [row.key, start(row, decidedFromRow(row))]));
  for (const key of keys) {
    const left = remembered?.services.get(key);
    if (!left) continue;
    services.set(key, start(left.row, left.decided));
    const rollup = remembered?.rollups.get(key);
    if (rollup?.hour === hour) known.set(`${key}:${hour}`, rollup.row);
  }
  const rows = [...services.values()].map((s) => s.row);
  const silences = await readSilences(trx, [...new Set(rows.map((r) => r.server_id))], Math.min(...times), Math.max(...times));
  const blockedByOf = await readDependencies(trx, rows, services);
  await readLocationResults(trx, services);
  const locationRows = new Map<string, unknown[]>();

  const entryRows: unknown[][] = [];
  const stored: { index: number; run: CheckRun; silenced: boolean }[] = [];
  const queued: { service: Working; notice: NotificationKind; at: number; body: object; incidentId: number | null }[] = [];
  const recorded: (Mutable<RecordedRun, "entry"> | undefined)[] = [];
  for (const run of runs) {
    const service = services.get(run.serviceKey);
    if (!service) {
      recorded.push(undefined); // deleted while its check ran: the result has nowhere to go
      continue;
    }
    const { outcome: o } = run;
    const { row } = service;
    const silenced =
      Boolean(row.paused) || silencedAt(silences, JSON.parse(row.maintenance) as MaintenanceWindow[], { serverId: row.server_id, serviceId: row.service_id }, o.checkedAt);
    const blockedBy = blockedByOf(row.key);
    const before = service.state;
    const settings = {
      notify: Boolean(row.notify),
      notifyThreshold: row.notify_threshold,
      recoverThreshold: row.recover_threshold,
      remindEveryMinutes: row.remind_every_minutes,
    };
    const location = run.location ?? defaults.location;
    // What the incident machine judges: this result, or for a check with locations the verdict it calls for.
    let judged: Judged | undefined = o;
    if (row.locations !== null) {
      const listed = JSON.parse(row.locations) as string[];
      if (listed.includes(location)) {
        const latest: LocationResult = { location, checkedAt: o.checkedAt, ok: o.ok, errorKind: o.errorKind, error: o.error };
        service.latest.set(location, latest);
        locationRows.set(`${row.key}:${location}`, [row.key, location, o.checkedAt, o.ok, o.errorKind, o.error]);
      }
      judged = judge(service, listed, row, o);
    }
    const step = judged
      ? transition(before, { ok: judged.ok, checkedAt: o.checkedAt, count: run.folded }, settings, { silenced, blocked: blockedBy.length > 0 })
      : { state: before, notices: [], opened: false, closed: false };
    service.state = step.state;
    service.lastCheckedAt = Math.max(service.lastCheckedAt, o.checkedAt);
    // An incident's failures are those of the run that opened it, and every one while it stays open.
    if (step.opened) (service.incidentFailures = step.state.consecutiveFailures), (service.incidentError = judged!.error);
    else if (judged && !judged.ok && step.state.incidentOpenSince !== null) service.incidentFailures += run.folded ?? 1;
    const subject = { serverId: row.server_id, serviceId: row.service_id, url: row.url };
    const notices: NotificationKind[] = [...step.notices];
    if (step.opened) service.incidentId = await openIncident(trx, row, o.checkedAt, judged!.error, step.state.downSent);
    else if (step.notices.includes("down") && service.incidentId !== null) await markNotified(trx, service.incidentId);
    for (const notice of step.notices) {
      const body = renderNotification(notice, subject, judged!, before, step.state, service.incidentFailures);
      queued.push({ service, notice, at: o.checkedAt, body, incidentId: service.incidentId });
    }
    if (step.closed && service.incidentId !== null) {
      await closeIncident(trx, service.incidentId, o.checkedAt, service.incidentFailures);
    }
    const cert = certWarning(service.certWarnedExpiry, o.certExpiresAt, row.cert_warn_days, o.checkedAt);
    if (cert.warn && !silenced) {
      service.certWarnedExpiry = cert.warnedExpiry;
      notices.push("cert");
      queued.push({ service, notice: "cert", at: o.checkedAt, body: renderCertWarning(subject, o.certExpiresAt!, o.checkedAt, row.cert_warn_days!), incidentId: null });
    }
    if (run.folded === undefined) {
      stored.push({ index: recorded.length, run, silenced });
      entryRows.push([run.serviceKey, o.checkedAt, o.ok, o.status, o.latencyMs, o.errorKind, o.error, o.matched, locationToRow(location)]);
    }
    const incident: IncidentChange | null =
      (step.opened || step.closed) && service.incidentId !== null
        ? {
            id: service.incidentId,
            opened: step.opened,
            closed: step.closed,
            openedAt: (step.opened ? step.state : before).incidentOpenSince!,
            closedAt: step.closed ? o.checkedAt : null,
            error: service.incidentError,
            failures: service.incidentFailures,
          }
        : null;
    if (step.closed) (service.incidentId = null), (service.incidentFailures = 0), (service.incidentError = null);
    recorded.push({
      entry: null,
      state: step.state,
      notify: step.notices.find((n): n is "down" | "recovered" => n !== "reminder") ?? null,
      notices,
      incident,
      silenced,
      blockedBy,
    });
  }

  const ids = await bulkInsert<"health_check_data_entries", { id: number }>(trx, engine, entries, entryRows);
  stored.forEach(({ index, run }, i) => {
    const id = ids[i]!.id;
    services.get(run.serviceKey)!.lastEntryId = id;
    const o = run.outcome;
    recorded[index]!.entry = entryFromRow({
      id, checked_at: o.checkedAt, ok: o.ok, status: o.status, latency_ms: o.latencyMs, error_kind: o.errorKind, error: o.error, matched: o.matched,
      location: locationToRow(run.location ?? defaults.location),
    });
  });

  const changed = [...services.values()].filter((s) => s.lastCheckedAt > 0);
  const stateRows = changed.map((s) => [
    s.row.key, s.state.status, s.state.consecutiveFailures, s.state.consecutivePasses, s.lastCheckedAt, s.lastEntryId, s.state.incidentOpenSince,
    s.state.failingSince, s.incidentId, s.incidentFailures, s.state.downSent, s.state.lastRemindedAt, s.certWarnedExpiry, s.lastVerdictAt,
  ]);
  await bulkInsert(trx, engine, states, stateRows);
  await bulkInsert(trx, engine, locationResults, [...locationRows.values()]);
  const rollupsLeft = await addRollups(
    trx,
    engine,
    stored.map(({ run, silenced }) => ({ serviceKey: run.serviceKey, checkedAt: run.outcome.checkedAt, result: run.outcome, silenced })),
    known,
  );
  const notificationRows = queued.map(({ service, notice, at, body, incidentId }) => [
    at, service.row.server_id, service.row.service_id, notice, service.row.notify_topic, JSON.stringify(body), at, incidentId,
  ]);
  await bulkInsert(trx, engine, notifications, notificationRows);
  const left = changed.map(({ row, state, lastEntryId, incidentId, incidentFailures, incidentError, certWarnedExpiry, lastVerdictAt }) => ({
    row,
    decided: { state, lastEntryId, incidentId, incidentFailures, incidentError, certWarnedExpiry, lastVerdictAt },
  }));
  return { recorded, left: { services: left, rollups: rollupsLeft } };
}

/**
 * The services of a batch with their settings, their state, their server's maintenance windows, and their
 * rollup of `hour`. On PostgreSQL the services' rows are locked (FOR NO KEY UPDATE, which leaves foreign-key
 * checks free): several nodes may store results of one service at once (several locations), and each must
 * decide from the other's outcome.
 */
async function readServices(trx: Db, engine: Engine, keys: number[], hour: number) {
  const query = trx
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .leftJoin("incidents as i", "i.id", "st.incident_id")
    .leftJoin("service_rollups as r", (join) => join.onRef("r.service_key", "=", "s.key").on("r.hour", "=", hour))
    .select(["s.key", "s.server_id", "s.id as service_id", "srv.maintenance", "c.url", "c.notify", "c.notify_threshold", "c.notify_topic"])
    .select(["c.paused", "c.recover_threshold", "c.remind_every_minutes", "c.cert_warn_days", "c.depends_on"])
    .select(["c.locations", "c.quorum", "c.interval_seconds", "c.cron", "st.last_verdict_at"])
    .select(["st.status", "st.consecutive_failures", "st.consecutive_passes", "st.failing_since", "st.incident_open_since", "st.last_entry_id"])
    .select(["st.incident_id", "st.incident_failures", "st.down_sent", "st.last_reminded_at", "st.cert_warned_expiry", "i.first_error"])
    .select(["r.checks", "r.failures", "r.latency_sum", "r.sketch", "r.silenced_checks", "r.silenced_failures"])
    .where(keyIn(engine, "s.key", keys))
    .orderBy("s.key");
  if (engine === "postgres") {
    // Lock first, read after: a SELECT ... FOR UPDATE that waits for another transaction's lock re-reads only
    // the locked rows when it gets it, and would join them with the state as it was before that transaction.
    await trx.selectFrom("services").select("key").where(keyIn(engine, "key", keys)).orderBy("key").forNoKeyUpdate().execute();
  }
  return query.execute();
}

/**
 * `column IN (keys)`. PostgreSQL gets the keys as one array parameter (= ANY): a list of 500 parameters cost
 * it more to parse, bind and plan than the read itself (profiled: the batch's two reads took 15.7 ms).
 */
function keyIn(engine: Engine, column: "s.key" | "key", keys: readonly number[]) {
  return engine === "postgres" ? sql<boolean>`${sql.ref(column)} = any(${keys}::bigint[])` : sql<boolean>`${sql.ref(column)} in (${sql.join(keys)})`;
}

/**
 * For a check with locations, the verdict a result calls for, as the outcome the incident machine judges (a
 * failing verdict speaks with its newest failing location's error); undefined when no verdict is due yet.
 */
function judge(service: Working, listed: readonly string[], row: ServiceRow, o: Outcome): Judged | undefined {
  const intervalMs = periodOf({ intervalSeconds: row.interval_seconds, cron: row.cron }, o.checkedAt);
  if (!verdictDue(service.lastVerdictAt, o.checkedAt, intervalMs)) return undefined;
  service.lastVerdictAt = o.checkedAt;
  const v = verdict(listed, row.quorum, service.latest, o.checkedAt, intervalMs);
  if (!v.failing) return { ok: true, checkedAt: o.checkedAt, errorKind: null, error: null };
  const first = v.failures[0]!;
  const error = `${v.failures.length} of ${listed.length} locations fail; ${first.location}: ${first.error}`;
  return { ok: false, checkedAt: o.checkedAt, errorKind: first.errorKind, error };
}

/** The latest result of each location, for the services of the batch that run in several. */
async function readLocationResults(trx: Db, services: ReadonlyMap<number, Working>): Promise<void> {
  const keys = [...services.values()].filter((s) => s.row.locations !== null).map((s) => s.row.key);
  if (keys.length === 0) return;
  const rows = await trx.selectFrom("location_results").selectAll().where("service_key", "in", keys).execute();
  for (const r of rows) {
    services.get(r.service_key)!.latest.set(r.location, {
      location: r.location,
      checkedAt: r.checked_at,
      ok: Boolean(r.ok),
      errorKind: r.error_kind as ErrorKind | null,
      error: r.error,
    });
  }
}

async function readSilences(trx: Db, servers: string[], from: number, until: number): Promise<SilenceSpan[]> {
  if (servers.length === 0) return [];
  const rows = await trx
    .selectFrom("silences")
    .select(["server_id", "service_id", "starts_at", "ends_at"])
    .where("server_id", "in", servers)
    .where("starts_at", "<=", until)
    .where("ends_at", ">", from)
    .execute();
  return rows.map((r) => ({ serverId: r.server_id, serviceId: r.service_id, startsAt: r.starts_at, endsAt: r.ends_at }));
}

/**
 * What blocks a service of the batch: the services upstream of it with an open incident (see blockers()),
 * read from the store, and from this batch's working state for the services in it (a result earlier in the
 * batch may have opened or closed an incident).
 */
async function readDependencies(trx: Db, rows: readonly ServiceRow[], batch: ReadonlyMap<number, Working>) {
  const dependsOn = new Map(rows.map((r) => [r.key, (JSON.parse(r.depends_on) as string[]).map((ref) => qualify(ref, r.server_id))]));
  const refs = [...dependsOn.values()].flat();
  const stored = refs.length === 0 ? new Map<string, Upstream>() : await upstreamOf(trx, refs);
  const inBatch = new Map(rows.map((r) => [`${r.server_id}/${r.service_id}`, r.key]));
  const upstream = (name: string): Upstream | undefined => {
    const found = stored.get(name);
    const working = batch.get(inBatch.get(name) ?? -1);
    if (!found || !working) return found;
    return { ...found, incidentOpen: working.state.incidentOpenSince !== null, failing: working.state.status === "down" };
  };
  return (serviceKey: number): string[] => blockers(dependsOn.get(serviceKey) ?? [], upstream);
}

async function openIncident(trx: Db, row: ServiceRow, at: number, error: string | null, notified: boolean): Promise<number> {
  const { id } = await trx
    .insertInto("incidents")
    .values({ service_key: row.key, server_id: row.server_id, service_id: row.service_id, opened_at: at, failures: 0, first_error: error, notified })
    .returning("id")
    .executeTakeFirstOrThrow();
  return id;
}

async function markNotified(trx: Db, incidentId: number): Promise<void> {
  await trx.updateTable("incidents").set({ notified: true }).where("id", "=", incidentId).execute();
}

async function closeIncident(trx: Db, incidentId: number, at: number, failures: number): Promise<void> {
  await trx.updateTable("incidents").set({ closed_at: at, failures }).where("id", "=", incidentId).execute();
}

type RollupRow = { checks: number; failures: number; latency_sum: number; sketch: string; silenced_checks: number; silenced_failures: number };

/**
 * Add a batch's checks to their services' hours. The hours' rows are read, merged and written whole; on
 * PostgreSQL the services' rows locked above keep two nodes from merging the same service's hour at once.
 */
async function addRollups(
  trx: Db,
  engine: Engine,
  finished: readonly { serviceKey: number; checkedAt: number; result: { ok: boolean; latencyMs: number }; silenced: boolean }[],
  known: Map<string, RollupRow>,
): Promise<LeftRollup[]> {
  const deltas = rollupDeltas(finished);
  if (deltas.length === 0) return [];
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
  const merged = deltas.map((d): LeftRollup => {
    const o = known.get(`${d.serviceKey}:${d.hour}`);
    const sketch: Sketch = o ? JSON.parse(o.sketch) : {};
    for (const latency of d.latencies) add(sketch, latency);
    const row = {
      checks: d.checks + (o?.checks ?? 0),
      failures: d.failures + (o?.failures ?? 0),
      latency_sum: d.latencySum + (o?.latency_sum ?? 0),
      sketch: JSON.stringify(sketch),
      silenced_checks: d.silencedChecks + (o?.silenced_checks ?? 0),
      silenced_failures: d.silencedFailures + (o?.silenced_failures ?? 0),
    };
    return { serviceKey: d.serviceKey, hour: d.hour, row };
  });
  const rows = merged.map(({ serviceKey, hour, row: r }) => [
    serviceKey, hour, r.checks, r.failures, r.latency_sum, r.sketch, r.silenced_checks, r.silenced_failures,
  ]);
  await bulkInsert(trx, engine, rollups, rows);
  // Results added to a settled hour: whoever keeps past hours in memory must read them again.
  const settled = Math.floor((Date.now() - settleMs) / hourMs) * hourMs;
  if (deltas.some((d) => d.hour < settled)) {
    await trx.updateTable("rollup_revisions").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  }
  return merged;
}
