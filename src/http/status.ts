/**
 * The status page, its JSON and the badges. All read the one read model (src/status/read-model.ts). With
 * --public-status they answer without the token, and show names, statuses, times, uptime and latency only.
 */
import { makeBadge, type Format } from "badge-maker";
import { z } from "zod";
import { History, serviceStats, statusModel, type ServiceSource, type ServiceStatusName, type StatusModel } from "../status/read-model.ts";
import { pagePolicy, policyWithAccent, renderStatusPage } from "../status/page.ts";
import { mainSlug } from "../domain/schema/status-page.ts";
import { announcementFeed } from "../status/feed.ts";
import { pageAssetRoutes } from "./page-assets.ts";
import type { Store } from "../store/store.ts";
import { noServer, noService, serviceKey, windowParameter } from "./services.ts";
import { mayUseAll, permitScope, permitServer } from "./access.ts";
import { HttpError } from "./problem.ts";
import { noPage } from "./status-pages.ts";
import { rangeQuery, renderServicePage, servicePageModel } from "../status/service-page.ts";
import type { StatusPage } from "../store/store.ts";
import { SharedBody, type Answer, type Operation, type Request, type Response, type Route } from "./router.ts";

export interface StatusContext {
  readonly store: Store;
  readonly version: string;
  /** Answer without the token, showing no URL or error text. */
  readonly public: boolean;
  readonly now: () => number;
  readonly views: StatusViews;
  /** Where the pages' services come from: the daemon's memory of them (status/memory.ts). Default: the store. */
  readonly services?: ServiceSource;
  /** Where people reach the daemon (serve --public-url), for the feed's links; null: unknown. */
  readonly publicUrl: string | null;
}

/** A view (of every server, one, a named page's, or a service's page) as built at one moment, and its page once asked for. */
interface View<M = StatusModel> {
  readonly model: M;
  page?: SharedBody;
}

/**
 * The status views, each built once and shared by every reader: 16 readers of 1,000 services each building
 * their own made checks seconds late. A view is built again when what it shows changed in this daemon (a
 * service changed state, a configuration changed: see changed()), and at least every second for what
 * changes all the time (latencies, "checked 3 s ago", what other nodes stored); readers that come while it is
 * built wait for that build.
 */
export class StatusViews {
  static readonly maxAgeMs = 1000;
  #mark = 0;
  readonly #views = new Map<string, { readonly mark: number; readonly at: number; readonly view: Promise<View<unknown>> }>();

  /** What the views show has changed: the next reader builds them anew. */
  changed(): void {
    this.#mark++;
  }

  get<M>(key: string, now: number, build: () => Promise<M>): Promise<View<M>> {
    for (const [k, made] of this.#views) if (now - made.at >= StatusViews.maxAgeMs) this.#views.delete(k);
    const made = this.#views.get(key);
    if (made && made.mark === this.#mark) return made.view as Promise<View<M>>;
    const view = build().then((model): View<M> => ({ model }));
    this.#views.set(key, { mark: this.#mark, at: now, view });
    // A failed build is not kept: the next reader tries again.
    view.catch(() => this.#views.get(key)?.view === view && this.#views.delete(key));
    return view;
  }
}

const badgeColour: Record<ServiceStatusName, string> = { up: "brightgreen", down: "red", unknown: "lightgrey", blocked: "orange", paused: "lightgrey", new: "lightgrey", late: "yellow", degraded: "yellow" };
const badgeQuery = z.strictObject({ window: windowParameter });

const pageHeaders: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": pagePolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

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
  // A server's view as the daemon shows it (public with --public-status), or as a public named page shows it.
  const view = (serverId?: string, isPublic = ctx.public) => {
    const now = ctx.now();
    const key = `${isPublic ? "public" : "full"}:${serverId ?? ""}`;
    return ctx.views.get(key, now, () => statusModel(store, history, now, { ...(serverId ? { serverId } : {}), public: isPublic }, ctx.services));
  };
  const model = async (serverId?: string) => (await view(serverId)).model;
  const page = async (serverId?: string): Promise<Response> => {
    const v = await view(serverId);
    if (serverId && v.model.servers.length === 0 && (await store.servers(serverId)).length === 0) throw noServer(serverId);
    const title = serverId ? `${v.model.servers[0]?.name ?? serverId} status` : "Status";
    v.page ??= new SharedBody(renderStatusPage(v.model, { title, version: ctx.version }));
    return { status: 200, shared: v.page, headers: pageHeaders };
  };
  /**
   * A named page, if there is one of that slug: a private one asks for a token that may read all of its
   * servers (a public one answers anyone, and shows what --public-status would). To a token limited to other
   * servers a private page is none: it answers as a slug that names no page does, saying nothing of theirs.
   */
  const namedPage = async (req: Request, slug: string): Promise<{ page: StatusPage; isPublic: boolean } | undefined> => {
    const [named] = await store.statusPages({ slug });
    if (!named) return undefined;
    if (!named.public) {
      const who = await req.principal();
      permitScope(who, "read", `GET /status/p/${slug}`);
      if (!mayUseAll(who, named.servers)) return undefined;
    }
    return { page: named, isPublic: named.public || ctx.public };
  };
  const namedView = (named: { page: StatusPage; isPublic: boolean }) => {
    const now = ctx.now();
    const { page: p, isPublic } = named;
    return ctx.views.get(`page:${p.slug}:${p.updatedAt}`, now, () =>
      statusModel(store, history, now, { servers: p.servers, ...(p.sections ? { sections: p.sections } : {}), public: isPublic }, ctx.services),
    );
  };
  /** A named page as its readers see it, wherever they reach it (/status/p/{slug}, /status for main, `/` of a hostname). */
  const namedResponse = async (named: { page: StatusPage; isPublic: boolean }): Promise<Response> => {
    const v = await namedView(named);
    const { page: p } = named;
    const links = `/status/p/${encodeURIComponent(p.slug)}`;
    const look = { ...p, logoSrc: p.logo && `${links}/logo?v=${p.logo.updatedAt}` };
    v.page ??= new SharedBody(renderStatusPage(v.model, { title: p.title, version: ctx.version, links, description: p.description, named: true, look, timeZone: p.timeZone }));
    return { status: 200, shared: v.page, headers: p.accentColor ? { ...pageHeaders, "content-security-policy": policyWithAccent(p.accentColor) } : pageHeaders };
  };
  /** Every named page, read at most once a second (and again when one changes): /status and `/` ask on every request. */
  const pages = async () => (await ctx.views.get("status-pages", ctx.now(), () => store.statusPages())).model;
  /**
   * A page shown at a place that is not its own (/status for the page main, `/` of a hostname): answered as
   * /status/p/{slug} answers: a private one to a token that may read all of its servers (--public-status opens
   * the daemon's own page, not a page made private). Without a page, as the daemon's own page would be
   * (which needs a token that may read every server, unless --public-status): undefined, for the caller.
   */
  const shownAt = async (req: Request, what: string, page: StatusPage | undefined): Promise<Response | undefined> => {
    if (page?.public) return namedResponse({ page, isPublic: true });
    if (page || !ctx.public) {
      const who = await req.principal();
      permitScope(who, "read", what);
      if (page && mayUseAll(who, page.servers)) return namedResponse({ page, isPublic: false });
      permitServer(who, undefined, what);
    }
    return page && namedResponse({ page, isPublic: false });
  };
  /**
   * A service's own page, shared like the others: built from its server's view (as the daemon shows it, or
   * public), at `base`, leading `back` to the page it is part of.
   */
  const servicePage = async (req: Request, serverId: string, serviceId: string, at: { base: string; back: { href: string; text: string }; feed?: string; timeZone?: string }, isPublic = ctx.public): Promise<Response> => {
    const { range } = req.query as z.output<typeof rangeQuery>;
    const now = ctx.now();
    // Everything read inside the build: a reader of a page built less than a second ago asks the store nothing.
    const v = await ctx.views.get(`service:${isPublic}:${at.base}:${range}`, now, async () => {
      const [key, server] = await Promise.all([serviceKey(store, serverId, serviceId), view(serverId, isPublic)]);
      const m = await servicePageModel(store, server.model, key, serviceId, range, now, isPublic);
      if (!m) throw noService(serverId, serviceId);
      return m;
    });
    v.page ??= new SharedBody(renderServicePage(v.model, { ...at, version: ctx.version }));
    return { status: 200, shared: v.page, headers: pageHeaders };
  };
  const html = (description: string) => ({ 200: { description, contentType: "text/html" }, 404: { description: "No such server" } });
  /** One badge: SVG in the flat style, answered like the page (without the token with --public-status). */
  const badgeRoute = (badge: { path: string; summary: string; operationId: string; windowed?: boolean }, draw: (req: Request) => Promise<Format>): Route => {
    const responses: Record<number, Answer> = {
      200: { description: "SVG, flat style", contentType: "image/svg+xml" },
      404: { description: badge.path.includes(":serviceId") ? "No such server or service" : "No such server" },
    };
    if (badge.windowed) responses[400] = { description: "An unknown window" };
    const operation: Operation = {
      summary: badge.summary,
      operationId: badge.operationId,
      ...(badge.windowed ? { query: badgeQuery } : {}),
      ...(open ? { open } : {}),
      responses,
      handle: async (req) => svg(makeBadge(await draw(req))),
    };
    return { path: badge.path, methods: { GET: operation } };
  };
  const windowStats = async (req: Request) => {
    const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
    const { window } = req.query as z.output<typeof badgeQuery>;
    return { window, stats: await serviceStats(store, await serviceKey(store, serverId, serviceId), window, ctx.now()) };
  };

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
          summary: "Where people start: the status page whose hostnames include the request's Host, else a redirect to /status",
          operationId: "getRoot",
          open: true,
          responses: { 200: { description: "The page of that host", contentType: "text/html" }, 302: { description: "To /status" } },
          handle: async (req) => {
            const host = (req.headers.host ?? "").replace(/:\d+$/, "").replace(/\.$/, "").toLowerCase();
            const page = (await pages()).find((p) => p.hostnames.includes(host));
            return (await shownAt(req, "GET /", page)) ?? { status: 302, headers: { location: "/status" } };
          },
        },
      },
    },
    {
      path: "/status",
      methods: {
        GET: {
          summary: "The status page: the named page main when there is one (PUT /status-pages/main), else every server and service (HTML, complete without JavaScript)",
          operationId: "getStatusPage",
          open: true,
          responses: { 200: { description: "The page", contentType: "text/html" } },
          handle: async (req) => (await shownAt(req, "GET /status", (await pages()).find((p) => p.slug === mainSlug))) ?? page(),
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
      // Before /status/:serverId/:serviceId, which it would otherwise be (a server named "p"): when no page has
      // the slug, the path is read as that service's page.
      path: "/status/p/:slug",
      methods: {
        GET: {
          summary: "A named status page (PUT /status-pages/{slug}): a public one answers without a token",
          operationId: "getNamedStatusPage",
          open: true,
          query: rangeQuery,
          responses: { ...html("The page"), 401: { description: "A private page, and no token" }, 403: { description: "A token that may not read" } },
          handle: async (req) => {
            const slug = req.params.slug!;
            const named = await namedPage(req, slug);
            if (!named) {
              // Without a token, a slug that names no page reads as a private one would: nothing said of what exists.
              if (!ctx.public) permitScope(await req.principal(), "read", `GET /status/p/${slug}`);
              if ((await store.servers("p")).length === 0) throw noPage(slug);
              return servicePage(req, "p", slug, { base: `/status/p/${encodeURIComponent(slug)}`, back: { href: "/status", text: "Status" }, feed: "/status.atom" });
            }
            return namedResponse(named);
          },
        },
      },
    },
    ...pageAssetRoutes({ ...ctx, namedPage, namedView }),
    {
      path: "/status/p/:slug/:serverId/:serviceId",
      methods: {
        GET: {
          summary: "A service's page within a named status page (answered as the named page is)",
          operationId: "getNamedServicePage",
          open: true,
          server: "handler",
          query: rangeQuery,
          responses: { ...html("The page"), 401: { description: "A private page, and no token" }, 404: { description: "No such page, or the page shows no such service" } },
          handle: async (req) => {
            const { slug, serverId, serviceId } = req.params as { slug: string; serverId: string; serviceId: string };
            const named = await namedPage(req, slug);
            if (!named) {
              if (!ctx.public) permitScope(await req.principal(), "read", `GET /status/p/${slug}`); // as /status/p/{slug}
              throw noPage(slug);
            }
            if (!named.page.servers.includes(serverId)) throw new HttpError(404, `status page ${JSON.stringify(slug)} does not show server ${JSON.stringify(serverId)}`);
            const page = `/status/p/${encodeURIComponent(slug)}`;
            const base = `${page}/${encodeURIComponent(serverId)}/${encodeURIComponent(serviceId)}`;
            return servicePage(req, serverId, serviceId, { base, back: { href: page, text: named.page.title }, timeZone: named.page.timeZone }, named.isPublic);
          },
        },
      },
    },
    {
      path: "/status/:serverId/:serviceId",
      methods: {
        GET: {
          summary: "A service's page: its latency chart (p50 and p95), uptime per day and incidents",
          operationId: "getServiceStatusPage",
          ...(open ? { open } : {}),
          query: rangeQuery,
          responses: { ...html("The page"), 400: { description: "An unknown range" } },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const base = `/status/${encodeURIComponent(serverId)}/${encodeURIComponent(serviceId)}`;
            return servicePage(req, serverId, serviceId, { base, back: { href: "/status", text: "Status" }, feed: "/status.atom" });
          },
        },
      },
    },
    {
      path: "/status.atom",
      methods: {
        GET: {
          summary: "The announcements as an Atom feed: shown now, scheduled, and ended in the last 30 days",
          operationId: "getAnnouncementFeed",
          ...(open ? { open } : {}),
          responses: { 200: { description: "Atom (RFC 4287)", contentType: "application/atom+xml" } },
          handle: async () => {
            const { announcements, scheduled, past, generatedAt } = await model();
            const text = announcementFeed([...announcements, ...scheduled.announcements, ...past.announcements], {
              title: "Status announcements",
              generatedAt,
              base: ctx.publicUrl?.replace(/\/+$/, "") ?? null,
            });
            return { status: 200, text, headers: { "content-type": "application/atom+xml; charset=utf-8", "cache-control": "max-age=60", "x-content-type-options": "nosniff" } };
          },
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
          // As fresh as the page: a cached copy would show a service up after it went down.
          handle: async () => ({ status: 200, body: (await model()) satisfies StatusModel, headers: { "cache-control": "no-store" } }),
        },
      },
    },
    badgeRoute({ path: "/badges/:serverId/status.svg", summary: "A badge of a server: down when any of its services is down", operationId: "getServerBadge" }, async (req) => {
      const serverId = req.params.serverId!;
      const server = (await model(serverId)).servers[0];
      if (!server) throw noServer(serverId);
      return { label: server.name, message: server.status, color: badgeColour[server.status] };
    }),
    badgeRoute({ path: "/badges/:serverId/:serviceId/status.svg", summary: "A badge of a service's status", operationId: "getServiceStatusBadge" }, async (req) => {
      const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
      await serviceKey(store, serverId, serviceId);
      const service = (await model(serverId)).servers[0]?.services.find((s) => s.id === serviceId);
      if (!service) throw noServer(serverId);
      return { label: service.name, message: service.status, color: badgeColour[service.status] };
    }),
    badgeRoute({ path: "/badges/:serverId/:serviceId/uptime.svg", summary: "A badge of a service's uptime over a window", operationId: "getUptimeBadge", windowed: true }, async (req) => {
      const { window, stats } = await windowStats(req);
      const u = stats.uptime;
      const message = u === null ? "no data" : `${u === 1 ? "100" : (Math.floor(u * 10_000) / 100).toFixed(2)}%`;
      const color = u === null ? "lightgrey" : u >= 0.999 ? "brightgreen" : u >= 0.99 ? "green" : u >= 0.95 ? "yellow" : "red";
      return { label: `uptime ${window}`, message, color };
    }),
    badgeRoute({ path: "/badges/:serverId/:serviceId/latency.svg", summary: "A badge of a service's mean latency over a window", operationId: "getLatencyBadge", windowed: true }, async (req) => {
      const { window, stats } = await windowStats(req);
      const mean = stats.latencyMs.mean;
      return { label: `latency ${window}`, message: mean === null ? "no data" : `${Math.round(mean)} ms`, color: mean === null ? "lightgrey" : "blue" };
    }),
  ];
}
