/**
 * The incident state machine: pure. Given a service's state, the result of its latest check (or a run of
 * results alike), its alert settings and the facts of the moment (silenced? blocked by a dependency?), it
 * returns the new state and the notices that result calls for (decide.ts feeds it).
 *
 * - A failure counts, unless the service is blocked (a dependency has an open incident): then nothing counts,
 *   and counting starts again once the dependencies have recovered. When the count exceeds `notifyThreshold`
 *   and `notify` is on, an incident opens; its DOWN is due at once, or, while silenced, when the silence ends
 *   (at the first check after it, if the incident is still open).
 * - A pass resets the count. An open incident closes after `recoverThreshold` passes in a row, with one
 *   RECOVERED if its DOWN was published (an incident that opened and closed inside a silence says nothing).
 * - While an incident stays open and its DOWN was published, a REMINDER is due every `remindEveryMinutes`,
 *   counted from the DOWN (sent late, after a silence, it counts from then) and then from each reminder.
 * - An acknowledged incident is reminded of no more.
 * - Nothing is published while silenced. Settings changed by a PUT take effect from the next check.
 * A result may stand for `count` results alike (results the daemon folded while the store was down).
 */
import type { IncidentState } from "../domain/model.ts";

export interface AlertSettings {
  readonly notify: boolean;
  readonly notifyThreshold: number;
  /** Default 1. */
  readonly recoverThreshold?: number;
  /** null: no reminders. */
  readonly remindEveryMinutes?: number | null;
}

export interface AlertFacts {
  /** A silence or maintenance window covers the service at the result's time. */
  readonly silenced?: boolean;
  /** A service it depends on has an open incident. */
  readonly blocked?: boolean;
  /** Someone acknowledged the open incident: no more reminders (its RECOVERED still goes out). */
  readonly acknowledged?: boolean;
}

export type Transition = "down" | "recovered";
export type Notice = Transition | "reminder";

export interface Step {
  readonly state: IncidentState;
  /** What to publish, in order. */
  readonly notices: readonly Notice[];
  readonly opened: boolean;
  readonly closed: boolean;
}

export function transition(
  state: IncidentState,
  result: { readonly ok: boolean; readonly checkedAt: number; readonly count?: number },
  settings: AlertSettings,
  facts: AlertFacts = {},
): Step {
  const count = result.count ?? 1;
  const at = result.checkedAt;
  const silenced = facts.silenced ?? false;
  if (result.ok) {
    const passes = state.consecutivePasses + count;
    const base = { ...state, status: "up" as const, consecutiveFailures: 0, consecutivePasses: passes, failingSince: null };
    if (state.incidentOpenSince === null) return { state: base, notices: [], opened: false, closed: false };
    if (passes < (settings.recoverThreshold ?? 1)) return { state: base, notices: [], opened: false, closed: false };
    const said = state.downSent && !silenced;
    return {
      state: { ...base, incidentOpenSince: null, downSent: true, lastRemindedAt: null },
      notices: said ? ["recovered"] : [],
      opened: false,
      closed: true,
    };
  }
  if (facts.blocked && state.incidentOpenSince === null) {
    // Its dependency's incident explains it: nothing counts, and counting starts afresh once that is over.
    return { state: { ...state, status: "down", consecutiveFailures: 0, consecutivePasses: 0, failingSince: null }, notices: [], opened: false, closed: false };
  }
  const failures = state.consecutiveFailures + count;
  const failing: IncidentState = { ...state, status: "down", consecutiveFailures: failures, consecutivePasses: 0, failingSince: state.failingSince ?? at };
  if (state.incidentOpenSince === null) {
    if (!settings.notify || failures <= settings.notifyThreshold) return { state: failing, notices: [], opened: false, closed: false };
    const opened = { ...failing, incidentOpenSince: at, downSent: !silenced, lastRemindedAt: silenced ? null : at };
    return { state: opened, notices: silenced ? [] : ["down"], opened: true, closed: false };
  }
  if (silenced) return { state: failing, notices: [], opened: false, closed: false };
  if (!state.downSent) return { state: { ...failing, downSent: true, lastRemindedAt: at }, notices: ["down"], opened: false, closed: false };
  const every = settings.remindEveryMinutes;
  if (every && !facts.acknowledged && state.lastRemindedAt !== null && at - state.lastRemindedAt >= every * 60_000) {
    return { state: { ...failing, lastRemindedAt: at }, notices: ["reminder"], opened: false, closed: false };
  }
  return { state: failing, notices: [], opened: false, closed: false };
}

/**
 * A CERT warning is due when an https service's certificate has fewer than `warnDays` days left and it is not
 * the certificate already warned about (a renewed one that falls below it again is warned about again).
 */
export function certWarning(
  warnedExpiry: number | null,
  certExpiresAt: number | undefined,
  warnDays: number | null,
  at: number,
): { warn: boolean; warnedExpiry: number | null } {
  if (warnDays === null || certExpiresAt === undefined) return { warn: false, warnedExpiry };
  const below = certExpiresAt - at < warnDays * 86_400_000;
  if (!below || warnedExpiry === certExpiresAt) return { warn: false, warnedExpiry };
  return { warn: true, warnedExpiry: certExpiresAt };
}
