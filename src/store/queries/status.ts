/**
 * What the status page, its JSON and the badges read: every service with its state and last entry, and the
 * rollup counts per day or hour over a window. Aggregated in the database, so a page of 1,000 services is a
 * few thousand rows, not millions.
 */
import { sql, type Kysely } from "kysely";
import { blockers, qualify } from "../../alerting/dependencies.ts";
import { shownStatus } from "../../model.ts";
import type { StatusService, UptimeCount } from "../store.ts";
import type { Tables } from "../tables.ts";
import { upstreamOf } from "./servers.ts";

type Db = Kysely<Tables>;

export async function statusServices(db: Db, serverId?: string): Promise<StatusService[]> {
  let query = db
    .selectFrom("services as s")
    .innerJoin("servers as srv", "srv.id", "s.server_id")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .leftJoin("health_check_data_entries as e", "e.id", "st.last_entry_id")
    .select(["s.key", "s.server_id", "srv.name as server_name", "s.id", "s.name", "c.url", "c.paused", "c.depends_on"])
    .select(["st.status", "st.consecutive_failures", "st.last_checked_at", "st.incident_open_since"])
    .select(["e.latency_ms", "e.error"]);
  if (serverId !== undefined) query = query.where("s.server_id", "=", serverId);
  const rows = await query.orderBy("s.server_id").orderBy("s.key").execute();
  const refs = (r: (typeof rows)[number]) => (JSON.parse(r.depends_on) as string[]).map((ref) => qualify(ref, r.server_id));
  const upstream = await upstreamOf(db, rows.flatMap(refs));
  return rows.map((r) => ({
    key: r.key,
    serverId: r.server_id,
    serverName: r.server_name,
    serviceId: r.id,
    name: r.name,
    url: r.url,
    ...shownStatus(r.status ?? "unknown", Boolean(r.paused), r.incident_open_since !== null, blockers(refs(r), (name) => upstream.get(name))),
    consecutiveFailures: r.consecutive_failures ?? 0,
    lastCheckedAt: r.last_checked_at,
    latencyMs: r.latency_ms,
    lastError: r.error,
    incidentOpenSince: r.incident_open_since,
  }));
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
