/**
 * What the status page, its JSON, the badges, /stats and /metrics read besides the services themselves: the
 * states, the locations' latest results, and the rollups, aggregated per day or hour in the database, so a page
 * of 1,000 services is a few thousand rows, not millions.
 */
import { sql, type Kysely } from "kysely";
import type { IncidentState, Rollup } from "../../domain/model.ts";
import type { LocationResult } from "../../domain/batch.ts";
import type { RollupSum, UptimeCount } from "../store.ts";
import type { Backend } from "../backend.ts";
import type { Tables } from "../tables.ts";
import { locationResultFromRow, rollupFromRow, sketchesFromText, stateFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

export async function serviceStates(db: Db): Promise<Map<number, IncidentState>> {
  const rows = await db
    .selectFrom("service_states")
    .select(["service_key", "status", "consecutive_failures", "consecutive_passes", "failing_since", "incident_open_since", "down_sent", "last_reminded_at"])
    .execute();
  return new Map(rows.map((r) => [r.service_key, stateFromRow(r)]));
}

export async function locationResults(db: Db, keys: readonly number[]): Promise<Map<number, Map<string, LocationResult>>> {
  const latest = new Map<number, Map<string, LocationResult>>();
  if (keys.length === 0) return latest;
  const rows = await db.selectFrom("location_results").selectAll().where("service_key", "in", keys).execute();
  for (const r of rows) {
    let map = latest.get(r.service_key);
    if (!map) latest.set(r.service_key, (map = new Map()));
    map.set(r.location, locationResultFromRow(r));
  }
  return latest;
}

export async function rollups(db: Db, serviceKey: number, sinceHour: number): Promise<Rollup[]> {
  const rows = await db
    .selectFrom("service_rollups")
    .select(["checks", "failures", "latency_sum", "sketch", "silenced_checks", "silenced_failures", "slow_checks"])
    .where("service_key", "=", serviceKey)
    .where("hour", ">=", sinceHour)
    .orderBy("hour")
    .execute();
  return rows.map(rollupFromRow);
}

/** The revision of the settled hours' rollups: it moves when results are added to one (see results.ts). */
export async function rollupRevision(db: Db): Promise<number> {
  const row = await db.selectFrom("rollup_revisions").select("revision").where("id", "=", 1).executeTakeFirst();
  return row?.revision ?? 0;
}

/** Checks and failures per service and UTC day (or hour) with `since` <= time < `until`. */
export async function uptimeCounts(db: Db, since: number, until: number, per: "day" | "hour"): Promise<UptimeCount[]> {
  const size = per === "day" ? 86_400_000 : 3_600_000;
  // An hour's start minus its remainder is its day's start; the same expression on either engine. The size
  // is written into the SQL: PostgreSQL cannot tell that two parameters in SELECT and GROUP BY are equal.
  const bucket = per === "day" ? sql<number>`hour - (hour % ${sql.lit(size)})` : sql<number>`hour`;
  const rows = await db
    .selectFrom("service_rollups")
    .select((eb) => [
      "service_key",
      bucket.as("at"),
      eb.fn.sum<number>(eb("checks", "-", eb.ref("silenced_checks"))).as("checks"),
      eb.fn.sum<number>(eb("failures", "-", eb.ref("silenced_failures"))).as("failures"),
    ])
    .where("hour", ">=", since)
    .where("hour", "<", until)
    .groupBy(["service_key", bucket])
    .execute();
  // sum() of an integer column is bigint (text) on PostgreSQL and may be a string here: numbers out.
  return rows.map((r) => ({ serviceKey: r.service_key, at: Number(r.at), checks: Number(r.checks), failures: Number(r.failures) }));
}

/**
 * Rollups summed per service and per UTC day or hour (or over the whole span), with their sketches merged:
 * a service page's chart and the monthly reports. The database concatenates each group's sketches into one
 * text, which is scanned once (rows.ts, sketchesFromText): a month of 1,000 services is 720,000 hourly rows,
 * which read one by one took 3.5 s, and 0.6 s so.
 */
export async function rollupSums(backend: Backend, q: { since: number; until: number; per: "day" | "hour" | "span"; serviceKeys: readonly number[] }): Promise<RollupSum[]> {
  if (q.serviceKeys.length === 0) return [];
  const db = backend.db;
  const concat = backend.joinText("sketch");
  const bucket = q.per === "day" ? sql<number>`hour - (hour % ${sql.lit(86_400_000)})` : q.per === "hour" ? sql<number>`hour` : sql<number>`${sql.lit(q.since)}`;
  const rows = await db
    .selectFrom("service_rollups")
    .select((eb) => [
      "service_key",
      bucket.as("at"),
      eb.fn.sum<number>("checks").as("checks"),
      eb.fn.sum<number>("failures").as("failures"),
      eb.fn.sum<number>("silenced_checks").as("silenced_checks"),
      eb.fn.sum<number>("silenced_failures").as("silenced_failures"),
      eb.fn.sum<number>("slow_checks").as("slow_checks"),
      eb.fn.sum<number>("latency_sum").as("latency_sum"),
      concat.as("sketches"),
    ])
    // The keys lead the primary key (service_key, hour): each is a seek to its span, where a range on hour
    // alone read every service's whole year (a month's report on SQLite: 1.2 s).
    .where("service_key", "in", q.serviceKeys)
    .where("hour", ">=", q.since)
    .where("hour", "<", q.until)
    .groupBy(q.per === "span" ? ["service_key"] : ["service_key", bucket])
    .orderBy("service_key")
    .orderBy("at")
    .execute();
  return rows.map((r) => ({
    serviceKey: r.service_key,
    at: Number(r.at),
    checks: Number(r.checks),
    failures: Number(r.failures),
    silencedChecks: Number(r.silenced_checks),
    silencedFailures: Number(r.silenced_failures),
    slowChecks: Number(r.slow_checks),
    latencySum: Number(r.latency_sum),
    sketch: sketchesFromText(r.sketches ?? ""),
  }));
}
