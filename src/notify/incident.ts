/**
 * The incident state machine: pure. Given a service's state, the result of its latest check and its notify
 * settings, it returns the new state and the notifications that result calls for.
 *
 * - A failure counts; when it makes the count exceed `notifyThreshold`, `notify` is on and no incident is
 *   open, an incident opens and one DOWN is due. Further failures add nothing.
 * - A pass resets the count; if an incident is open it closes and one RECOVERED is due (even if `notify` was
 *   turned off meanwhile: whoever was told DOWN is told it is over).
 * Settings changed by a PUT take effect from the next check, because they are read at each transition.
 * A result may stand for `count` consecutive results alike (results the daemon had to drop while the store
 * was down are folded into runs), so that a dropped run of failures still opens its incident.
 */
import type { ServiceStatus } from "../model.ts";

export interface IncidentState {
  readonly status: ServiceStatus;
  readonly consecutiveFailures: number;
  /** When the current run of failures began (Unix ms), or null while passing. */
  readonly failingSince: number | null;
  /** When the open incident began (Unix ms), or null. */
  readonly incidentOpenSince: number | null;
}

export const initialState: IncidentState = {
  status: "unknown",
  consecutiveFailures: 0,
  failingSince: null,
  incidentOpenSince: null,
};

export interface NotifySettings {
  readonly notify: boolean;
  readonly notifyThreshold: number;
}

export type Transition = "down" | "recovered";

export function transition(
  state: IncidentState,
  result: { readonly ok: boolean; readonly checkedAt: number; readonly count?: number },
  settings: NotifySettings,
): { state: IncidentState; notify: Transition | null } {
  if (result.ok) {
    const next: IncidentState = { status: "up", consecutiveFailures: 0, failingSince: null, incidentOpenSince: null };
    return { state: next, notify: state.incidentOpenSince === null ? null : "recovered" };
  }
  const failures = state.consecutiveFailures + (result.count ?? 1);
  const opens = state.incidentOpenSince === null && settings.notify && failures > settings.notifyThreshold;
  return {
    state: {
      status: "down",
      consecutiveFailures: failures,
      failingSince: state.failingSince ?? result.checkedAt,
      incidentOpenSince: opens ? result.checkedAt : state.incidentOpenSince,
    },
    notify: opens ? "down" : null,
  };
}
