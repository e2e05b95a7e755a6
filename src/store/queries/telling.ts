/**
 * What a batch's notifications say of other services, read only when a batch has something to say: the graph
 * of dependsOn, for a DOWN to name the services it holds (policy/held.ts). Decides nothing.
 */
import type { Kysely } from "kysely";
import type { BatchDecision } from "../../domain/batch.ts";
import { nameHeld, type Dependent } from "../../policy/held.ts";
import type { Tables } from "../tables.ts";
import { dependsOnFromRow } from "./rows.ts";

type Db = Kysely<Tables>;

/** The decision, with its DOWNs naming what they hold. A batch without a DOWN reads nothing more. */
export async function told(trx: Db, decision: BatchDecision): Promise<BatchDecision> {
  if (!decision.notifications.some((n) => n.kind === "down")) return decision;
  const graph = await dependencyGraph(trx, decision);
  if (graph.length === 0) return decision;
  return { ...decision, notifications: nameHeld(decision.notifications, graph) };
}

/** Every service that depends on another, with whether it has an open incident, as the batch leaves it. */
async function dependencyGraph(trx: Db, decision: BatchDecision): Promise<Dependent[]> {
  const rows = await trx
    .selectFrom("services as s")
    .innerJoin("http_check_configs as c", "c.service_key", "s.key")
    .leftJoin("service_states as st", "st.service_key", "s.key")
    .select(["s.key", "s.server_id", "s.id", "c.depends_on", "st.incident_open_since"])
    .where("c.depends_on", "!=", "[]")
    .execute();
  return rows.map((r) => {
    const decided = decision.services.get(r.key);
    const incidentOpen = decided ? decided.state.incidentOpenSince !== null : r.incident_open_since !== null;
    return { name: `${r.server_id}/${r.id}`, dependsOn: dependsOnFromRow(r.depends_on, r.server_id), incidentOpen };
  });
}
