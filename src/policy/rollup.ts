/**
 * Hourly rollups: a batch's finished checks added to the stored rollups of their (service, hour). Pure.
 */
import type { Rollup } from "../domain/model.ts";
import { add } from "./sketch.ts";

export const hourMs = 3_600_000;
export const dayMs = 24 * hourMs;

/** An hour is settled this long after it ends: results added later move the rollup revision. */
export const settleMs = 2 * 60_000;

export interface Finished {
  readonly serviceKey: number;
  readonly checkedAt: number;
  readonly ok: boolean;
  readonly latencyMs: number;
  /** Made while the service was silenced (uptime leaves it out). */
  readonly silenced: boolean;
  /** It passed, slower than the check's slowMs. */
  readonly slow: boolean;
}

type Working = { -readonly [K in keyof Rollup]: Rollup[K] };

/** Each (service, hour) the finished checks fall in, with the stored rollup (by `${serviceKey}:${hour}`) added in. */
export function addToRollups(
  finished: readonly Finished[],
  stored: ReadonlyMap<string, Rollup>,
): { readonly serviceKey: number; readonly hour: number; readonly rollup: Rollup }[] {
  const rows = new Map<string, { serviceKey: number; hour: number; rollup: Working }>();
  for (const f of finished) {
    const hour = Math.floor(f.checkedAt / hourMs) * hourMs;
    const id = `${f.serviceKey}:${hour}`;
    let row = rows.get(id);
    if (!row) {
      const before = stored.get(id);
      // A copy: the stored rollup may be kept in memory for the next batch, which must see it unchanged if
      // this batch's transaction rolls back. One literal for a new hour and a stored one (it was a spread of the
      // stored one or a literal of zeros): with it, --trace-deopt at 1,000 services no longer showed the write
      // path's optimized code thrown away here.
      const rollup: Working = {
        checks: before?.checks ?? 0,
        failures: before?.failures ?? 0,
        latencySum: before?.latencySum ?? 0,
        sketch: new Map(before?.sketch),
        silencedChecks: before?.silencedChecks ?? 0,
        silencedFailures: before?.silencedFailures ?? 0,
        slowChecks: before?.slowChecks ?? 0,
      };
      rows.set(id, (row = { serviceKey: f.serviceKey, hour, rollup }));
    }
    const r = row.rollup;
    r.checks++;
    if (!f.ok) r.failures++;
    if (f.silenced) (r.silencedChecks++, f.ok || r.silencedFailures++);
    if (f.slow) r.slowChecks++;
    r.latencySum += f.latencyMs;
    add(r.sketch, f.latencyMs);
  }
  return [...rows.values()];
}
