/**
 * Endpoints about the daemon itself.
 */
import { healthAnswer } from "./answers.ts";
import type { Route } from "./router.ts";

/**
 * `problems` lists what is wrong but not fatal (the store refusing writes): /healthz then says "degraded"
 * and names them, still with 200, because the daemon is alive and checking; restarting it would not help.
 * `document` makes the OpenAPI description (from the whole route table, this one included).
 */
export function systemRoutes(
  version: string,
  metrics: { text(): Promise<string>; readonly contentType: string },
  problems: () => string[],
  document: () => Record<string, unknown>,
): Route[] {
  return [
    {
      path: "/healthz",
      methods: {
        GET: {
          summary: "Liveness of the daemon, and what is wrong with it without stopping it",
          operationId: "getHealth",
          open: true,
          responses: { 200: { description: "Alive: ok, or degraded with the problems", schema: healthAnswer } },
          handle: () => {
            const now = problems();
            return { status: 200, body: now.length === 0 ? { status: "ok", version } : { status: "degraded", version, problems: now } };
          },
        },
      },
    },
    {
      path: "/openapi.json",
      methods: {
        GET: {
          summary: "This API's OpenAPI 3.1 description",
          operationId: "getOpenApi",
          server: "none",
          responses: { 200: { description: "The OpenAPI document", contentType: "application/json" } },
          handle: () => ({ status: 200, body: document() }),
        },
      },
    },
    {
      path: "/metrics",
      methods: {
        GET: {
          summary: "Prometheus metrics of the daemon and of every service",
          operationId: "getMetrics",
          responses: { 200: { description: "Text exposition format 0.0.4", contentType: "text/plain; version=0.0.4" } },
          handle: async () => ({ status: 200, text: await metrics.text(), headers: { "content-type": metrics.contentType } }),
        },
      },
    },
  ];
}
