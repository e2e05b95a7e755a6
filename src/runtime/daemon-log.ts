/** What the daemon says in its log of its own accord: the database's problems as they come and go, and incidents. */
import type { IncidentChange } from "../domain/batch.ts";
import type { ScheduledService } from "../domain/model.ts";
import type { Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import { Alarm, type SharedTick } from "../platform/tick.ts";
import { duration } from "../policy/message.ts";
import { outageMs } from "../policy/outage.ts";
import type { Store } from "../store/store.ts";

/**
 * What is wrong with the database without stopping it (its file deleted, say) is reported on /healthz when
 * asked; this says it in the log as soon as it is seen, once, and again when it is over.
 */
export function watchProblems(store: Pick<Store, "problems">, log: Logger, clock: Clock, tick: SharedTick): () => void {
  let known = new Set<string>();
  // Every five seconds is soon enough for a log line, up to two seconds early with a wake-up that comes anyway.
  const alarm = new Alarm(clock, () => {
    const now = new Set(store.problems());
    for (const problem of now) if (!known.has(problem)) log.error("the database needs attention", { problem });
    for (const problem of known) if (!now.has(problem)) log.info("the database problem is over", { problem });
    known = now;
    arm();
  }, tick);
  const arm = () => {
    const now = clock.now();
    alarm.set(now + 5000, now + 3000);
  };
  arm();
  return () => alarm.clear();
}

/** Every incident opened and closed goes to the log, with or without ntfy. */
export function logIncident(log: Logger, service: ScheduledService, incident: IncidentChange, silenced: boolean): void {
  // Each line says when the incident started: its first failed check, from which its duration counts.
  const fields = { server: service.serverId, service: service.serviceId, incident: incident.id, error: incident.error, startedAt: new Date(incident.startedAt).toISOString() };
  if (incident.opened) log.warn("incident opened", { ...fields, ...(silenced ? { silenced: true } : {}) });
  if (incident.closedAt !== null) {
    // Down for as long as the RECOVERED says: from its first failed check (its startedAt), not from its opening.
    log.info("incident closed", { ...fields, failures: incident.failures, duration: duration(outageMs(incident, incident.closedAt)) });
  }
}
