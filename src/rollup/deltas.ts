/**
 * Hourly rollups: what a batch of finished checks adds to each (service, hour). Pure.
 */
export const hourMs = 3_600_000;

export interface RollupDelta {
  readonly serviceKey: number;
  /** Start of the hour, Unix ms. */
  readonly hour: number;
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  /**
   * The latencies themselves, which the caller adds to the hour's stored sketch. A sketch per delta, merged
   * into the stored one, was 8% of the write path's instructions: bucket keys near 150 gave each new sketch
   * a ~2 KB elements store, and merging allocated its entries.
   */
  readonly latencies: number[];
  /** Of checks and failures, those made while the service was silenced (uptime leaves them out). */
  readonly silencedChecks: number;
  readonly silencedFailures: number;
}

export function rollupDeltas(
  finished: Iterable<{
    readonly serviceKey: number;
    readonly checkedAt: number;
    readonly result: { ok: boolean; latencyMs: number };
    readonly silenced?: boolean;
  }>,
): RollupDelta[] {
  const groups = new Map<string, { -readonly [K in keyof RollupDelta]: RollupDelta[K] }>();
  for (const f of finished) {
    const hour = Math.floor(f.checkedAt / hourMs) * hourMs;
    const id = `${f.serviceKey}:${hour}`;
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { serviceKey: f.serviceKey, hour, checks: 0, failures: 0, latencySum: 0, latencies: [], silencedChecks: 0, silencedFailures: 0 }));
    g.checks++;
    if (!f.result.ok) g.failures++;
    if (f.silenced) (g.silencedChecks++, f.result.ok || g.silencedFailures++);
    g.latencySum += f.result.latencyMs;
    g.latencies.push(f.result.latencyMs);
  }
  return [...groups.values()];
}
