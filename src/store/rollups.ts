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
  const { read, upsert } = store.statements(prepareRollups);
  for (const d of deltas) {
    const old = read.get(d.serviceKey, d.hour) as { sketch: string } | undefined;
    const sketch = JSON.stringify(old ? merge(JSON.parse(old.sketch) as Sketch, d.sketch) : d.sketch);
    upsert.run(d.serviceKey, d.hour, d.checks, d.failures, d.latencySum, sketch);
  }
}

// Plain SQL, prepared once per connection: this runs for every batch of checks (see entries.ts).
function prepareRollups(sqlite: Store["sqlite"]) {
  return {
    read: sqlite.prepare("SELECT sketch FROM service_rollups WHERE service_key = ? AND hour = ?"),
    upsert: sqlite.prepare(
      `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (service_key, hour) DO UPDATE SET checks = checks + excluded.checks,
         failures = failures + excluded.failures, latency_sum = latency_sum + excluded.latency_sum, sketch = excluded.sketch`,
    ),
  };
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
