/**
 * Verdicts of a check that runs in several locations: pure. Once per interval (at the first result of the
 * interval from any location), the latest result of each listed location, if no older than two intervals,
 * says failing or not; the service is failing when at least `quorum` of them fail. A location with no
 * recent result (no live node there, say) counts as not failing. The incident machine counts verdicts.
 */
import type { LocationResult } from "../domain/batch.ts";

/** The default quorum: a majority of the locations. */
export const majority = (locations: number) => Math.floor(locations / 2) + 1;

/** A verdict is due at `at` when none was made in the last half interval (results of one interval arrive together). */
export function verdictDue(lastVerdictAt: number | null, at: number, intervalMs: number): boolean {
  return lastVerdictAt === null || at - lastVerdictAt >= intervalMs / 2;
}

export interface Verdict {
  readonly failing: boolean;
  /** The failing locations' results, newest first: the first one speaks for the verdict in a DOWN. */
  readonly failures: readonly LocationResult[];
}

export function verdict(
  locations: readonly string[],
  quorum: number | null,
  latest: ReadonlyMap<string, LocationResult>,
  at: number,
  intervalMs: number,
): Verdict {
  const failures = locations
    .map((name) => latest.get(name))
    .filter((r): r is LocationResult => r !== undefined && !r.ok && at - r.checkedAt <= 2 * intervalMs)
    .sort((a, b) => b.checkedAt - a.checkedAt);
  return { failing: failures.length >= (quorum ?? majority(locations.length)), failures };
}
