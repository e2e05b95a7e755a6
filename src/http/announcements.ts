/**
 * /announcements: what people are told on the status pages (the named pages: status-pages.ts). Writing an
 * announcement needs a token of scope write that may use each server it names (all of them for one that
 * concerns every server). A token limited to some servers sees only the announcements that concern none but
 * its servers: the others answer as ones that do not exist do.
 */
import { z } from "zod";
import { announcementBody, patchBody, updateBody } from "../domain/schema/announcement.ts";
import type { Announcement, AnnouncementStore } from "../store/store.ts";
import type { FieldError } from "../domain/validate.ts";
import { mayUseAll, permitReferences, permitServer, type Principal } from "./access.ts";
import { announcementAnswer, announcementsAnswer } from "./answers.ts";
import { HttpError, invalid } from "./problem.ts";
import { validBody, type Route } from "./router.ts";
import { badBody, badInput, pageLimit } from "./services.ts";
import { announcementJson } from "./views.ts";

export interface AnnouncementsContext {
  readonly store: AnnouncementStore;
  readonly now: () => number;
  /** Told when what the status pages show has changed. */
  readonly changed: () => void;
}


const listQuery = z.strictObject({
  active: z.enum(["true", "false"], 'must be "true" or "false"').transform((v) => v === "true").optional().describe("true: shown now; false: ended or not begun"),
  limit: pageLimit("Announcements"),
});

/** The announcement's id from the path, or a 404 that says where to find them. */
const announcementId = (text: string) => {
  if (/^[0-9]{1,15}$/.test(text)) return Number(text);
  throw noAnnouncement(text);
};
const noAnnouncement = (text: string) => new HttpError(404, `no announcement ${JSON.stringify(text)}; GET /announcements lists them`);
const unknown = (servers: readonly string[], what: string) =>
  invalid(
    servers.map((s): FieldError => ({ path: "/servers", message: `names server ${s}, which does not exist; create it first (PUT /services/${s}) or leave it out` })),
    what,
  );

/**
 * The servers an announcement concerns: a token limited to some servers may write only about them, and is
 * told so (403) alike for a server that exists and one that does not.
 */
function permitServers(who: Principal, servers: readonly string[] | null, what: string): void {
  if (servers === null) permitServer(who, undefined, what);
  else permitReferences(who, servers.map((s, i) => ({ serverId: s, path: `/servers/${i}` })), what);
}

export function announcementRoutes(ctx: AnnouncementsContext): Route[] {
  const { store } = ctx;
  /** The announcement of that id, or a 404: also for one that concerns a server `who` may not use, which it cannot tell from none. */
  const find = async (text: string, who: Principal): Promise<Announcement> => {
    const [found] = await store.announcements({ id: announcementId(text), now: ctx.now(), limit: 1 });
    if (!found || !mayUseAll(who, found.servers)) throw noAnnouncement(text);
    return found;
  };
  return [
    {
      path: "/announcements",
      methods: {
        GET: {
          summary: "Announcements, the latest start first",
          operationId: "listAnnouncements",
          query: listQuery,
          responses: { 200: { description: "The announcements", schema: announcementsAnswer }, 400: badInput },
          handle: async (req) => {
            const q = req.query as z.output<typeof listQuery>;
            const now = ctx.now();
            const list = await store.announcements({ now, active: q.active, limit: q.limit });
            return { status: 200, body: { announcements: list.map((a) => announcementJson(a, now)) } };
          },
        },
        POST: {
          summary: "Tell people something: it leads the status page (and its servers' pages) from startsAt until it ends",
          operationId: "addAnnouncement",
          server: "handler",
          body: { schema: announcementBody, required: true },
          responses: { 201: { description: "Added", schema: announcementAnswer }, ...badBody },
          handle: async (req) => {
            const a = await validBody(req, announcementBody, "the announcement", '{"title": "Checkout is slow", "message": "We are looking into it.", "severity": "degraded"}');
            permitServers(await req.principal(), a.servers, "POST /announcements");
            const now = ctx.now();
            const startsAt = a.startsAt ?? now;
            if (a.endsAt != null && a.endsAt <= startsAt) throw invalid([{ path: "/endsAt", message: "must be later than startsAt (or now, when startsAt is left out)" }], "the announcement");
            const added = await store.addAnnouncement({ ...a, startsAt }, now);
            if ("unknownServers" in added) throw unknown(added.unknownServers, "the announcement");
            ctx.changed();
            return { status: 201, body: announcementJson(added, now), headers: { location: `/announcements/${added.id}` } };
          },
        },
      },
    },
    {
      path: "/announcements/:id",
      methods: {
        GET: {
          summary: "One announcement with its updates",
          operationId: "getAnnouncement",
          server: "handler",
          responses: { 200: { description: "The announcement", schema: announcementAnswer }, 404: { description: "No such announcement" } },
          handle: async (req) => ({ status: 200, body: announcementJson(await find(req.params.id!, await req.principal()), ctx.now()) }),
        },
        PATCH: {
          summary: 'Change an announcement, or end it ({"ended": true})',
          operationId: "patchAnnouncement",
          server: "handler",
          body: { schema: patchBody, required: true },
          responses: { 200: { description: "Changed", schema: announcementAnswer }, 404: { description: "No such announcement" }, ...badBody },
          handle: async (req) => {
            const what = `PATCH /announcements/${req.params.id}`;
            const who = await req.principal();
            const before = await find(req.params.id!, who);
            const p = await validBody(req, patchBody, "the change", '{"ended": true}');
            if (p.servers !== undefined) permitServers(who, p.servers, what);
            const now = ctx.now();
            if (p.ended && before.startsAt > now) {
              throw invalid([{ path: "/ended", message: `cannot end what has not begun (it starts at ${new Date(before.startsAt).toISOString()}); DELETE /announcements/${before.id} cancels it` }], "the change");
            }
            const startsAt = p.startsAt ?? before.startsAt;
            const endsAt = p.ended ? now : p.endsAt === undefined ? before.endsAt : p.endsAt;
            if (endsAt !== null && endsAt <= startsAt) {
              throw invalid([{ path: p.ended ? "/ended" : p.endsAt !== undefined ? "/endsAt" : "/startsAt", message: "would end it before it begins; give an end later than its start" }], "the change");
            }
            const changed = await store.patchAnnouncement(before.id, p, now);
            if (changed === undefined) throw noAnnouncement(req.params.id!);
            if ("unknownServers" in changed) throw unknown(changed.unknownServers, "the change");
            ctx.changed();
            return { status: 200, body: announcementJson(changed, now) };
          },
        },
        DELETE: {
          summary: "Delete an announcement made by mistake (end one with PATCH instead: it stays under Past incidents)",
          operationId: "deleteAnnouncement",
          server: "handler",
          responses: { 204: { description: "Deleted" }, 404: { description: "No such announcement" } },
          handle: async (req) => {
            const found = await find(req.params.id!, await req.principal());
            if (!(await store.deleteAnnouncement(found.id))) throw noAnnouncement(req.params.id!);
            ctx.changed();
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/announcements/:id/updates",
      methods: {
        POST: {
          summary: "Add an update to an announcement (shown above the ones before it)",
          operationId: "addAnnouncementUpdate",
          server: "handler",
          body: { schema: updateBody, required: true },
          responses: { 201: { description: "Added; the whole announcement", schema: announcementAnswer }, 404: { description: "No such announcement" }, 409: { description: "It has as many updates as it may" }, ...badBody },
          handle: async (req) => {
            const found = await find(req.params.id!, await req.principal());
            const u = await validBody(req, updateBody, "the update", '{"message": "Fixed; watching it.", "severity": "info"}');
            const now = ctx.now();
            const updated = await store.addAnnouncementUpdate(found.id, u, now);
            if (updated === undefined) throw noAnnouncement(req.params.id!);
            if (updated === "full") throw new HttpError(409, `announcement ${found.id} has as many updates as it may; end it (PATCH {"ended": true}) and post a new one`);
            ctx.changed();
            return { status: 201, body: announcementJson(updated, now), headers: { location: `/announcements/${found.id}` } };
          },
        },
      },
    },
  ];
}
