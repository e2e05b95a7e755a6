/**
 * How long an incident's outage lasted: the one figure every surface gives (RECOVERED, reminders, the log,
 * /incidents, the status pages, the monthly report, `healthd tail`). Pure.
 * An outage runs from the incident's first failed check (startedAt, decided once by decide.ts and stored with
 * the incident) to the first passing check that closed it (closedAt), or until `now` while it is open. Its
 * opening (openedAt) is only when healthd said so: after notifyThreshold more failures.
 */

export interface OutageTimes {
  /** The incident's first failed check (Unix ms). */
  readonly startedAt: number;
  /** The passing check that closed it (Unix ms), or null while it is open. */
  readonly closedAt: number | null;
}

/** The span of an outage, `now` standing for the end of an open one. */
export function outageSpan(incident: OutageTimes, now: number): { readonly start: number; readonly end: number } {
  return { start: incident.startedAt, end: incident.closedAt ?? Math.max(now, incident.startedAt) };
}

/** How long an outage lasted (or has lasted, while open), in ms. */
export function outageMs(incident: OutageTimes, now: number): number {
  const { start, end } = outageSpan(incident, now);
  return Math.max(0, end - start);
}
