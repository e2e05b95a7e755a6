/**
 * Editing a server in the console: GET shows its document as YAML (what `healthd export` writes for it); a POST
 * validates the text as `healthd apply` does (cli/servers-file.ts: errors at line:column) and previews what
 * saving would change (the store's dry run); a POST with step=save writes it as PUT /services/{serverId} does
 * (the same store call, the same refusals, the same scheduling), then leads to the page again, which shows the
 * new heartbeats' ping URLs and crontab lines. Needs a write token and the session's CSRF token.
 */
import { z } from "zod";
import { parseServersFile, renderServersFile } from "../cli/servers-file.ts";
import { limits } from "../domain/schema/common.ts";
import { tooDeepAt } from "../domain/nesting.ts";
import { locatedErrors, renderEdit, type EditModel } from "../console/edit-page.ts";
import { consoleHeaders } from "../console/look.ts";
import { permitScope, permitServer } from "./access.ts";
import { checkForm, looking, viewerOf, type ConsoleContext, type Looking } from "./console-access.ts";
import { HttpError } from "./problem.ts";
import { permitDependencies, refusable } from "./services.ts";
import type { Request, Response, Route } from "./router.ts";

const label = "server.yaml";
const savedQuery = z.strictObject({ saved: z.string().max(2000).optional().describe("The new heartbeats just saved, by id, comma-separated") });

export function consoleEditRoutes(ctx: ConsoleContext): Route[] {
  const { store } = ctx;
  const allowed = async (req: Request): Promise<{ l: Looking; serverId: string }> => {
    const l = await looking(req, ctx.access);
    const serverId = req.params.serverId!;
    const what = `${req.method} /console/servers/${serverId}/edit`;
    permitScope(l.who, "write", what);
    permitServer(l.who, serverId, what);
    return { l, serverId };
  };
  // The cookie its forms' CSRF token comes from, when this is the first console page a tokenless browser opens.
  const page = (l: Looking, m: EditModel): Response => ({ status: 200, text: renderEdit(m, viewerOf(l), ctx.version), headers: l.setCookie ? { ...consoleHeaders, "set-cookie": l.setCookie } : consoleHeaders });
  const base = (req: Request) => ctx.publicUrl?.replace(/\/+$/, "") ?? `http://${req.headers.host ?? "localhost"}`;

  const show = async (req: Request): Promise<Response> => {
    const { l, serverId } = await allowed(req);
    const [server] = await store.servers(serverId);
    const services = await store.services({ serverId });
    const yaml = renderServersFile([server ? { ...server, services } : { id: serverId, name: serverId, maintenance: [], channels: null, services: [] }], [], "yaml");
    const ids = (req.query as z.output<typeof savedQuery>).saved?.split(",");
    const saved = ids && services.flatMap((s) => (ids.includes(s.id) && s.check.type === "heartbeat" && s.check.pingKey ? [{ id: s.id, pingUrl: `${base(req)}/ping/${s.check.pingKey}` }] : []));
    return page(l, { serverId, serverName: server?.name ?? serverId, yaml, errors: [], change: null, saved: saved ?? null });
  };

  const submit = async (req: Request): Promise<Response> => {
    const { l, serverId } = await allowed(req);
    const fields = new URLSearchParams((await req.body())?.text ?? "");
    checkForm(req, l, fields);
    const yaml = (fields.get("yaml") ?? "").replace(/\r\n/g, "\n");
    const save = fields.get("step") === "save";
    const [server] = await store.servers(serverId);
    const m = { serverId, serverName: server?.name ?? serverId, yaml, saved: null, change: null };
    const refused = (errors: EditModel["errors"]) => page(l, { ...m, errors });
    const deep = tooDeepAt(yaml, limits.nesting);
    if (deep !== undefined) return refused([{ line: deep, column: 1, message: `nests deeper than ${limits.nesting} levels; it was not parsed` }]);
    const parsed = parseServersFile(yaml, label, {});
    if (!parsed.ok) return refused(locatedErrors(parsed.errors, label));
    const ids = [...parsed.servers.keys()];
    if (parsed.channels !== undefined) return refused([{ line: null, column: null, message: "channels: are not edited here; use healthd apply or PUT /channels/{name}" }]);
    if (ids.length !== 1 || ids[0] !== serverId) {
      return refused([{ line: 1, column: 1, message: `the text must hold this server only, as "${serverId}:" followed by its document (it holds ${ids.length === 0 ? "none" : ids.join(", ")})` }]);
    }
    const doc = parsed.servers.get(serverId)!;
    const position = (service: string) => doc.services.findIndex((s) => `${serverId}/${s.id}` === service);
    let result;
    try {
      const what = `PUT /services/${serverId}`;
      await permitDependencies(store, l.who, serverId, doc.services.map((s, i) => ({ service: s, path: `/services/${i}/check` })), what);
      const checkPath = (service: string) => (position(service) === -1 ? undefined : `/services/${position(service)}/check`);
      result = await refusable(store.applyServers(new Map([[serverId, doc]]), { now: ctx.clock.now(), dryRun: !save }), checkPath, l.who);
    } catch (error) {
      if (!(error instanceof HttpError) || error.status >= 500) throw error;
      const located = (error.errors ?? []).map((e) => `${parsed.where(`/${serverId}${e.path}`)}: /${serverId}${e.path}: ${e.message}`);
      return refused(located.length > 0 ? locatedErrors(located, label) : [{ line: null, column: null, message: error.detail }]);
    }
    const change = result.servers[0]!;
    if (!save) return page(l, { ...m, errors: [], change });
    await ctx.scheduleChanged(result.schedule);
    ctx.log.info(`PUT /services/${serverId} (console) by ${l.who.name}`, { outcome: change.outcome, created: change.services.created, updated: change.services.updated.map((u) => u.id), deleted: change.services.deleted });
    const heartbeats = doc.services.filter((s) => change.services.created.includes(s.id) && s.check.type === "heartbeat").map((s) => s.id);
    return { status: 303, headers: { location: `/console/servers/${encodeURIComponent(serverId)}/edit?saved=${heartbeats.map(encodeURIComponent).join(",")}`, "cache-control": "no-store" } };
  };

  return [
    {
      path: "/console/servers/:serverId/edit",
      methods: {
        GET: {
          summary: "Edit a server in the console: its document as YAML (a write token)",
          operationId: "getConsoleServerEdit",
          open: true,
          query: savedQuery,
          responses: { 200: { description: "The page", contentType: "text/html" }, 401: { description: "No token or session" }, 403: { description: "A token that may not write this server" } },
          handle: show,
        },
        POST: {
          summary: "Preview (step=preview) or save (step=save) a server's YAML from the console, validated as apply validates it",
          operationId: "postConsoleServerEdit",
          open: true,
          body: { schema: z.record(z.string(), z.string()), required: true, types: ["application/x-www-form-urlencoded"] },
          responses: {
            200: { description: "The page: the problems at their lines, or what saving changes", contentType: "text/html" },
            303: { description: "Saved: to the page, with the new heartbeats' ping URLs" },
            401: { description: "No token or session" },
            403: { description: "No CSRF token of this session, or a token that may not write this server" },
          },
          handle: submit,
        },
      },
    },
  ];
}
