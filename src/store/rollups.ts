/**
 * Hourly rollups per service: written beside the entries, read for GET …/stats, kept longer than entries.
 */
import { merge, type Sketch } from "../rollup/sketch.ts";
import type { Store } from "./db.ts";

export const hourMs = 3_600_000;

export interface RollupDelta {
  readonly serviceKey: number;
  readonly hour: number;
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
}

/** Add the deltas to their hours (call inside the transaction that stores the entries they count). */
export function addRollups(store: Store, deltas: Iterable<RollupDelta>): void {
  const { db } = store;
  for (const d of deltas) {
    const old = store.get(
      db.selectFrom("service_rollups").select("sketch").where("service_key", "=", d.serviceKey).where("hour", "=", d.hour),
    );
    const sketch = JSON.stringify(old ? merge(JSON.parse(old.sketch) as Sketch, d.sketch) : d.sketch);
    store.run(
      db
        .insertInto("service_rollups")
        .values({ service_key: d.serviceKey, hour: d.hour, checks: d.checks, failures: d.failures, latency_sum: d.latencySum, sketch })
        .onConflict((oc) =>
          oc.columns(["service_key", "hour"]).doUpdateSet((eb) => ({
            checks: eb("service_rollups.checks", "+", d.checks),
            failures: eb("service_rollups.failures", "+", d.failures),
            latency_sum: eb("service_rollups.latency_sum", "+", d.latencySum),
            sketch,
          })),
        ),
    );
  }
}

export interface Totals {
  readonly checks: number;
  readonly failures: number;
  readonly latencySum: number;
  readonly sketch: Sketch;
}

/** A service's rollups from `sinceHour` on, added up. */
export function rollupTotals(store: Store, serviceKey: number, sinceHour: number): Totals {
  const rows = store.all(
    store.db
      .selectFrom("service_rollups")
      .select(["checks", "failures", "latency_sum", "sketch"])
      .where("service_key", "=", serviceKey)
      .where("hour", ">=", sinceHour),
  );
  const totals = { checks: 0, failures: 0, latencySum: 0, sketch: {} as Sketch };
  for (const r of rows) {
    totals.checks += r.checks;
    totals.failures += r.failures;
    totals.latencySum += r.latency_sum;
    merge(totals.sketch, JSON.parse(r.sketch) as Sketch);
  }
  return totals;
}

/**
 * Delete the rollups of hours before `cutoff` for up to `services` services after key `afterKey`; answers the
 * last key looked at (undefined when every service has been), and how many rows went.
 */
export function deleteRollupsBefore(store: Store, cutoff: number, afterKey: number, services: number): { lastKey: number | undefined; deleted: number } {
  const { db } = store;
  const keys = store.all(db.selectFrom("services").select("key").where("key", ">", afterKey).orderBy("key").limit(services));
  let deleted = 0;
  for (const { key } of keys) {
    deleted += store.run(db.deleteFrom("service_rollups").where("service_key", "=", key).where("hour", "<", cutoff));
  }
  return { lastKey: keys.at(-1)?.key, deleted };
}
