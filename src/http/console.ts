/**
 * The console (/console): healthd in a browser for the people who run it. Signed in as for /status, but as the
 * token it signed in with: a write token's session may act, through forms that carry a CSRF token bound to the
 * session (console/csrf.ts); a read token's sees everything its token may read and no button. The pages are
 * rendered here from the console's read models (src/console/); /console/events tells a page, as Server-Sent
 * Events, that services changed, and its small script fetches the rows again.
 */
import type { ServerResponse } from "node:http";
import { z } from "zod";
import { consoleModel, consoleStates, loadRows } from "../console/model.ts";
import { renderOverview } from "../console/overview.ts";
import { consoleHeaders } from "../console/look.ts";
import { serviceModel } from "../console/service-model.ts";
import { renderService } from "../console/service-page.ts";
import { mayUse, mayUseAll, type Principal } from "./access.ts";
import { consoleActions } from "./console-actions.ts";
import { consoleEditRoutes } from "./console-edit.ts";
import { looking, viewerOf, type ConsoleContext, type Looking } from "./console-access.ts";
import { noService } from "./services.ts";
import type { Response, Route } from "./router.ts";

const filterQuery = z.strictObject({
  state: z.enum(["", ...consoleStates], `must be one of ${consoleStates.join(", ")}`).optional().describe("Only services in this state"),
  server: z.string().max(64).optional().describe("Only services of this server"),
  kind: z.string().max(32).optional().describe("Only checks of this kind (http, heartbeat, ...)"),
  tag: z.string().max(64).optional().describe("Only services carrying this tag (any case: tags are lowercase)"),
  q: z.string().max(200).optional().describe("Only services whose id, name, server or target contains this text"),
  done: z.string().max(100).optional().describe("What the last action did, said at the top of the page"),
});

const noticeQuery = z.strictObject({ done: z.string().max(100).optional().describe("What the last action did, said at the top of the page") });

const html = (description: string) => ({ 200: { description, contentType: "text/html" } });

export function consoleRoutes(ctx: ConsoleContext): { routes: Route[]; close(): void } {
  const streams = new Set<ServerResponse>();
  const answer = (l: Looking, text: string): Response => ({ status: 200, text, headers: l.setCookie ? { ...consoleHeaders, "set-cookie": l.setCookie } : consoleHeaders });

  /** Server-Sent Events: `changed` whenever services of a server the viewer may see change; a comment every 25 s keeps proxies from closing it. */
  const events = (who: Principal): Response => ({
    status: 200,
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" },
    stream: (res) => {
      streams.add(res);
      res.write("retry: 2000\n\n");
      const stop = ctx.onChange((serverIds) => {
        const seen = serverIds === null ? null : [...new Set(serverIds.filter((s) => mayUse(who, s)))];
        if (seen === null || seen.length > 0) res.write(`event: changed\ndata: ${JSON.stringify({ servers: seen })}\n\n`);
      });
      let timer: unknown;
      const keepAlive = () => {
        res.write(": still here\n\n");
        timer = ctx.clock.setTimeout(keepAlive, 25_000, { unref: true });
      };
      timer = ctx.clock.setTimeout(keepAlive, 25_000, { unref: true });
      res.once("close", () => {
        streams.delete(res);
        stop();
        ctx.clock.clearTimeout(timer);
      });
    },
  });

  const routes: Route[] = [
    {
      path: "/console",
      methods: {
        GET: {
          summary: "The console's overview: every service the token may see, failing first, with counts and filters (HTML; live with JavaScript)",
          operationId: "getConsole",
          open: true,
          query: filterQuery,
          responses: { ...html("The page"), 401: { description: "No token or session: the sign-in page" } },
          handle: async (req) => {
            const l = await looking(req, ctx.access);
            const q = req.query as z.output<typeof filterQuery>;
            const filters = { state: q.state || undefined, server: q.server || undefined, kind: q.kind || undefined, tag: q.tag?.trim().toLowerCase() || undefined, q: q.q?.trim() || undefined };
            const now = ctx.clock.now();
            // Every service's row, shared by every reader for up to a second and built again on a change (as the status page's views).
            const loaded = await ctx.views.get("console", now, () => loadRows(ctx.store, now));
            const model = consoleModel(loaded.model, (s) => mayUse(l.who, s), filters);
            const shownNow = (await ctx.store.announcements({ now, active: true, limit: 50 })).filter((a) => mayUseAll(l.who, a.servers));
            const { done } = req.query as z.output<typeof filterQuery>;
            return answer(l, renderOverview(model, viewerOf(l), { version: ctx.version, announcements: shownNow, done }));
          },
        },
      },
    },
    {
      path: "/console/events",
      methods: {
        GET: {
          summary: "Server-Sent Events for the console: `changed` names the servers whose services changed (the page fetches its rows again)",
          operationId: "getConsoleEvents",
          open: true,
          responses: { 200: { description: "An event stream", contentType: "text/event-stream" }, 401: { description: "No token or session" } },
          handle: async (req) => events((await looking(req, ctx.access)).who),
        },
      },
    },
    {
      path: "/console/services/:serverId/:serviceId",
      methods: {
        GET: {
          summary: "A service in the console: its entries, ping log, incidents with their timeline, latency, and what may be done",
          operationId: "getConsoleService",
          open: true,
          query: noticeQuery,
          responses: { ...html("The page"), 401: { description: "No token or session: the sign-in page" }, 404: { description: "No such service (or not one the token may see)" } },
          handle: async (req) => {
            const l = await looking(req, ctx.access);
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            if (!mayUse(l.who, serverId)) throw noService(serverId, serviceId); // as for one that does not exist
            const now = ctx.clock.now();
            const model = await serviceModel(ctx.store, serverId, serviceId, now);
            if (!model) throw noService(serverId, serviceId);
            const host = ctx.publicUrl?.replace(/\/+$/, "") ?? `http://${req.headers.host ?? "localhost"}`;
            const { done } = req.query as z.output<typeof noticeQuery>;
            return answer(l, renderService(model, viewerOf(l), { version: ctx.version, base: host, done }));
          },
        },
      },
    },
    ...consoleActions(ctx),
    ...consoleEditRoutes(ctx),
  ];
  return {
    routes,
    /** End the event streams, so that the server can close (they would hold it open). */
    close: () => {
      for (const res of streams) res.end();
    },
  };
}
