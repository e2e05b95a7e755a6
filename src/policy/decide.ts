/**
 * The decision about a batch of results: pure, and the one place where healthd decides what a result means.
 * Given what the transaction read (each service's settings and progress, its locations' latest results, the
 * silences, the services upstream of it, the rollups of the batch's hours) and the time, it says what to
 * write: each result's entry, each service's new progress, the incidents opened and closed, the notifications
 * with their text, the rollups, and whether a settled hour changed. Its parts: quorum.ts (several locations),
 * incident.ts (the incident machine), silence.ts, dependencies.ts, message.ts (what a notification says),
 * rollup.ts. The store reads the facts and writes the decision in one transaction, so the database stays the
 * authority and several nodes agree.
 */
import {
  defaultLocation,
  type EntryFields,
  type NotificationKind,
} from "../domain/model.ts";
import {
  runAt,
  type BatchDecision,
  type BatchFacts,
  type ResultRun,
  type ServiceRecord,
  type IncidentChange,
  type IncidentWrite,
  type LocationResult,
  type NotificationWrite,
  type RunDecision,
  type ServiceFacts,
  type ServiceProgress,
  type Upstream,
} from "../domain/batch.ts";
import { periodOf } from "../domain/schedule.ts";
import { blockers } from "./dependencies.ts";
import { heartbeatStep, nextLook } from "./heartbeat.ts";
import { certWarning, transition } from "./incident.ts";
import { alsoTo } from "./escalation.ts";
import { renderCertWarning, renderDomainWarning, renderNormal, renderNotification, renderSlow, type Judged } from "./message.ts";
import { verdict, verdictDue } from "./quorum.ts";
import { eventOf, route, type Moment } from "./route.ts";
import { addToRollups, hourMs, settleMs, type Finished } from "./rollup.ts";
import { silencedAt } from "./silence.ts";

/** A service while the batch goes through its results. */
interface Working {
  readonly facts: ServiceFacts;
  progress: { -readonly [K in keyof ServiceProgress]: ServiceProgress[K] };
  /** The latest result of each location; null without locations. */
  readonly latest: Map<string, LocationResult> | null;
  /** The latest time of its results in this batch; 0 while it has none. */
  checkedAt: number;
}

export function decide(facts: BatchFacts, now: number): BatchDecision {
  // Each service's progress (and, with locations, its latest results) is copied once: the facts stay as read,
  // and the copy is what the decision answers. Nothing else per service is allocated: this runs for every result.
  const services = new Map<number, Working>();
  for (const [key, f] of facts.services) {
    services.set(key, { facts: f, progress: { ...f.progress }, latest: f.record.locations ? new Map(f.latest) : null, checkedAt: 0 });
  }
  // Incidents this batch opens are named below zero until the store gives them their ids.
  let opened = 0;
  const incidents: IncidentWrite[] = [];
  const notifications: NotificationWrite[] = [];
  const locationResults = new Map<string, LocationResult & { serviceKey: number }>();
  const finished: Finished[] = [];
  let byName: Map<string, Working> | undefined;
  // What the services upstream say of themselves: as stored, or as this batch has left them so far.
  const upstream = (name: string): Upstream | undefined => {
    const stored = facts.upstream.get(name);
    if (!stored) return undefined;
    byName ??= new Map([...services.values()].map((s) => [`${s.facts.record.serverId}/${s.facts.record.serviceId}`, s]));
    const working = byName.get(name);
    if (!working) return stored;
    return { ...stored, incidentOpen: working.progress.state.incidentOpenSince !== null, failing: working.progress.state.status === "down" };
  };

  const notify = (record: ServiceRecord, at: number, kind: NotificationKind, body: NotificationWrite["body"], incidentId: number | null, moment?: Moment, escalatedTo?: readonly string[]) => {
    const event = eventOf(kind, record, at, body, incidentId, moment);
    const channels = alsoTo(route(record.channels, event.event, facts.routes), escalatedTo, event.event, facts.routes);
    notifications.push({ at, serverId: record.serverId, serviceId: record.serviceId, kind, topic: record.notifyTopic, body, incidentId, event, channels });
  };

  const runs = facts.runs.map((run): RunDecision | undefined => {
    const service = services.get(run.serviceKey);
    if (!service) return undefined; // deleted while its check ran: the result has nowhere to go
    const { record } = service.facts;
    const at = runAt(run);
    const p = service.progress;
    const silenced = record.paused || silencedAt(facts.silences, record.maintenance, record, at);
    // Warnings (CERT, DOMAIN, SLOW and its NORMAL) go out as DOWNs do: not while silenced, never with notify off.
    const quiet = silenced || !record.notify;
    const blockedBy = blockers(record.dependsOn, upstream);
    const before = p.state;
    // What the run says: the entry it stores, and the result the incident machine judges (if it is one).
    let entry: EntryFields | null = null;
    let judged: Judged | undefined;
    if (run.kind === undefined) {
      judged = judge(service, run);
      if (run.folded === undefined) entry = entryOf(record, run);
    } else if (record.heartbeat) {
      const beat = heartbeatStep(record.heartbeat, p, run);
      Object.assign(p, beat.progress);
      judged = beat.judged ?? undefined;
      // The fields added go before the spread, as in checks/http.ts's send: after it, every entry a hidden class.
      if (beat.entry) entry = { type: record.type, location: run.kind === "ping" ? (run.location ?? defaultLocation) : defaultLocation, ...beat.entry };
    }
    const step = judged
      ? transition(before, { ok: judged.ok, checkedAt: at, count: run.kind === undefined ? run.folded : undefined }, record, { silenced, blocked: blockedBy.length > 0, acknowledged: (p.incidentAckedAt ?? null) !== null })
      : { state: before, notices: [], opened: false, closed: false };
    p.state = step.state;
    if (entry || judged) service.checkedAt = Math.max(service.checkedAt, at);
    const count = run.kind === undefined ? (run.folded ?? 1) : 1;
    // An incident's failures are those of the run that opened it, and every one while it stays open. It starts
    // at the first of them: decided here, once, and stored with it; every surface reads it from there.
    if (step.opened) {
      p.incidentFailures = step.state.consecutiveFailures;
      p.incidentError = judged!.error;
      p.incidentStartedAt = step.state.failingSince ?? at;
      p.incidentId = --opened;
      incidents.push({
        kind: "open", id: p.incidentId, serviceKey: record.key, serverId: record.serverId, serviceId: record.serviceId,
        startedAt: p.incidentStartedAt, openedAt: at, firstError: judged!.error, notified: step.state.downSent,
      });
    } else {
      if (judged && !judged.ok && step.state.incidentOpenSince !== null) p.incidentFailures += count;
      if (step.notices.includes("down") && p.incidentId !== null) incidents.push({ kind: "notified", id: p.incidentId });
    }
    let notices: readonly NotificationKind[] = step.notices;
    for (const notice of step.notices) {
      // Every notice is of an open incident (or the one this run closes): its start is stored with it.
      const startedAt = p.incidentStartedAt ?? before.failingSince ?? at;
      const body = renderNotification(notice, record, judged!, before, step.state, p.incidentFailures, startedAt);
      notify(record, at, notice, body, p.incidentId, { judged: judged!, before, after: step.state, startedAt }, notice === "recovered" ? p.incidentEscalatedTo : undefined);
    }
    if (step.closed && p.incidentId !== null) incidents.push({ kind: "close", id: p.incidentId, closedAt: at, failures: p.incidentFailures });
    const slow = run.kind === undefined && isSlow(record, run.outcome);
    if (run.kind === undefined) {
      const warned = warnings(p, record, run, facts.domains, quiet);
      for (const w of warned) notify(record, at, w.kind, w.body, null);
      if (warned.length > 0) notices = [...notices, ...warned.map((w) => w.kind)];
    }
    // Uptime counts results: a check's, or a heartbeat's finished run or missed ping (not a start, a log).
    if (entry && judged) finished.push({ serviceKey: record.key, checkedAt: at, ok: entry.ok, latencyMs: entry.latencyMs, silenced, slow });
    const incident: IncidentChange | null =
      (step.opened || step.closed) && p.incidentId !== null
        ? {
            id: p.incidentId,
            opened: step.opened,
            closed: step.closed,
            startedAt: p.incidentStartedAt ?? (step.opened ? step.state : before).incidentOpenSince!,
            openedAt: (step.opened ? step.state : before).incidentOpenSince!,
            closedAt: step.closed ? at : null,
            error: p.incidentError,
            failures: p.incidentFailures,
          }
        : null;
    if (step.closed) (p.incidentId = null), (p.incidentFailures = 0), (p.incidentError = null), (p.incidentStartedAt = null), (p.incidentAckedAt = null), (p.incidentEscalatedTo = undefined);
    if (run.kind === undefined) {
      const location = run.location ?? defaultLocation;
      const o = run.outcome;
      if (record.locations?.includes(location)) {
        locationResults.set(`${record.key}:${location}`, { serviceKey: record.key, location, checkedAt: o.checkedAt, ok: o.ok, errorKind: o.errorKind, error: o.error });
      }
    }
    return { entry, state: step.state, notices, incident, silenced, blockedBy, wakeAt: record.heartbeat ? nextLook(record.heartbeat, p) : undefined };
  });

  const changed = new Map<number, ServiceProgress>();
  for (const [key, s] of services) if (s.checkedAt > 0) (s.progress.lastCheckedAt = s.checkedAt), changed.set(key, s.progress);
  const settled = Math.floor((now - settleMs) / hourMs) * hourMs;
  return {
    runs,
    services: changed,
    locationResults,
    incidents,
    notifications,
    rollups: addToRollups(finished, facts.rollups),
    settledHourChanged: finished.some((f) => Math.floor(f.checkedAt / hourMs) * hourMs < settled),
  };
}

/** A check's result that passed, slower than its slowMs: the service is degraded (still up). */
const isSlow = (record: ServiceRecord, o: ResultRun["outcome"]) => o.ok && record.slowMs !== null && o.latencyMs > record.slowMs;

/**
 * The warnings a check's result calls for beside its incident, updating the progress: SLOW after
 * notifyThreshold slow passes in a row (none while an incident is open) and NORMAL at the first pass back
 * under slowMs; CERT and DOMAIN once per expiry date. A failure is DOWN's business: it ends a slow streak.
 * `quiet`: silenced, or notify off: the progress moves on, nothing is said.
 */
function warnings(
  p: Working["progress"],
  record: ServiceRecord,
  run: ResultRun,
  domains: ReadonlyMap<string, number>,
  quiet: boolean,
): { kind: NotificationKind; body: NotificationWrite["body"] }[] {
  const o = run.outcome;
  const said: { kind: NotificationKind; body: NotificationWrite["body"] }[] = [];
  // Folded runs (kept through a store outage) count for the incident only.
  if (run.folded === undefined) {
    if (isSlow(record, o)) {
      p.slowStreak += 1;
      if (record.notifySlow && !p.slowSent && !quiet && p.state.incidentOpenSince === null && p.slowStreak >= Math.max(1, record.notifyThreshold)) {
        p.slowSent = true;
        said.push({ kind: "slow", body: renderSlow(record, o, p.slowStreak, record.slowMs!) });
      }
    } else {
      if (o.ok && p.slowSent && !quiet) said.push({ kind: "normal", body: renderNormal(record, o, p.slowStreak, record.slowMs ?? 0) });
      p.slowStreak = 0;
      p.slowSent = false;
    }
  }
  const cert = certWarning(p.certWarnedExpiry, o.certExpiresAt, record.certWarnDays, o.checkedAt);
  if (cert.warn && !quiet) {
    p.certWarnedExpiry = cert.warnedExpiry;
    said.push({ kind: "cert", body: renderCertWarning(record, o.certExpiresAt!, o.checkedAt, record.certWarnDays!) });
  }
  // The registration of its domain, as RDAP last told it (domains/watcher.ts keeps it in the database).
  const registration = record.domain === null ? undefined : domains.get(record.domain);
  const domain = certWarning(p.domainWarnedExpiry, registration, record.domainWarnDays, o.checkedAt);
  if (domain.warn && !quiet) {
    p.domainWarnedExpiry = domain.warnedExpiry;
    said.push({ kind: "domain", body: renderDomainWarning(record, record.domain!, registration!, o.checkedAt, record.domainWarnDays!) });
  }
  return said;
}

/**
 * What the incident machine judges: the result itself, or for a check with locations the verdict it calls for
 * (a failing verdict speaks with its newest failing location's error); undefined when no verdict is due yet.
 */
function judge(service: Working, run: ResultRun): Judged | undefined {
  const { record } = service.facts;
  const o = run.outcome;
  const { latest } = service;
  if (record.locations === null || latest === null) return o;
  const location = run.location ?? defaultLocation;
  if (record.locations.includes(location)) {
    latest.set(location, { location, checkedAt: o.checkedAt, ok: o.ok, errorKind: o.errorKind, error: o.error });
  }
  const intervalMs = periodOf(record, o.checkedAt);
  if (!verdictDue(service.progress.lastVerdictAt, o.checkedAt, intervalMs)) return undefined;
  service.progress.lastVerdictAt = o.checkedAt;
  const v = verdict(record.locations, record.quorum, latest, o.checkedAt, intervalMs);
  if (!v.failing) return { ok: true, checkedAt: o.checkedAt, errorKind: null, error: null };
  const first = v.failures[0]!;
  const error = `${v.failures.length} of ${record.locations.length} locations fail; ${first.location}: ${first.error}`;
  return { ok: false, checkedAt: o.checkedAt, errorKind: first.errorKind, error };
}

/** What a check's result stores as its entry. */
function entryOf(record: ServiceRecord, run: ResultRun): EntryFields {
  const o = run.outcome;
  return {
    checkedAt: o.checkedAt, ok: o.ok, status: o.status, latencyMs: o.latencyMs, errorKind: o.errorKind, error: o.error, matched: o.matched,
    location: run.location ?? defaultLocation, type: record.type, kind: null, exitCode: null, durationMs: null, body: null, answers: o.answers ?? null,
    method: null, userAgent: null, remoteAddr: null, scheme: null, rid: null,
  };
}
