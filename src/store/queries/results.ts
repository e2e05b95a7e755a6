/**
 * Storing finished checks: the write path's reads and writes. A batch's transaction reads what the policy
 * needs to decide about it (readBatch: each service's settings and progress, its locations' latest results,
 * the silences, the services upstream, the rollups of the batch's hours), and writes what it decided
 * (writeDecision: entries, states, incidents, rollups, notifications). Nothing here decides anything. A handful
 * of statements per batch, whatever its size: the per-row cost is building values, not round trips.
 */
import { type Kysely } from "kysely";
import { type EntryFields, type Rollup } from "../../domain/model.ts";
import {
  runAt,
  type BatchDecision,
  type BatchFacts,
  type CheckRun,
  type IncidentChange,
  type LocationResult,
  type NotificationWrite,
  type ServiceFacts,
  type ServiceProgress,
  type ServiceRecord,
  type SilenceSpan,
} from "../../domain/batch.ts";
import type { Backend } from "../backend.ts";
import type { RecordedRun } from "../store.ts";
import type { Tables } from "../tables.ts";
import type { BulkInsert } from "./bulk.ts";
import { compiledOnce } from "./compiled.ts";
import { locationToRow, progressFromRow, recordFromRow, rollupFromRow, rollupToRow, type ServiceRow } from "./rows.ts";
import { upstreamOf } from "./servers.ts";
import { registrationExpiries } from "./domains.ts";
import { locationResults } from "./status.ts";
import { readRoutes } from "./channels.ts";
import type { Routes } from "../../domain/notification.ts";
import { randomUUID } from "node:crypto";

type Db = Kysely<Tables>;
const hourMs = 3_600_000;

const entries: BulkInsert<"health_check_data_entries"> = {
  table: "health_check_data_entries",
  columns: [
    ["service_key", "bigint"], ["checked_at", "bigint"], ["ok", "boolean"], ["status", "integer"], ["latency_ms", "double precision"],
    ["error_kind", "text"], ["error", "text"], ["matched", "integer"], ["location", "text"], ["type", "text"], ["kind", "text"],
    ["exit_code", "integer"], ["duration_ms", "double precision"], ["body", "text"], ["answers", "text"],
    ["method", "text"], ["user_agent", "text"], ["remote_addr", "text"], ["scheme", "text"], ["rid", "text"],
  ],
  returning: "id",
};
const stateColumns = [
  "status", "consecutive_failures", "consecutive_passes", "last_checked_at", "last_entry_id", "incident_open_since", "failing_since",
  "incident_id", "incident_failures", "down_sent", "last_reminded_at", "cert_warned_expiry", "last_verdict_at", "last_ping_at", "open_runs",
  "last_duration_ms", "last_finish_at", "missed_due_at", "slow_streak", "slow_sent",
  "domain_warned_expiry", "overdue_runs",
] as const;
const states: BulkInsert<"service_states"> = {
  table: "service_states",
  columns: [
    ["service_key", "bigint"], ["status", "text"], ["consecutive_failures", "integer"], ["consecutive_passes", "integer"],
    ["last_checked_at", "bigint"], ["last_entry_id", "bigint"], ["incident_open_since", "bigint"], ["failing_since", "bigint"],
    ["incident_id", "bigint"], ["incident_failures", "integer"], ["down_sent", "boolean"], ["last_reminded_at", "bigint"],
    ["cert_warned_expiry", "bigint"], ["last_verdict_at", "bigint"], ["last_ping_at", "bigint"], ["open_runs", "text"],
    ["last_duration_ms", "double precision"], ["last_finish_at", "bigint"], ["missed_due_at", "bigint"], ["slow_streak", "integer"],
    ["slow_sent", "boolean"], ["domain_warned_expiry", "bigint"], ["overdue_runs", "text"],
  ],
  upsert: { key: ["service_key"], update: stateColumns },
};
const latestResults: BulkInsert<"location_results"> = {
  table: "location_results",
  columns: [["service_key", "bigint"], ["location", "text"], ["checked_at", "bigint"], ["ok", "boolean"], ["error_kind", "text"], ["error", "text"]],
  upsert: { key: ["service_key", "location"], update: ["checked_at", "ok", "error_kind", "error"] },
};
const rollups: BulkInsert<"service_rollups"> = {
  table: "service_rollups",
  columns: [
    ["service_key", "bigint"], ["hour", "bigint"], ["checks", "integer"], ["failures", "integer"], ["latency_sum", "double precision"],
    ["sketch", "text"], ["silenced_checks", "integer"], ["silenced_failures", "integer"], ["slow_checks", "integer"],
  ],
  upsert: { key: ["service_key", "hour"], update: ["checks", "failures", "latency_sum", "sketch", "silenced_checks", "silenced_failures", "slow_checks"] },
};
const notifications: BulkInsert<"notifications"> = {
  table: "notifications",
  columns: [
    ["created_at", "bigint"], ["server_id", "text"], ["service_id", "text"], ["kind", "text"], ["topic", "text"], ["message", "text"],
    ["next_attempt_at", "bigint"], ["incident_id", "bigint"], ["channel", "text"], ["event", "text"],
  ],
};

/** A service as a batch left it: its settings and progress, and the id of its last entry. */
export interface LeftService {
  readonly record: ServiceRecord;
  readonly progress: ServiceProgress;
  readonly lastEntryId: number | null;
}
export type LeftRollup = { readonly serviceKey: number; readonly hour: number; readonly rollup: Rollup };
/** What a batch leaves for the next one to start from (see ServiceMemo). */
export interface Left {
  readonly services: readonly LeftService[];
  /** The rollups written. */
  readonly rollups: readonly LeftRollup[];
  readonly routes: Routes;
  /** Every server's silences that had not ended at `from`, when the batch read them all (see readBatch). */
  readonly silences?: SilencesSince | undefined;
}

/** Every server's silences that had not ended at `from`, by server. */
export interface SilencesSince {
  readonly from: number;
  readonly byServer: ReadonlyMap<string, readonly SilenceSpan[]>;
}

/** What a batch may start from instead of reading: services by key, and each one's latest rollup. */
export interface Remembered {
  readonly services: ReadonlyMap<number, LeftService>;
  readonly rollups: ReadonlyMap<number, LeftRollup>;
  readonly routes?: Routes | undefined;
  readonly silences?: SilencesSince | undefined;
}

/** A batch's facts as the policy takes them, with the ids of the services' last entries, which it does not need. */
export interface ReadBatch {
  readonly facts: BatchFacts;
  readonly lastEntryIds: ReadonlyMap<number, number | null>;
  /** Every server's silences, when the batch had a memo to keep them in. */
  readonly silencesSince?: SilencesSince | undefined;
}

export async function readBatch(trx: Db, backend: Backend, runs: readonly CheckRun[], remembered?: Remembered): Promise<ReadBatch> {
  const keys = [...new Set(runs.map((r) => r.serviceKey))].sort((a, b) => a - b);
  const times = runs.map(runAt);
  // The hour most of the batch falls in: its rollup rows are read with the states, in the same query.
  const hour = hourOf(Math.max(...times));
  const unread = remembered ? keys.filter((key) => !remembered.services.has(key)) : keys;
  const read = unread.length > 0 ? await readServices(trx, backend, unread, hour) : [];
  const { services, stored, known, lastEntryIds } = servicesOf(read, keys, hour, remembered);
  // Hours other than the one read with the states (a batch across an hour's end, results kept through an
  // outage), and a remembered service's rollup of that hour when the memo does not hold it.
  const missing = runs.filter((r) => services.has(r.serviceKey) && (hourOf(runAt(r)) !== hour || !known.has(r.serviceKey)));
  if (missing.length > 0) await readRollups(trx, missing, stored);
  const records = [...services.values()].map((s) => s.record);
  const servers = [...new Set(records.map((r) => r.serverId))];
  const from = Math.min(...times);
  // With a memo (one writer), every server's silences are read once and kept until something writes: a
  // silence written moves the change mark. The policy looks at each one's span, so one ended since is harmless.
  let kept = remembered?.silences;
  if (remembered && !(kept && kept.from <= from)) kept = await silencesSince(trx, backend, from);
  const silences = kept ? servers.flatMap((server) => kept.byServer.get(server) ?? []) : await readSilences(trx, servers, from, Math.max(...times));
  const upstream = await upstreamOf(trx, records.flatMap((r) => r.dependsOn));
  const latest = await locationResults(trx, records.filter((r) => r.locations !== null).map((r) => r.key));
  const domains = await registrationExpiries(trx, [...new Set(records.flatMap((r) => (r.domainWarnDays !== null && r.domain !== null ? [r.domain] : [])))]);
  const routes = remembered?.routes ?? (await readRoutes(trx, backend));
  const none = new Map();
  const facts = new Map<number, ServiceFacts>();
  for (const [key, s] of services) facts.set(key, { latest: latest.get(key) ?? none, ...s }); // added before the spread: see checks/http.ts's send
  return { facts: { runs, services: facts, silences, upstream, rollups: stored, domains, routes }, lastEntryIds, silencesSince: kept };
}

/**
 * A batch's services, from the rows read and from what the last batch left, with their rollups of `hour` by
 * "key:hour", the services whose rollup of `hour` is known (a row read without one says there is none: a
 * service's first check of the hour, a heartbeat's lone deadline, needs no second read), and the ids of their
 * last entries. (Apart from readBatch, which sequences the reads: see writeDecision for why.)
 */
function servicesOf(read: readonly ServiceRow[], keys: readonly number[], hour: number, remembered: Remembered | undefined) {
  const stored = new Map<string, Rollup>();
  const known = new Set<number>();
  const services = new Map<number, { record: ServiceRecord; progress: ServiceProgress }>();
  const lastEntryIds = new Map<number, number | null>();
  for (const row of read) {
    services.set(row.key, { record: recordFromRow(row), progress: progressFromRow(row) });
    lastEntryIds.set(row.key, row.last_entry_id);
    known.add(row.key);
    if (row.checks !== null) stored.set(`${row.key}:${hour}`, rollupFromRow(row as Parameters<typeof rollupFromRow>[0]));
  }
  for (const key of keys) {
    const left = remembered?.services.get(key);
    if (!left) continue;
    services.set(key, { record: left.record, progress: left.progress });
    lastEntryIds.set(key, left.lastEntryId);
    const rollup = remembered?.rollups.get(key);
    if (rollup?.hour !== hour) continue;
    known.add(key);
    stored.set(`${key}:${hour}`, rollup.rollup);
  }
  return { services, stored, known, lastEntryIds };
}

/** The rollups of the hours of `runs`, into `stored` by "key:hour". */
async function readRollups(trx: Db, runs: readonly CheckRun[], stored: Map<string, Rollup>): Promise<void> {
  const found = await trx
    .selectFrom("service_rollups")
    .selectAll()
    .where("service_key", "in", [...new Set(runs.map((r) => r.serviceKey))])
    .where("hour", "in", [...new Set(runs.map((r) => hourOf(runAt(r))))])
    .execute();
  for (const r of found) stored.set(`${r.service_key}:${r.hour}`, rollupFromRow(r));
}

const hourOf = (at: number) => Math.floor(at / hourMs) * hourMs;

/**
 * Write what the policy decided about a batch. Answers one element per run, in order (undefined for a run
 * whose service is gone), and what the batch leaves for the next one.
 *
 * It runs once a batch, not once a check: it only sequences the statements, and the rows are built by the
 * small functions below it. (Kept short because V8 compiles an async function whole, every await in it: at
 * 2,347 bytes of bytecode this one was the largest compile of a daemon's first minutes at 100 services, 48 ms
 * for a function that runs once a batch, twice in five seconds there; measured with --trace-opt,
 * docs/benchmarks.md.)
 */
export async function writeDecision(
  trx: Db,
  backend: Backend,
  batch: ReadBatch,
  decision: BatchDecision,
): Promise<{ recorded: (RecordedRun | undefined)[]; left: Left }> {
  // Incidents the batch opened get their ids first: everything else names them.
  const idOf = decision.incidents.length === 0 ? sameId : await writeIncidents(trx, backend, decision.incidents);
  const stored = storedEntries(batch.facts.runs, decision);
  const entryIds = await backend.bulkInsert<"health_check_data_entries", { id: number }>(trx, entries, stored.map(entryRow));
  const lastEntryIds = new Map(batch.lastEntryIds);
  stored.forEach(({ serviceKey }, i) => lastEntryIds.set(serviceKey, entryIds[i]!.id));
  const { stateRows, left } = progressOf(batch, decision, lastEntryIds, idOf);
  await backend.bulkInsert(trx, states, stateRows);
  await backend.bulkInsert(trx, latestResults, [...decision.locationResults.values()].map(locationResultRow));
  await backend.bulkInsert(trx, rollups, decision.rollups.map(({ serviceKey, hour, rollup }) => rollupToRow(serviceKey, hour, rollup)));
  await backend.bulkInsert(trx, notifications, notificationRows(decision.notifications, idOf));
  if (decision.settledHourChanged) {
    await trx.updateTable("rollup_revisions").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  }
  return { recorded: recordedRuns(decision, entryIds, idOf), left: { services: left, rollups: decision.rollups, routes: batch.facts.routes, silences: batch.silencesSince } };
}

/** An incident's id as stored: the policy names the incidents a batch opens by negative ids until they are. */
type IdOf = (id: number | null) => number | null;
const sameId: IdOf = (id) => id;

/** Open, mark notified and close incidents; answers how to name them (the ids the opened ones got). */
async function writeIncidents(trx: Db, backend: Backend, writes: BatchDecision["incidents"]): Promise<IdOf> {
  const ids = new Map<number, number>();
  const idOf: IdOf = (id) => (id !== null && id < 0 ? ids.get(id)! : id);
  for (const write of writes) {
    if (write.kind === "open") {
      const { rows } = await openIncident(trx, backend, write.serviceKey, write.serverId, write.serviceId, write.startedAt, write.openedAt, write.firstError, write.notified);
      ids.set(write.id, rows[0]!.id);
    } else if (write.kind === "notified") await notifiedIncident(trx, backend, idOf(write.id)!);
    else await closeIncident(trx, backend, idOf(write.id)!, write.closedAt, write.failures);
  }
  return idOf;
}

const openIncident = compiledOnce(
  (db: Db, _backend: Backend, serviceKey: number, serverId: string, serviceId: string, startedAt: number, openedAt: number, firstError: string | null, notified: boolean) =>
    db
      .insertInto("incidents")
      .values({ service_key: serviceKey, server_id: serverId, service_id: serviceId, started_at: startedAt, opened_at: openedAt, failures: 0, first_error: firstError, notified })
      .returning("id"),
);
const notifiedIncident = compiledOnce((db: Db, _backend: Backend, id: number) => db.updateTable("incidents").set({ notified: true }).where("id", "=", id));
const closeIncident = compiledOnce((db: Db, _backend: Backend, id: number, closedAt: number, failures: number) =>
  db.updateTable("incidents").set({ closed_at: closedAt, failures }).where("id", "=", id),
);

type StoredEntry = { readonly serviceKey: number; readonly entry: EntryFields };

const storedEntries = (runs: readonly CheckRun[], decision: BatchDecision): StoredEntry[] =>
  decision.runs.flatMap((d, i) => (d?.entry ? [{ serviceKey: runs[i]!.serviceKey, entry: d.entry }] : []));

const entryRow = ({ serviceKey, entry: e }: StoredEntry): unknown[] => [
  serviceKey, e.checkedAt, e.ok, e.status, e.latencyMs, e.errorKind, e.error, e.matched, locationToRow(e.location), e.type === "http" ? null : e.type,
  e.kind, e.exitCode, e.durationMs, e.body, e.answers === null ? null : JSON.stringify(e.answers),
  e.method, e.userAgent, e.remoteAddr, e.scheme, e.rid,
];

/** Each service's progress as decided, as state rows and as what the batch leaves for the next one. */
function progressOf(batch: ReadBatch, decision: BatchDecision, lastEntryIds: ReadonlyMap<number, number | null>, idOf: IdOf) {
  const left: LeftService[] = [];
  const stateRows: unknown[][] = [];
  for (const [key, decided] of decision.services) {
    const progress = decided.incidentId !== null && decided.incidentId < 0 ? { ...decided, incidentId: idOf(decided.incidentId) } : decided;
    const lastEntryId = lastEntryIds.get(key) ?? null;
    stateRows.push(stateRow(key, progress, lastEntryId));
    left.push({ record: batch.facts.services.get(key)!.record, progress, lastEntryId });
  }
  return { stateRows, left };
}

function stateRow(key: number, progress: ServiceProgress, lastEntryId: number | null): unknown[] {
  const s = progress.state;
  const openRuns = Object.keys(progress.openRuns).length === 0 ? null : JSON.stringify(progress.openRuns);
  const overdueRuns = Object.keys(progress.overdueRuns ?? {}).length === 0 ? null : JSON.stringify(progress.overdueRuns);
  return [
    key, s.status, s.consecutiveFailures, s.consecutivePasses, progress.lastCheckedAt, lastEntryId, s.incidentOpenSince, s.failingSince,
    progress.incidentId, progress.incidentFailures, s.downSent, s.lastRemindedAt, progress.certWarnedExpiry, progress.lastVerdictAt,
    progress.lastPingAt, openRuns, progress.lastDurationMs, progress.lastFinishAt, progress.missedDueAt, progress.slowStreak, progress.slowSent,
    progress.domainWarnedExpiry, overdueRuns,
  ];
}

const locationResultRow = (r: LocationResult & { readonly serviceKey: number }): unknown[] => [r.serviceKey, r.location, r.checkedAt, r.ok, r.errorKind, r.error];

/** Add notifications the policy decided outside a batch (an acknowledgement's, an escalation's) to the outbox. */
export async function insertNotifications(trx: Db, backend: Backend, writes: readonly NotificationWrite[]): Promise<void> {
  await backend.bulkInsert(trx, notifications, notificationRows(writes, sameId));
}

/** One row per channel: each is delivered on its own. They share the event, whose id is the idempotency key. */
function notificationRows(writes: readonly NotificationWrite[], idOf: IdOf): unknown[][] {
  return writes.flatMap((n) => {
    const body = JSON.stringify(n.body);
    const event = JSON.stringify({ id: randomUUID(), ...n.event, incidentId: idOf(n.incidentId) });
    return n.channels.map((channel) => [n.at, n.serverId, n.serviceId, n.kind, n.topic, body, n.at, idOf(n.incidentId), channel, event]);
  });
}

function recordedRuns(decision: BatchDecision, entryIds: readonly { id: number }[], idOf: IdOf): (RecordedRun | undefined)[] {
  let next = 0;
  return decision.runs.map((d): RecordedRun | undefined => {
    if (!d) return undefined;
    const entry = d.entry ? { id: entryIds[next++]!.id, ...d.entry } : null; // added before the spread: see checks/http.ts's send
    const incident: IncidentChange | null = d.incident && { ...d.incident, id: idOf(d.incident.id)! };
    return { entry, state: d.state, notices: d.notices, incident, silenced: d.silenced, blockedBy: d.blockedBy, wakeAt: d.wakeAt };
  });
}

/**
 * The services of a batch with their settings, their state, their server's maintenance windows, and their
 * rollup of `hour`. On PostgreSQL the services' rows are locked first: several nodes may store results of
 * one service at once (several locations), and each must decide from the other's outcome.
 */
async function readServices(trx: Db, backend: Backend, keys: number[], hour: number): Promise<ServiceRow[]> {
  await backend.lockServices(trx, keys);
  return (await servicesRead(trx, backend, keys, hour)).rows;
}

const servicesRead = compiledOnce((db: Db, backend: Backend, keys: readonly number[], hour: number) =>
  db
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .leftJoin("incidents as i", "i.id", "st.incident_id")
    .leftJoin("service_rollups as r", (join) => join.onRef("r.service_key", "=", "s.key").on("r.hour", "=", hour))
    .select(["s.key", "s.server_id", "s.id as service_id", "s.updated_at", "srv.maintenance", "c.type", "c.probe", "c.url", "c.notify"])
    .select(["srv.name as server_name", "s.name as service_name", "srv.channels as server_channels", "c.channels"])
    .select(["c.notify_threshold", "c.notify_topic"])
    .select(["c.paused", "c.recover_threshold", "c.remind_every_minutes", "c.cert_warn_days", "c.depends_on", "c.slow_ms", "c.notify_slow"])
    .select(["c.domain_warn_days", "c.domain", "st.domain_warned_expiry"])
    .select(["c.locations", "c.quorum", "c.interval_seconds", "c.cron", "st.last_verdict_at", "st.last_checked_at"])
    .select(["st.last_ping_at", "st.open_runs", "st.last_duration_ms", "st.last_finish_at", "st.missed_due_at", "st.slow_streak", "st.slow_sent", "st.overdue_runs"])
    .select(["st.status", "st.consecutive_failures", "st.consecutive_passes", "st.failing_since", "st.incident_open_since", "st.last_entry_id"])
    .select(["st.incident_id", "st.incident_failures", "st.down_sent", "st.last_reminded_at", "st.cert_warned_expiry", "i.first_error", "i.started_at", "i.acked_at", "i.escalated_to"])
    .select(["r.checks", "r.failures", "r.latency_sum", "r.sketch", "r.silenced_checks", "r.silenced_failures", "r.slow_checks"])
    .where(backend.keyIn("s.key", keys))
    .orderBy("s.key"),
);

async function silencesSince(trx: Db, backend: Backend, from: number): Promise<SilencesSince> {
  const { rows } = await silencesFrom(trx, backend, from);
  const byServer = new Map<string, SilenceSpan[]>();
  for (const r of rows) {
    const span = { serverId: r.server_id, serviceId: r.service_id, startsAt: r.starts_at, endsAt: r.ends_at };
    const spans = byServer.get(r.server_id);
    if (spans) spans.push(span);
    else byServer.set(r.server_id, [span]);
  }
  return { from, byServer };
}

const silencesFrom = compiledOnce((db: Db, _backend: Backend, from: number) =>
  db.selectFrom("silences").select(["server_id", "service_id", "starts_at", "ends_at"]).where("ends_at", ">", from),
);

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
