/**
 * /status-pages: the named status pages, each shown at /status/p/{slug} (the one of slug `main` at /status,
 * and each at `/` of its hostnames). A page can show servers to anyone, and its slug and hostnames are one
 * namespace for every server's pages, so writing one needs admin on every server (a limited token could
 * otherwise replace, or learn of, a page of servers it may not see). A token limited to some servers sees only
 * the pages that show none but its servers: the others answer as ones that do not exist do.
 */
import { id as idSchema } from "../domain/schema/index.ts";
import { statusPageBody, type StatusPageDocument } from "../domain/schema/status-page.ts";
import type { FieldError } from "../domain/validate.ts";
import type { Store } from "../store/store.ts";
import { mayUseAll } from "./access.ts";
import { statusPageAnswer, statusPagesAnswer } from "./answers.ts";
import { HttpError, invalid } from "./problem.ts";
import { validBody, type Route } from "./router.ts";
import { logoTypes, maxLogoBytes, sniffLogo } from "../status/logo.ts";
import { z } from "zod";
import { badBody } from "./services.ts";
import { statusPageJson } from "./views.ts";

export interface StatusPagesContext {
  readonly store: Store;
  readonly now: () => number;
  /** Told when what the status pages show has changed. */
  readonly changed: () => void;
}

export const noPage = (slug: string) => new HttpError(404, `no status page ${JSON.stringify(slug)}; GET /status-pages lists them`);

const example = '{"title": "Shop status", "sections": [{"title": "Shop", "services": ["web-01/checkout", "api-01/*"]}], "public": true}';

/** Where in the document each unknown reference is named, with what to do about it. */
function unknownErrors(doc: StatusPageDocument, unknown: readonly string[]): FieldError[] {
  const missing = new Set(unknown);
  const message = (ref: string) =>
    ref.includes("/")
      ? `names service ${ref}, which does not exist; add it to its server first (PUT /services/${ref.split("/")[0]}) or leave it out`
      : `names server ${ref}, which does not exist; create it first (PUT /services/${ref}) or leave it out`;
  if (doc.servers) return doc.servers.flatMap((s, i) => (missing.has(s) ? [{ path: `/servers/${i}`, message: message(s) }] : []));
  return (doc.sections ?? []).flatMap((section, i) =>
    section.services.flatMap((ref, j) => {
      const named = missing.has(ref) ? ref : missing.has(ref.split("/")[0]!) ? ref.split("/")[0]! : undefined;
      return named === undefined ? [] : [{ path: `/sections/${i}/services/${j}`, message: message(named) }];
    }),
  );
}

export function statusPageRoutes(ctx: StatusPagesContext): Route[] {
  const { store } = ctx;
  const page = async (slug: string) => {
    const [found] = await store.statusPages({ slug });
    if (!found) throw noPage(slug);
    return found;
  };
  return [
    {
      path: "/status-pages/:slug/logo",
      methods: {
        PUT: {
          summary: `Set a named page's logo: the image itself as the body, PNG, SVG or WebP (by its first bytes), up to ${maxLogoBytes / 1024} KiB, served from the page's own origin`,
          operationId: "putStatusPageLogo",
          scope: "admin",
          body: { schema: z.string(), required: true, types: logoTypes, maxBytes: maxLogoBytes },
          responses: { 200: { description: "Set; the page", schema: statusPageAnswer }, 400: { description: "Not a PNG, SVG or WebP image" }, 404: { description: "No such page" }, 413: { description: `Over ${maxLogoBytes / 1024} KiB` } },
          handle: async (req) => {
            const slug = req.params.slug!;
            const body = await req.body();
            const type = body && sniffLogo(body.bytes);
            if (!body || !type) {
              throw new HttpError(400, `the logo must be a PNG, SVG or WebP image (what its first bytes say, whatever its content-type), up to ${maxLogoBytes / 1024} KiB; send the file itself as the body (curl --data-binary @logo.svg)`);
            }
            if (!(await store.putStatusPageLogo(slug, { type, bytes: body.bytes }, ctx.now()))) throw noPage(slug);
            ctx.changed();
            return { status: 200, body: statusPageJson(await page(slug)) };
          },
        },
        DELETE: {
          summary: "Remove a named page's logo",
          operationId: "deleteStatusPageLogo",
          scope: "admin",
          responses: { 204: { description: "Removed (or there was none)" }, 404: { description: "No such page" } },
          handle: async (req) => {
            if (!(await store.putStatusPageLogo(req.params.slug!, null, ctx.now()))) throw noPage(req.params.slug!);
            ctx.changed();
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/status-pages",
      methods: {
        GET: {
          summary: "The named status pages",
          operationId: "listStatusPages",
          server: "handler",
          responses: { 200: { description: "The pages, by slug (for a token limited to some servers: those that show only its servers)", schema: statusPagesAnswer } },
          handle: async (req) => {
            const who = await req.principal();
            return { status: 200, body: { pages: (await store.statusPages()).filter((p) => mayUseAll(who, p.servers)).map(statusPageJson) } };
          },
        },
      },
    },
    {
      path: "/status-pages/:slug",
      methods: {
        GET: {
          summary: "One named status page's settings",
          operationId: "getStatusPageSettings",
          server: "handler",
          responses: { 200: { description: "The page", schema: statusPageAnswer }, 404: { description: "No such page" } },
          handle: async (req) => {
            const [found] = await store.statusPages({ slug: req.params.slug! });
            if (!found || !mayUseAll(await req.principal(), found.servers)) throw noPage(req.params.slug!);
            return { status: 200, body: statusPageJson(found) };
          },
        },
        PUT: {
          summary: "Create or replace a named status page, shown at /status/p/{slug} (the page main: at /status) and at / of its hostnames",
          operationId: "putStatusPage",
          // On every server: a page of one slug may already show others, which a limited token may not replace nor learn of.
          scope: "admin",
          body: { schema: statusPageBody, required: true },
          responses: {
            200: { description: "Replaced", schema: statusPageAnswer },
            201: { description: "Created", schema: statusPageAnswer },
            ...badBody,
            409: { description: "A hostname another page has" },
          },
          handle: async (req) => {
            const slug = req.params.slug!;
            const valid = idSchema.safeParse(slug);
            if (!valid.success) throw invalid([{ path: "/slug", message: valid.error.issues[0]!.message }], "the page");
            const doc = await validBody(req, statusPageBody, "the page", example);
            const put = await store.putStatusPage(slug, doc, ctx.now());
            if ("unknown" in put) throw invalid(unknownErrors(doc, put.unknown), "the page");
            if ("takenHostnames" in put) {
              const [taken] = put.takenHostnames;
              throw new HttpError(
                409,
                `hostname ${taken!.hostname} shows page ${JSON.stringify(taken!.slug)} already; remove it there first (PUT /status-pages/${taken!.slug}) or leave it out`,
                put.takenHostnames.map((t) => ({ path: `/hostnames/${doc.hostnames.indexOf(t.hostname)}`, message: `shows page ${JSON.stringify(t.slug)} already` })),
              );
            }
            ctx.changed();
            return { status: put.created ? 201 : 200, body: statusPageJson(put.page), ...(put.created ? { headers: { location: `/status-pages/${slug}` } } : {}) };
          },
        },
        DELETE: {
          summary: "Delete a named status page",
          operationId: "deleteStatusPage",
          scope: "admin",
          responses: { 204: { description: "Deleted" }, 404: { description: "No such page" } },
          handle: async (req) => {
            if (!(await store.deleteStatusPage(req.params.slug!))) throw noPage(req.params.slug!);
            ctx.changed();
            return { status: 204 };
          },
        },
      },
    },
  ];
}
