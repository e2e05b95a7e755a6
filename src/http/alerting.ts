/**
 * /silences and /incidents: the quiet periods people set, and the incidents healthd opened and closed.
 */
import { z } from "zod";
import { id, integer, limits, time } from "../domain/schema/index.ts";
import type { FieldError } from "../domain/validate.ts";
import type { AlertingStore, ConfigurationStore, Incident } from "../store/store.ts";
import { incidentCursor } from "./cursor.ts";
import { incidentsAnswer, silenceAnswer, silencesAnswer } from "./answers.ts";
import { mayUse, permitServer } from "./access.ts";
import { HttpError, invalid } from "./problem.ts";
import { validBody, type Route } from "./router.ts";
import { badInput, noServer, noService, pageCursor, pageLimit, serviceKey } from "./services.ts";
import { incidentJson, silenceJson } from "./views.ts";

export interface AlertingContext {
  readonly store: AlertingStore & ConfigurationStore;
  readonly now: () => number;
}

/** The longest silence: a year. Longer is a pause (`paused: true` on the check), not a silence. */
export const maxSilenceSeconds = 366 * 86_400;

export const silenceBody = z
  .strictObject({
    server: id,
    service: id.nullable().optional().describe("null or absent: every service of the server"),
    durationSeconds: integer(1, maxSilenceSeconds, 3600).optional().describe("How long it lasts from its start; or give until"),
    until: time.optional().describe("When it ends (ISO 8601); or give durationSeconds"),
    startsAt: time.optional().describe("When it begins (ISO 8601); default now"),
    reason: z.string().max(limits.nameLength).nullable().optional(),
  })
  .superRefine((body, ctx) => {
    if ((body.durationSeconds === undefined) === (body.until === undefined)) {
      ctx.addIssue({ code: "custom", path: ["durationSeconds"], message: "give either durationSeconds (for example 3600) or until, not both or neither" });
    }
  });

const incidentsQuery = z.strictObject({
  limit: pageLimit("Incidents"),
  before: pageCursor(incidentCursor),
  open: z.enum(["true", "false"], 'must be "true" or "false"').transform((v) => v === "true").optional().describe("Only open ones, or only closed ones"),
});
const allIncidentsQuery = incidentsQuery.extend({ server: id.optional(), service: id.optional() });

export function alertingRoutes(ctx: AlertingContext): Route[] {
  const { store } = ctx;
  return [
    {
      path: "/silences",
      methods: {
        GET: {
          summary: "The silences that have not ended: active ones, then future ones",
          operationId: "listSilences",
          responses: { 200: { description: "The silences, by start", schema: silencesAnswer } },
          handle: async () => ({ status: 200, body: { silences: (await store.silences(ctx.now())).map(silenceJson) } }),
        },
        POST: {
          summary: "Silence a server, or one of its services, for a while: checks run and are stored, nothing is published",
          operationId: "addSilence",
          server: "handler",
          body: { schema: silenceBody, required: true },
          responses: {
            201: { description: "Added", schema: silenceAnswer },
            400: badInput,
            404: { description: "No such server or service" },
            413: { description: "Body over 1 MiB" },
            415: { description: "Body is not JSON" },
          },
          handle: async (req) => {
            const s = await validBody(req, silenceBody, "the silence", 'a silence such as {"server": "web-01", "durationSeconds": 3600}');
            permitServer(await req.principal(), s.server, "POST /silences");
            const now = ctx.now();
            const startsAt = s.startsAt ?? now;
            const endsAt = s.until ?? startsAt + s.durationSeconds! * 1000;
            const errors: FieldError[] = [];
            if (endsAt <= Math.max(startsAt, now)) {
              errors.push(
                s.until === undefined
                  ? { path: "/startsAt", message: "is so far back that the silence is already over; leave it out to start now" }
                  : { path: "/until", message: "must be later than now and than startsAt" },
              );
            }
            if (endsAt - startsAt > maxSilenceSeconds * 1000) errors.push({ path: "/until", message: "is more than a year after the start; pause the check instead (paused: true)" });
            if (errors.length > 0) throw invalid(errors, "the silence");
            const silence = await store.addSilence({ serverId: s.server, serviceId: s.service ?? null, startsAt, endsAt, reason: s.reason ?? null }, now);
            if (silence === "no server") throw noServer(s.server);
            if (silence === "no service") throw noService(s.server, s.service!);
            return { status: 201, body: silenceJson(silence), headers: { location: `/silences/${silence.id}` } };
          },
        },
      },
    },
    {
      path: "/silences/:id",
      methods: {
        DELETE: {
          summary: "End a silence now (a future one is removed)",
          operationId: "endSilence",
          server: "handler",
          responses: { 204: { description: "Ended" }, 404: { description: "No such silence, or it is over" } },
          handle: async (req) => {
            let silenceId = /^[0-9]{1,15}$/.test(req.params.id!) ? Number(req.params.id) : undefined;
            const who = await req.principal();
            if (who.servers !== null && silenceId !== undefined) {
              // Another server's silence answers as one that does not exist: a limited token learns nothing of it.
              const silence = (await store.silences(ctx.now())).find((s) => s.id === silenceId);
              if (silence && !mayUse(who, silence.serverId)) silenceId = undefined;
            }
            if (silenceId === undefined || !(await store.endSilence(silenceId, ctx.now()))) {
              throw new HttpError(404, `no silence ${JSON.stringify(req.params.id)} that has not ended; GET /silences lists them`);
            }
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/incidents",
      methods: {
        GET: {
          summary: "Incidents, newest first, a page at a time",
          operationId: "listIncidents",
          server: "handler",
          query: allIncidentsQuery,
          responses: { 200: { description: "A page of incidents", schema: incidentsAnswer }, 400: badInput },
          handle: async (req) => {
            const q = req.query as z.output<typeof allIncidentsQuery>;
            permitServer(await req.principal(), q.server, "GET /incidents");
            return { status: 200, body: incidentsPage(await store.incidents({ ...q, serverId: q.server, serviceId: q.service }), ctx.now()) };
          },
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/incidents",
      methods: {
        GET: {
          summary: "The incidents of one service, newest first, a page at a time",
          operationId: "listServiceIncidents",
          query: incidentsQuery,
          responses: { 200: { description: "A page of incidents", schema: incidentsAnswer }, 400: badInput, 404: { description: "No such server or service" } },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            await serviceKey(store, serverId, serviceId);
            const q = req.query as z.output<typeof incidentsQuery>;
            return { status: 200, body: incidentsPage(await store.incidents({ ...q, serverId, serviceId }), ctx.now()) };
          },
        },
      },
    },
  ];
}

function incidentsPage(page: { incidents: Incident[]; next: number | null }, now: number) {
  return { incidents: page.incidents.map((i) => incidentJson(i, now)), next: page.next === null ? null : incidentCursor.encode(page.next) };
}
