/**
 * Endpoints about the daemon itself.
 */
import { openApiDocument } from "./openapi.ts";
import type { Route } from "./router.ts";

export function systemRoutes(version: string, metrics: { text(): Promise<string>; readonly contentType: string }): Route[] {
  const openapi = openApiDocument(version);
  return [
    { path: "/healthz", methods: { GET: () => ({ status: 200, body: { status: "ok", version } }) } },
    { path: "/openapi.json", methods: { GET: () => ({ status: 200, body: openapi }) } },
    {
      path: "/metrics",
      methods: {
        GET: async () => ({ status: 200, text: await metrics.text(), headers: { "content-type": metrics.contentType } }),
      },
    },
  ];
}
