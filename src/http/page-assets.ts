/**
 * What a named page has beside itself, each answered as the page is (a public one to anyone): its logo, its
 * Atom feed (its announcements and its services' incidents) and its badge. Under the page's own path,
 * /status/p/{slug}/..., where a service page of a server called like the slug cannot be shadowed.
 */
import { makeBadge } from "badge-maker";
import { z } from "zod";
import { duration } from "../policy/message.ts";
import { pageFeed } from "../status/feed.ts";
import { logoHeaders } from "../status/logo.ts";
import { label } from "../status/page.ts";
import { worst, type StatusModel } from "../status/read-model.ts";
import type { StatusPage, Store } from "../store/store.ts";
import { permitScope } from "./access.ts";
import { HttpError } from "./problem.ts";
import type { Request, Response, Route } from "./router.ts";
import { noPage } from "./status-pages.ts";

type Named = { page: StatusPage; isPublic: boolean };

export interface PageAssetsContext {
  readonly store: Store;
  readonly public: boolean;
  readonly publicUrl: string | null;
  /** The named page of that slug as `req` may see it (status.ts); undefined: none, to it. */
  readonly namedPage: (req: Request, slug: string) => Promise<Named | undefined>;
  /** Its read model, shared with the page. */
  readonly namedView: (named: Named) => Promise<{ readonly model: StatusModel }>;
}

const colour = { up: "brightgreen", down: "red", unknown: "lightgrey", blocked: "orange", paused: "lightgrey", new: "lightgrey", late: "yellow", degraded: "yellow" } as const;
const feedHeaders = { "content-type": "application/atom+xml; charset=utf-8", "cache-control": "max-age=60", "x-content-type-options": "nosniff" };

export function pageAssetRoutes(ctx: PageAssetsContext): Route[] {
  /** The page, or the 404 (401 without a token) a slug that names no page gets, as /status/p/{slug} answers. */
  const find = async (req: Request, slug: string, what: string): Promise<Named> => {
    const named = await ctx.namedPage(req, slug);
    if (named) return named;
    if (!ctx.public) permitScope(await req.principal(), "read", what);
    throw noPage(slug);
  };
  const asPage = { open: true as const, responses: { 401: { description: "A private page, and no token" }, 404: { description: "No such page" } } };
  return [
    {
      path: "/status/p/:slug/logo",
      methods: {
        GET: {
          summary: "A named page's logo (answered as the named page is), with a policy that lets nothing in it run or load",
          operationId: "getStatusPageLogo",
          ...asPage,
          query: z.strictObject({ v: z.string().max(40).optional().describe("Its version (the page links to the latest): any value") }),
          responses: { ...asPage.responses, 200: { description: "PNG, SVG or WebP", contentType: "image/*" } },
          handle: async (req): Promise<Response> => {
            const slug = req.params.slug!;
            const { isPublic } = await find(req, slug, `GET /status/p/${slug}/logo`);
            const logo = await ctx.store.statusPageLogo(slug);
            if (!logo) throw new HttpError(404, `status page ${JSON.stringify(slug)} has no logo; PUT /status-pages/${slug}/logo sets one`);
            return { status: 200, bytes: logo.bytes, headers: logoHeaders(logo.type, isPublic) };
          },
        },
      },
    },
    {
      path: "/status/p/:slug/feed.atom",
      methods: {
        GET: {
          summary: "A named page's Atom feed: its announcements (now, scheduled, ended in the last 30 days) and its services' incidents (open, and closed in the last 30 days)",
          operationId: "getStatusPageFeed",
          ...asPage,
          responses: { ...asPage.responses, 200: { description: "Atom (RFC 4287)", contentType: "application/atom+xml" } },
          handle: async (req): Promise<Response> => {
            const slug = req.params.slug!;
            const named = await find(req, slug, `GET /status/p/${slug}/feed.atom`);
            const { model } = await ctx.namedView(named);
            const base = ctx.publicUrl?.replace(/\/+$/, "") ?? null;
            const text = pageFeed(model, { title: named.page.title, base, path: `/status/p/${encodeURIComponent(slug)}`, words: duration });
            return { status: 200, text, headers: feedHeaders };
          },
        },
      },
    },
    {
      path: "/status/p/:slug/badge.svg",
      methods: {
        GET: {
          summary: "A named page's badge: the worst status of what it shows",
          operationId: "getStatusPageBadge",
          ...asPage,
          responses: { ...asPage.responses, 200: { description: "SVG, flat style", contentType: "image/svg+xml" } },
          handle: async (req): Promise<Response> => {
            const named = await find(req, req.params.slug!, `GET /status/p/${req.params.slug}/badge.svg`);
            const state = worst((await ctx.namedView(named)).model.overall);
            const text = makeBadge({ label: named.page.title, message: label[state].toLowerCase(), color: colour[state] });
            return { status: 200, text, headers: { "content-type": "image/svg+xml; charset=utf-8", "cache-control": "max-age=60", "x-content-type-options": "nosniff" } };
          },
        },
      },
    },
  ];
}
