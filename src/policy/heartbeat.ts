/**
 * A heartbeat's part of the decision: what a ping means, and what healthd finds at a deadline. Pure.
 * - A success (or exit code 0) is a passing result and a fail (or another exit code) a failing one, judged by
 *   the incident machine as any check's result; a run that finishes sooner than minRunSeconds after its start
 *   fails too (too-short). Each sets the next deadline: a period after it, or the next cron time after it.
 * - A start records a run going; a log, its text. Neither is a result, nor a ping that says the job is alive
 *   (lastPingAt), as Healthchecks.io's last_ping is not.
 * - A finish ends the run its rid names; one without a rid, the latest going. A failure whose rid names none
 *   ends the latest going too (without a duration: which run failed is not known), so no too-long follows it.
 * - At a deadline: past the due time and its grace without a ping, a missed result, and the next due time a
 *   period on (so another each further period); else a run going for longer than maxRunSeconds (or its grace)
 *   is a too-long result, and is no longer a run going; it is kept aside (overdueRuns) until it finishes, so
 *   that a finish still pairs with it and its entry carries its duration, start to finish.
 * Only what happened is kept (the last finish, the last period found missed, the runs going); the due time and
 * the next deadline follow from it and the timing as it is now, so a changed period or cron applies at once.
 * Before its first finish, a heartbeat's first due time counts from its creation or its last change.
 */
import type { EntryFields, HeartbeatCheck } from "../domain/model.ts";
import type { HeartbeatTiming, PingRun, DeadlineRun } from "../domain/batch.ts";
import type { HeartbeatProgress } from "../domain/model.ts";
import { cronOf } from "../domain/schedule.ts";
import { duration, lastLines, type Judged } from "./message.ts";

/** Runs going at most; a job that only ever starts forgets its oldest. */
const maxOpenRuns = 100;

export interface HeartbeatStep {
  /** The entry to store, if any. */
  readonly entry: Omit<EntryFields, "location" | "type"> | null;
  /** The result the incident machine judges, if the step is one. */
  readonly judged: Judged | null;
  /** The progress the step leaves. */
  readonly progress: HeartbeatProgress;
}

/** A heartbeat check's timing, with the time its first due time counts from. */
export function timingOf(check: HeartbeatCheck, since: number): HeartbeatTiming {
  const { periodSeconds, cron, timezone, graceSeconds, maxRunSeconds, minRunSeconds } = check;
  return { periodSeconds, cron, timezone, graceSeconds, maxRunSeconds, minRunSeconds, since };
}

/** The due time after `at`: a period after it, or the next time of its cron pattern. */
export function dueAfter(timing: HeartbeatTiming, at: number): number {
  if (timing.cron === null) return at + timing.periodSeconds! * 1000;
  return cronOf(timing.cron, timing.timezone ?? undefined).nextRun(new Date(at))?.getTime() ?? Number.MAX_SAFE_INTEGER;
}

/** When the next ping is due: after the last finish (or the start of the timing), or after the last period missed. */
export function nextDue(timing: HeartbeatTiming, progress: Pick<HeartbeatProgress, "lastFinishAt" | "missedDueAt">): number {
  const due = dueAfter(timing, progress.lastFinishAt ?? timing.since);
  return progress.missedDueAt !== null && progress.missedDueAt >= due ? dueAfter(timing, progress.missedDueAt) : due;
}

/** When healthd looks at a heartbeat next: the due time's grace running out, or a run going past its limit. */
export function nextLook(timing: HeartbeatTiming, progress: HeartbeatProgress): number {
  const [, startedAt] = oldest(progress.openRuns);
  const missing = nextDue(timing, progress) + timing.graceSeconds * 1000;
  return Math.min(missing, startedAt === undefined ? Infinity : startedAt + runLimitMs(timing));
}

export function heartbeatStep(timing: HeartbeatTiming, before: HeartbeatProgress, run: PingRun | DeadlineRun): HeartbeatStep {
  const graceMs = timing.graceSeconds * 1000;
  const nextDueAt = nextDue(timing, before);
  const openRuns = { ...before.openRuns };
  const overdueRuns = { ...before.overdueRuns };
  const at = run.at;
  const step = (entry: HeartbeatStep["entry"], judged: Judged | null, changed: Partial<HeartbeatProgress> = {}): HeartbeatStep => ({
    entry,
    judged,
    progress: { ...before, openRuns, overdueRuns, ...changed },
  });
  const entry = (fields: Partial<Omit<EntryFields, "location" | "type">>): HeartbeatStep["entry"] => ({
    checkedAt: at, ok: true, status: null, latencyMs: 0, errorKind: null, error: null, matched: null, kind: null, exitCode: null, durationMs: null, body: null, answers: null,
    ...(run.kind === "ping" ? senderOf(run.ping) : noSender),
    ...fields,
  });

  if (run.kind === "deadline") {
    if (at >= nextDueAt + graceMs) {
      const since = before.lastPingAt === null ? "never pinged" : `last pinged ${iso(before.lastPingAt)}`;
      const error = `no ping by ${iso(nextDueAt)} and its grace of ${duration(graceMs)} (${since})`;
      return step(entry({ ok: false, kind: "missed", errorKind: "missed", error }), { ok: false, checkedAt: at, errorKind: "missed", error }, {
        missedDueAt: lastElapsed(timing, nextDueAt, at - graceMs),
      });
    }
    const [runId, startedAt] = oldest(openRuns);
    if (runId !== undefined && at >= startedAt + runLimitMs(timing)) {
      delete openRuns[runId];
      overdueRuns[runId] = startedAt;
      keepNewest(overdueRuns);
      const error = `a run started ${iso(startedAt)} had not finished after ${duration(at - startedAt)} (${timing.maxRunSeconds !== null ? "maxRunSeconds" : "its grace"} is ${duration(runLimitMs(timing))})`;
      return step(entry({ ok: false, kind: "too-long", errorKind: "too-long", error, durationMs: at - startedAt, latencyMs: at - startedAt }), {
        ok: false, checkedAt: at, errorKind: "too-long", error,
      });
    }
    return step(null, null);
  }

  const { signal, exitCode, body, runId, latencyMs = null } = run.ping;
  if (signal === "start") {
    openRuns[runId ?? ""] = at;
    delete overdueRuns[runId ?? ""]; // a new run of the same id: the old one will not finish as itself
    keepNewest(openRuns);
    return step(entry({ kind: "start", body }), null);
  }
  if (signal === "log") return step(entry({ kind: "log", body }), null);

  // A finish: paired with its start (by run id, or the latest without one), which it ends; else with a run
  // already reported too long, which finishes at last. A failure whose rid names no run ends the latest one
  // all the same (Healthchecks.io's), unpaired: no too-long follows it.
  const failed = signal === "fail" || (signal === "exit" && exitCode !== 0);
  const going = runId !== null ? [runId, openRuns[runId]] as const : latest(openRuns);
  const late = runId !== null ? [runId, overdueRuns[runId]] as const : latest(overdueRuns);
  const started = going[1] !== undefined ? going : late;
  if (started[0] !== undefined && started[1] !== undefined) delete (started === going ? openRuns : overdueRuns)[started[0]];
  else if (failed) delete openRuns[latest(openRuns)[0] ?? ""];
  const durationMs = started[1] === undefined ? null : at - started[1];
  const tooShort = !failed && durationMs !== null && timing.minRunSeconds !== null && durationMs < timing.minRunSeconds * 1000;
  const errorKind = signal === "fail" ? "fail" : failed ? "exit" : tooShort ? "too-short" : null;
  const error =
    errorKind === "fail" ? "the job said it failed"
    : errorKind === "exit" ? `the job exited with code ${exitCode}`
    : errorKind === "too-short" ? `the run finished ${duration(durationMs!)} after it started, sooner than minRunSeconds (${duration(timing.minRunSeconds! * 1000)})`
    : null;
  const ok = errorKind === null;
  const kind = signal === "exit" ? "exit" : signal;
  return step(
    entry({ ok, kind, errorKind, error, exitCode, body, durationMs, latencyMs: latencyMs ?? durationMs ?? 0 }),
    // A failed run's DOWN quotes the end of what it printed (healthd run sends it as the finish's body).
    { ok, checkedAt: at, errorKind, error, ...(failed && { output: lastLines(body) }) },
    { lastPingAt: at, lastFinishAt: at, missedDueAt: null, lastDurationMs: durationMs ?? before.lastDurationMs },
  );
}

/**
 * The last due time at or before `until`, from `due` on: a look that comes several periods late (a daemon
 * stopped for a day) stores one missed entry for them all, not one for each.
 */
function lastElapsed(timing: HeartbeatTiming, due: number, until: number): number {
  if (timing.cron === null) return due + Math.floor((until - due) / (timing.periodSeconds! * 1000)) * timing.periodSeconds! * 1000;
  for (let i = 0; i < 1000; i++) {
    const next = dueAfter(timing, due);
    if (next > until) break;
    due = next;
  }
  return due;
}

/** A job that only ever starts forgets its oldest runs: at most maxOpenRuns are kept. */
function keepNewest(runs: Record<string, number>): void {
  const sorted = Object.entries(runs).sort((a, b) => a[1] - b[1]);
  for (const [id] of sorted.slice(0, Math.max(0, sorted.length - maxOpenRuns))) delete runs[id];
}

/** How long a run may go: maxRunSeconds, or else the grace. */
const runLimitMs = (timing: HeartbeatTiming) => (timing.maxRunSeconds ?? timing.graceSeconds) * 1000;

function oldest(runs: Readonly<Record<string, number>>): readonly [string, number] | readonly [undefined, undefined] {
  let found: readonly [string, number] | readonly [undefined, undefined] = [undefined, undefined];
  for (const [id, at] of Object.entries(runs)) if (found[1] === undefined || at < found[1]) found = [id, at];
  return found;
}

function latest(runs: Readonly<Record<string, number>>): readonly [string, number] | readonly [undefined, undefined] {
  let found: readonly [string, number] | readonly [undefined, undefined] = [undefined, undefined];
  for (const [id, at] of Object.entries(runs)) if (found[1] === undefined || at > found[1]) found = [id, at];
  return found;
}

/** What an entry keeps of how its ping came (null for a deadline's entry, and a ping not made over HTTP). */
type Sender = Pick<EntryFields, "method" | "userAgent" | "remoteAddr" | "scheme" | "rid">;
const noSender: Sender = { method: null, userAgent: null, remoteAddr: null, scheme: null, rid: null };
const senderOf = (ping: PingRun["ping"]): Sender => ({
  method: ping.method ?? null, userAgent: ping.userAgent ?? null, remoteAddr: ping.remoteAddr ?? null, scheme: ping.scheme ?? null, rid: ping.runId,
});

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
