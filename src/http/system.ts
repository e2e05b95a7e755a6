/**
 * Endpoints about the daemon itself.
 */
import { openApiDocument } from "./openapi.ts";
import type { Route } from "./router.ts";

/**
 * `problems` lists what is wrong but not fatal (the store refusing writes): /healthz then says "degraded"
 * and names them, still with 200, because the daemon is alive and checking; restarting it would not help.
 */
export function systemRoutes(
  version: string,
  metrics: { text(): Promise<string>; readonly contentType: string },
  problems: () => string[] = () => [],
): Route[] {
  const openapi = openApiDocument(version);
  return [
    {
      path: "/healthz",
      methods: {
        GET: () => {
          const now = problems();
          return { status: 200, body: now.length === 0 ? { status: "ok", version } : { status: "degraded", version, problems: now } };
        },
      },
    },
    { path: "/openapi.json", methods: { GET: () => ({ status: 200, body: openapi }) } },
    {
      path: "/metrics",
      methods: {
        GET: async () => ({ status: 200, text: await metrics.text(), headers: { "content-type": metrics.contentType } }),
      },
    },
  ];
}
