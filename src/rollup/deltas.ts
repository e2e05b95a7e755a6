/**
 * Hourly rollups: what a batch of finished checks adds to each (service, hour). Pure.
 */
import { add, type Sketch } from "./sketch.ts";

export const hourMs = 3_600_000;

export interface RollupDelta {
  readonly serviceKey: number;
  /** Start of the hour, Unix ms. */
  readonly hour: number;
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
}

export function rollupDeltas(
  finished: Iterable<{ readonly serviceKey: number; readonly checkedAt: number; readonly result: { ok: boolean; latencyMs: number } }>,
): RollupDelta[] {
  const groups = new Map<string, { serviceKey: number; hour: number; checks: number; failures: number; latencySum: number; sketch: Sketch }>();
  for (const f of finished) {
    const hour = Math.floor(f.checkedAt / hourMs) * hourMs;
    const id = `${f.serviceKey}:${hour}`;
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { serviceKey: f.serviceKey, hour, checks: 0, failures: 0, latencySum: 0, sketch: {} }));
    g.checks++;
    if (!f.result.ok) g.failures++;
    g.latencySum += f.result.latencyMs;
    add(g.sketch, f.result.latencyMs);
  }
  return [...groups.values()];
}
