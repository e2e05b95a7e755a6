/**
 * A latency sketch: counts in log-scale buckets, each 4% wider than the one before, from 0.1 ms up. A quantile
 * read from it is within 4% of the true value, whatever the distribution, and sketches of different hours
 * merge by adding counts. Pure.
 */
import type { Sketch } from "../domain/model.ts";
export type { Sketch };

const gamma = 1.04;
const smallestMs = 0.1;
const logGamma = Math.log(gamma);
const maxBucket = 600; // 0.1 ms * 1.04^600 ≈ 16 million s: nothing a check measures is longer
/** How many buckets there are: 0 to maxBucket. */
export const bucketCount = maxBucket + 1;

export function bucketOf(latencyMs: number): number {
  if (!(latencyMs > smallestMs)) return 0;
  return Math.min(maxBucket, Math.ceil(Math.log(latencyMs / smallestMs) / logGamma));
}

/** The upper bound of a bucket, the value reported for the latencies in it. */
export function valueOf(bucket: number): number {
  return smallestMs * gamma ** bucket;
}

export function add(sketch: Sketch, latencyMs: number, count = 1): void {
  const b = bucketOf(latencyMs);
  sketch.set(b, (sketch.get(b) ?? 0) + count);
}

export function merge(into: Sketch, other: ReadonlyMap<number, number>): Sketch {
  for (const [bucket, count] of other) into.set(bucket, (into.get(bucket) ?? 0) + count);
  return into;
}

/** The q-quantile (0..1) of the latencies counted, or null when there are none. */
export function quantile(sketch: ReadonlyMap<number, number>, q: number): number | null {
  const buckets = [...sketch].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((sum, [, c]) => sum + c, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (const [bucket, count] of buckets) {
    seen += count;
    if (seen >= rank) return valueOf(bucket);
  }
  return valueOf(buckets.at(-1)![0]);
}
