/**
 * Applying a servers file to the store, as PUT does for each server: all of it in one transaction, or none.
 */
import type { ServerDocument } from "./schema.ts";
import type { Store } from "./store/db.ts";
import { deleteServer, listServers, putServer } from "./store/servers.ts";

export interface ApplyPlan {
  readonly created: readonly string[];
  readonly updated: readonly string[];
  readonly unchanged: readonly string[];
  /** Servers the file does not name, deleted with --prune. */
  readonly deleted: readonly string[];
}

export interface ApplyOptions {
  /** Delete stored servers that the file does not name. Default false. */
  readonly prune?: boolean;
  /** Work out what would change, and change nothing. Default false. */
  readonly dryRun?: boolean;
  readonly now?: number;
}

class DryRun extends Error {
  constructor(readonly plan: ApplyPlan) {
    super("dry run");
  }
}

export function applyServers(store: Store, servers: ReadonlyMap<string, ServerDocument>, options: ApplyOptions = {}): ApplyPlan {
  const now = options.now ?? Date.now();
  try {
    return store.transaction(() => {
      const plan = { created: [] as string[], updated: [] as string[], unchanged: [] as string[], deleted: [] as string[] };
      for (const [serverId, doc] of servers) {
        const result = putServer(store, serverId, doc, now);
        (result.created ? plan.created : result.changed ? plan.updated : plan.unchanged).push(serverId);
      }
      if (options.prune) {
        for (const { id } of listServers(store)) {
          if (servers.has(id)) continue;
          deleteServer(store, id);
          plan.deleted.push(id);
        }
      }
      // A dry run does the real work and then rolls it back, so it reports exactly what apply would do.
      if (options.dryRun) throw new DryRun(plan);
      return plan;
    });
  } catch (error) {
    if (error instanceof DryRun) return error.plan;
    throw error;
  }
}
