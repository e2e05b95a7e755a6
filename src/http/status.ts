/**
 * The status page, its JSON and the badges. All read the one read model (src/status/read-model.ts). With
 * --public-status they answer without the token, and show names, statuses, times, uptime and latency only.
 */
import { randomBytes } from "node:crypto";
import { makeBadge } from "badge-maker";
import { z } from "zod";
import { History, serviceStats, statusModel, type ServiceStatusName, type StatusModel } from "../status/read-model.ts";
import { renderStatusPage } from "../status/page.ts";
import type { Store } from "../store/store.ts";
import { noServer, serviceKey, windowParameter } from "./services.ts";
import type { Operation, Response, Route } from "./router.ts";

export interface StatusContext {
  readonly store: Store;
  readonly version: string;
  /** Answer without the token, showing no URL or error text. */
  readonly public: boolean;
  readonly now: () => number;
}

const badgeColour: Record<ServiceStatusName, string> = { up: "brightgreen", down: "red", unknown: "lightgrey", blocked: "orange", paused: "lightgrey" };
const badgeQuery = z.strictObject({ window: windowParameter });

/**
 * The page's policy: nothing from another origin, and only its own inline style and script (by nonce).
 * A fresh nonce per answer, so that nothing injected could reuse it.
 */
function pageHeaders(nonce: string): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src 'nonce-${nonce}'`,
      "connect-src 'self'",
      "img-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  };
}

const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#1a7f37"/><path d="M4 8.5l2.5 2.5L12 5.5" stroke="#fff" stroke-width="2" fill="none"/></svg>`;

const svg = (text: string): Response => ({
  status: 200,
  text,
  headers: { "content-type": "image/svg+xml; charset=utf-8", "cache-control": "max-age=60", "x-content-type-options": "nosniff" },
});

export function statusRoutes(ctx: StatusContext): Route[] {
  const { store } = ctx;
  const history = new History();
  const open = ctx.public;
  const model = (serverId?: string) => statusModel(store, history, ctx.now(), { ...(serverId ? { serverId } : {}), public: ctx.public });
  const page = async (serverId?: string): Promise<Response> => {
    const m = await model(serverId);
    if (serverId && m.servers.length === 0 && !(await store.getServer(serverId))) throw noServer(serverId);
    const nonce = randomBytes(16).toString("base64");
    const title = serverId ? `${m.servers[0]?.name ?? serverId} status` : "Status";
    return { status: 200, text: renderStatusPage(m, { title, nonce, version: ctx.version }), headers: pageHeaders(nonce) };
  };
  const html = (description: string) => ({ 200: { description, contentType: "text/html" }, 404: { description: "No such server" } });
  const badge = (operation: Omit<Operation, "open">): Operation => ({ ...operation, ...(open ? { open } : {}) });

  return [
    {
      // Browsers ask for it by themselves (and can send no token): a small mark, open to all.
      path: "/favicon.ico",
      methods: {
        GET: {
          summary: "The page's icon",
          operationId: "getFavicon",
          open: true,
          responses: { 200: { description: "SVG", contentType: "image/svg+xml" } },
          handle: () => ({ ...svg(favicon), headers: { ...svg(favicon).headers, "cache-control": "max-age=86400" } }),
        },
      },
    },
    {
      path: "/",
      methods: {
        GET: {
          summary: "Where people start: a redirect to the status page",
          operationId: "getRoot",
          ...(open ? { open } : {}),
          responses: { 302: { description: "To /status" } },
          handle: () => ({ status: 302, headers: { location: "/status" } }),
        },
      },
    },
    {
      path: "/status",
      methods: {
        GET: {
          summary: "The status page of every server and service (HTML, complete without JavaScript)",
          operationId: "getStatusPage",
          ...(open ? { open } : {}),
          responses: { 200: { description: "The page", contentType: "text/html" } },
          handle: () => page(),
        },
      },
    },
    {
      path: "/status/:serverId",
      methods: {
        GET: {
          summary: "The status page of one server",
          operationId: "getServerStatusPage",
          ...(open ? { open } : {}),
          responses: html("The page"),
          handle: (req) => page(req.params.serverId!),
        },
      },
    },
    {
      path: "/status.json",
      methods: {
        GET: {
          summary: "What the status page shows, for scripts",
          operationId: "getStatus",
          ...(open ? { open } : {}),
          responses: { 200: { description: "Every server and service with its status, uptime, history and latency", contentType: "application/json" } },
          handle: async () => ({ status: 200, body: (await model()) satisfies StatusModel }),
        },
      },
    },
    {
      path: "/badges/:serverId/status.svg",
      methods: {
        GET: badge({
          summary: "A badge of a server: down when any of its services is down",
          operationId: "getServerBadge",
          responses: { 200: { description: "SVG, flat style", contentType: "image/svg+xml" }, 404: { description: "No such server" } },
          handle: async (req) => {
            const serverId = req.params.serverId!;
            const server = (await model(serverId)).servers[0];
            if (!server) throw noServer(serverId);
            return svg(makeBadge({ label: server.name, message: server.status, color: badgeColour[server.status] }));
          },
        }),
      },
    },
    {
      path: "/badges/:serverId/:serviceId/status.svg",
      methods: {
        GET: badge({
          summary: "A badge of a service's status",
          operationId: "getServiceStatusBadge",
          responses: { 200: { description: "SVG, flat style", contentType: "image/svg+xml" }, 404: { description: "No such server or service" } },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            await serviceKey(store, serverId, serviceId);
            const service = (await model(serverId)).servers[0]?.services.find((s) => s.id === serviceId);
            if (!service) throw noServer(serverId);
            return svg(makeBadge({ label: service.name, message: service.status, color: badgeColour[service.status] }));
          },
        }),
      },
    },
    {
      path: "/badges/:serverId/:serviceId/uptime.svg",
      methods: {
        GET: badge({
          summary: "A badge of a service's uptime over a window",
          operationId: "getUptimeBadge",
          query: badgeQuery,
          responses: { 200: { description: "SVG, flat style", contentType: "image/svg+xml" }, 400: { description: "An unknown window" }, 404: { description: "No such server or service" } },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const { window } = req.query as z.output<typeof badgeQuery>;
            const stats = await serviceStats(store, await serviceKey(store, serverId, serviceId), window, ctx.now());
            const u = stats.uptime;
            const message = u === null ? "no data" : `${u === 1 ? "100" : (Math.floor(u * 10_000) / 100).toFixed(2)}%`;
            const color = u === null ? "lightgrey" : u >= 0.999 ? "brightgreen" : u >= 0.99 ? "green" : u >= 0.95 ? "yellow" : "red";
            return svg(makeBadge({ label: `uptime ${window}`, message, color }));
          },
        }),
      },
    },
    {
      path: "/badges/:serverId/:serviceId/latency.svg",
      methods: {
        GET: badge({
          summary: "A badge of a service's mean latency over a window",
          operationId: "getLatencyBadge",
          query: badgeQuery,
          responses: { 200: { description: "SVG, flat style", contentType: "image/svg+xml" }, 400: { description: "An unknown window" }, 404: { description: "No such server or service" } },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const { window } = req.query as z.output<typeof badgeQuery>;
            const stats = await serviceStats(store, await serviceKey(store, serverId, serviceId), window, ctx.now());
            const mean = stats.latencyMs.mean;
            return svg(makeBadge({ label: `latency ${window}`, message: mean === null ? "no data" : `${Math.round(mean)} ms`, color: mean === null ? "lightgrey" : "blue" }));
          },
        }),
      },
    },
  ];
}
