/** Domain registrations as RDAP told them: which domains are due a lookup, and what a lookup found. */
import type { Kysely } from "kysely";
import type { Backend } from "../backend.ts";
import type { Tables } from "../tables.ts";

type Db = Kysely<Tables>;

/** The registered domains of the unpaused checks `node` owns that warn of their expiry, not looked up since `since` (of `keys`). */
export async function domainsToLookUp(db: Db, backend: Backend, node: string, since: number, keys?: readonly number[]): Promise<string[]> {
  if (keys?.length === 0) return [];
  let query = db
    .selectFrom("http_check_configs as c")
    .innerJoin("service_owners as o", "o.service_key", "c.service_key")
    .leftJoin("domain_registrations as r", "r.domain", "c.domain")
    .select("c.domain")
    .distinct()
    .where("o.node", "=", node)
    .where("c.domain_warn_days", "is not", null)
    .where("c.domain", "is not", null)
    .where("c.paused", "=", false)
    .where((eb) => eb.or([eb("r.domain", "is", null), eb("r.looked_up_at", "<", since)]));
  if (keys !== undefined) query = query.where(backend.keyIn("c.service_key", keys));
  const rows = await query.orderBy("c.domain").execute();
  return rows.map((r) => r.domain!);
}

export async function saveRegistration(db: Db, domain: string, found: { expiresAt: number | null; problem: string | null }, now: number): Promise<void> {
  await db
    .insertInto("domain_registrations")
    .values({ domain, expires_at: found.expiresAt, looked_up_at: now, problem: found.problem })
    .onConflict((oc) => oc.column("domain").doUpdateSet({ expires_at: found.expiresAt, looked_up_at: now, problem: found.problem }))
    .execute();
}

/** The known expiries of `domains`, for the write path's decision. */
export async function registrationExpiries(db: Db, domains: readonly string[]): Promise<Map<string, number>> {
  if (domains.length === 0) return new Map();
  const rows = await db
    .selectFrom("domain_registrations")
    .select(["domain", "expires_at"])
    .where("domain", "in", domains)
    .where("expires_at", "is not", null)
    .execute();
  return new Map(rows.map((r) => [r.domain, r.expires_at!]));
}
