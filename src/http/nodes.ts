/**
 * GET /nodes: the daemons sharing the database, where they probe from, and how many checks each runs.
 */
import { isLive } from "../policy/lease.ts";
import type { ClusterNode } from "../runtime/cluster/node.ts";
import type { ClusterStore } from "../store/store.ts";
import { nodesAnswer } from "./answers.ts";
import type { Route } from "./router.ts";

export interface ClusterContext {
  readonly store: ClusterStore;
  readonly cluster: ClusterNode;
  readonly now: () => number;
}

export function clusterRoutes(ctx: ClusterContext): Route[] {
  return [
    {
      path: "/nodes",
      methods: {
        GET: {
          summary: "The nodes sharing the database (live ones, and those seen in the last day), with the checks each runs",
          operationId: "listNodes",
          responses: { 200: { description: "The nodes, by name", schema: nodesAnswer } },
          handle: async () => {
            const now = ctx.now();
            const nodes = await ctx.store.nodes(now);
            return {
              status: 200,
              body: {
                nodes: nodes.map((n) => {
                  const live = isLive(n, now);
                  return {
                    name: n.name,
                    location: n.location,
                    version: n.version,
                    startedAt: new Date(n.startedAt).toISOString(),
                    lastSeenAt: new Date(n.lastSeenAt).toISOString(),
                    // A dead node's ownerships are stale until someone rebalances: it runs nothing.
                    services: live ? n.services : 0,
                    self: n.instance === ctx.cluster.instance,
                    live,
                  };
                }),
              },
            };
          },
        },
      },
    },
  ];
}
