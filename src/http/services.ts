/**
 * /services: servers, their services and their entries.
 */
import { z } from "zod";
import { qualify, type DependencyProblem, type ScheduleChange } from "../domain/model.ts";
import { serviceStats, windows } from "../status/read-model.ts";
import { id, limits, serverDocument, serviceDocument, tag, time } from "../domain/schema/index.ts";
import { validate, type FieldError } from "../domain/validate.ts";
import { ChannelsRefused, DependenciesRefused, PingKeyTaken } from "../store/errors.ts";
import type { ConfigurationStore, Store } from "../store/store.ts";
import { describeRefusal } from "../policy/dependencies.ts";
import { mayUse, permitReferences, seesSecrets, type Principal } from "./access.ts";
import { entriesAnswer, pingKeyAnswer, serverPingKeyAnswer, serverAnswer, serverListAnswer, serviceAnswer, statsAnswer } from "./answers.ts";
import { entryCursor, type Cursor } from "./cursor.ts";
import { HttpError, invalid } from "./problem.ts";
import type { Answer, Request, Route } from "./router.ts";
import { entryJson, serverSummaries, serverView, serviceViews } from "./views.ts";

export interface ServicesContext {
  readonly store: Store;
  /** Told of every write before its response is sent, so the scheduler follows it at once. */
  readonly scheduleChanged: (change: ScheduleChange) => Promise<void>;
  readonly now: () => number;
}

const notFound = (what: string): Answer => ({ description: `No such ${what}` });
/** The answers of a refused input, as the OpenAPI document describes them (every route that validates says so). */
export const badInput: Answer = { description: "Invalid input; every problem is listed in `errors`, and nothing was changed" };
export const badBody: Record<number, Answer> = { 400: badInput, 413: { description: "Body over 1 MiB" }, 415: { description: "Body is not JSON" } };

export function serviceRoutes(ctx: ServicesContext): Route[] {
  const { store } = ctx;
  return [
    {
      path: "/services",
      methods: {
        GET: {
          summary: "List servers, with how many of their services are up, down, unknown, paused and blocked; ?tag= counts only the services carrying the tags",
          operationId: "listServers",
          query: listQuery,
          responses: { 200: { description: "The servers, by id", schema: serverListAnswer }, 400: badInput },
          handle: async (req) => {
            const { tag } = req.query as z.output<typeof listQuery>;
            return { status: 200, body: { servers: await serverSummaries(store, ctx.now(), tag) } };
          },
        },
      },
    },
    {
      path: "/services/:serverId",
      methods: {
        GET: {
          summary: "A server with its services and each service's state",
          operationId: "getServer",
          responses: { 200: { description: "The server", schema: serverAnswer }, 404: notFound("server") },
          handle: async (req) => {
            const server = await serverView(store, ctx.now(), req.params.serverId!, seesSecrets(await req.principal()));
            if (!server) throw noServer(req.params.serverId!);
            return { status: 200, body: server };
          },
        },
        PUT: {
          summary: "Create or replace a server and its whole set of services",
          operationId: "putServer",
          body: { schema: serverDocument, required: true },
          responses: {
            200: { description: "Replaced (or unchanged)", schema: serverAnswer },
            201: { description: "Created", schema: serverAnswer },
            ...badBody,
          },
          handle: async (req) => {
            const serverId = pathId(req, "serverId");
            const doc = validated(await req.json(), serverDocument, "server", serverId);
            const who = await req.principal();
            await permitDependencies(store, who, serverId, doc.services.map((s, i) => ({ service: s, path: `/services/${i}/check` })), `PUT /services/${serverId}`);
            const checkPath = (service: string) => {
              const position = doc.services.findIndex((s) => `${serverId}/${s.id}` === service);
              return position === -1 ? undefined : `/services/${position}/check`;
            };
            const result = await refusable(store.applyServers(new Map([[serverId, doc]]), { now: ctx.now() }), checkPath, who);
            await ctx.scheduleChanged(result.schedule);
            return { status: result.servers[0]!.outcome === "created" ? 201 : 200, body: await serverView(store, ctx.now(), serverId, seesSecrets(who)) };
          },
        },
        DELETE: {
          summary: "Delete a server with its services, checks, entries and state",
          operationId: "deleteServer",
          responses: { 204: { description: "Deleted" }, 404: notFound("server") },
          handle: async (req) => {
            const serverId = req.params.serverId!;
            const change = await refusable(store.deleteServer(serverId), undefined, await req.principal());
            if (!change) throw noServer(serverId);
            await ctx.scheduleChanged(change);
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId",
      methods: {
        GET: {
          summary: "One service with its check and state",
          operationId: "getService",
          responses: { 200: { description: "The service", schema: serviceAnswer }, 404: notFound("server or service") },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const [service] = await serviceViews(store, ctx.now(), serverId, serviceId, seesSecrets(await req.principal()));
            if (!service) throw await missing(store, serverId, serviceId);
            return { status: 200, body: service };
          },
        },
        PUT: {
          summary: "Create or replace one service of an existing server",
          operationId: "putService",
          body: { schema: serviceInPath, required: true },
          responses: {
            200: { description: "Replaced (or unchanged)", schema: serviceAnswer },
            201: { description: "Created", schema: serviceAnswer },
            ...badBody,
            404: notFound("server"),
          },
          handle: async (req) => {
            const serverId = pathId(req, "serverId");
            const serviceId = pathId(req, "serviceId");
            const doc = validated(await req.json(), serviceInPath, "service", serviceId);
            const who = await req.principal();
            await permitDependencies(store, who, serverId, [{ service: { ...doc, id: serviceId }, path: "/check" }], `PUT /services/${serverId}/${serviceId}`);
            const result = await refusable(
              store.putService(serverId, { ...doc, id: serviceId }, ctx.now()),
              (service) => (service === `${serverId}/${serviceId}` ? "/check" : undefined),
              who,
            );
            if (!result) throw noServer(serverId);
            await ctx.scheduleChanged(result.schedule);
            return { status: result.outcome === "created" ? 201 : 200, body: (await serviceViews(store, ctx.now(), serverId, serviceId, seesSecrets(who)))[0] };
          },
        },
        DELETE: {
          summary: "Delete one service with everything that references it",
          operationId: "deleteService",
          responses: { 204: { description: "Deleted" }, 404: notFound("server or service") },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const change = await refusable(store.deleteService(serverId, serviceId, ctx.now()), undefined, await req.principal());
            if (!change) throw await missing(store, serverId, serviceId);
            await ctx.scheduleChanged(change);
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/services/:serverId/ping-key",
      methods: {
        POST: {
          summary: "Give a server a new ping key for its slug URLs (/ping/{pingKey}/{serviceId}): the old one stops working at once",
          operationId: "renewServerPingKey",
          responses: { 200: { description: "The new ping key", schema: serverPingKeyAnswer }, 404: notFound("server") },
          handle: async (req) => {
            const serverId = pathId(req, "serverId");
            const pingKey = await store.renewServerPingKey(serverId);
            if (!pingKey) throw noServer(serverId);
            return { status: 200, body: { pingKey } };
          },
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/ping-key",
      methods: {
        POST: {
          summary: "Give a heartbeat a new ping key: the old one stops working at once",
          operationId: "renewPingKey",
          responses: {
            200: { description: "The new ping key", schema: pingKeyAnswer },
            404: notFound("server or service"),
            409: { description: "The service is not a heartbeat" },
          },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const key = await serviceKey(store, serverId, serviceId);
            const pingKey = await store.renewPingKey(key);
            if (!pingKey) throw new HttpError(409, `${serverId}/${serviceId} is not a heartbeat: only a heartbeat has a ping key`);
            await ctx.scheduleChanged({ started: [key], stopped: [] });
            return { status: 200, body: { pingKey } };
          },
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/stats",
      methods: {
        GET: {
          summary: "Uptime, latency and counts of a service over a window, from its hourly rollups",
          operationId: "getServiceStats",
          query: statsQuery,
          responses: { 200: { description: "The statistics", schema: statsAnswer }, 400: badInput, 404: notFound("server or service") },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const { window } = req.query as z.output<typeof statsQuery>;
            const key = await serviceKey(store, serverId, serviceId);
            return { status: 200, body: await serviceStats(store, key, window, ctx.now()) };
          },
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/data",
      methods: {
        GET: {
          summary: "The stored entries of a service, newest first, a page at a time",
          operationId: "listEntries",
          query: entriesQuery,
          responses: { 200: { description: "A page of entries", schema: entriesAnswer }, 400: badInput, 404: notFound("server or service") },
          handle: async (req) => {
            const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
            const key = await serviceKey(store, serverId, serviceId);
            const page = await store.readEntries(key, req.query as z.output<typeof entriesQuery>);
            return { status: 200, body: { entries: page.entries.map(entryJson), next: page.next === null ? null : entryCursor.encode(page.next) } };
          },
        },
      },
    },
  ];
}

/** A service document as PUT on its own path takes it: the id comes from the path and may be left out. */
const serviceInPath = serviceDocument.extend({ id: id.optional() });

/** The document, or a 400 listing every problem, the id of the body disagreeing with the path's among them. */
function validated<S extends z.ZodType>(body: unknown, schema: S, what: "server" | "service", pathId: string): z.output<S> {
  if (body === undefined) throw new HttpError(400, `the body is empty; send a ${what} document`, [{ path: "", message: "required" }]);
  const parsed = validate(schema, body);
  const errors: FieldError[] = parsed.ok ? [] : [...parsed.errors];
  const bodyId = (body as { id?: unknown } | null)?.id;
  if (typeof bodyId === "string" && bodyId !== pathId) {
    errors.push({ path: "/id", message: `must equal the ${what} id of the path (${pathId}), or be left out` });
  }
  if (!parsed.ok || errors.length > 0) throw invalid(errors, `the ${what} document`);
  return parsed.value;
}

function pathId(req: Request, name: string): string {
  const value = req.params[name]!;
  const parsed = id.safeParse(value);
  if (!parsed.success) throw invalid([{ path: `/${name}`, message: parsed.error.issues[0]!.message }], `the path's ${name}`);
  return value;
}

/** The service's key, or the 404 that says whether its server is missing too. */
export async function serviceKey(store: ConfigurationStore, serverId: string, serviceId: string): Promise<number> {
  const found = await store.findService(serverId, serviceId);
  if (found.key === undefined) throw found.serverExists ? noService(serverId, serviceId) : noServer(serverId);
  return found.key;
}

async function missing(store: ConfigurationStore, serverId: string, serviceId: string): Promise<HttpError> {
  const found = await store.findService(serverId, serviceId);
  return found.key === undefined && !found.serverExists ? noServer(serverId) : noService(serverId, serviceId);
}

export const noServer = (serverId: string) =>
  new HttpError(404, `no server ${JSON.stringify(serverId)}; GET /services lists them, PUT /services/{serverId} creates one`);
export const noService = (serverId: string, serviceId: string) =>
  new HttpError(404, `server ${JSON.stringify(serverId)} has no service ${JSON.stringify(serviceId)}; GET /services/${serverId} lists its services`);

export const windowParameter = z
  .enum(Object.keys(windows) as [keyof typeof windows], "must be one of 24h, 7d, 30d, 365d")
  .default("24h")
  .describe("The window: 24h, 7d, 30d or 365d");
const statsQuery = z.strictObject({ window: windowParameter });

/**
 * GET /services?tag=: a tag, or several separated by commas, every one of which a service must carry (tags hold
 * no commas). Several in one parameter, as the router refuses a repeated one everywhere.
 */
const listQuery = z.strictObject({
  tag: z
    .string()
    .transform((text) => text.split(","))
    .pipe(z.array(tag).min(1).max(limits.tagsPerService, `names at most ${limits.tagsPerService} tags`))
    .optional()
    .describe("Only services carrying this tag (env:prod), or all of several separated by commas (backups,env:prod)"),
});

/** `limit` of a paged list: 1 to 1000, default 100. */
export const pageLimit = (what: string) =>
  z
    .string()
    .regex(/^[0-9]+$/, "must be an integer from 1 to 1000")
    .transform(Number)
    .pipe(z.number().min(1, "must be an integer from 1 to 1000").max(1000, "must be an integer from 1 to 1000"))
    .default(100)
    .describe(`${what} per page, 1 to 1000`);

/** `before` of a paged list: the `next` of the previous page, read as the id it stands for. */
export const pageCursor = (cursor: Cursor) =>
  z
    .string()
    .transform((text, ctx) => {
      const id = cursor.decode(text);
      if (id === undefined) ctx.addIssue({ code: "custom", message: "is not a cursor; pass the next value of a previous page" });
      return id ?? z.NEVER;
    })
    .optional()
    .describe("The `next` of the previous page");

const entriesQuery = z
  .strictObject({
    limit: pageLimit("Entries"),
    before: pageCursor(entryCursor),
    since: time.optional().describe("Only entries checked at or after this time"),
    until: time.optional().describe("Only entries checked before this time"),
    ok: z.enum(["true", "false"], 'must be "true" or "false"').transform((v) => v === "true").optional(),
  })
  .superRefine((q, ctx) => {
    if (q.since !== undefined && q.until !== undefined && q.since > q.until) {
      ctx.addIssue({ code: "custom", path: ["since"], message: "is later than until; swap them, or leave one out" });
    }
  });

/**
 * The dependsOn references of the services a request writes, refused (403) where they name a server the token
 * may not use, whether that service exists or not: a token limited to some servers can neither learn what
 * exists elsewhere (400 "does not exist" beside 201) nor tie another server's service to its own (which then
 * refuses that service's DELETE). A reference the service already has is kept: the admin made it, and the token
 * sees it in what it GETs, so sending its own document back works.
 */
export async function permitDependencies(
  store: ConfigurationStore,
  who: Principal,
  serverId: string,
  written: readonly { readonly service: { readonly id: string; readonly check: { readonly dependsOn: readonly string[] } }; readonly path: string }[],
  what: string,
): Promise<void> {
  if (who.servers === null) return;
  const refs = written.flatMap(({ service, path }) =>
    service.check.dependsOn.map((ref, i) => ({ service: service.id, ref, serverId: qualify(ref, serverId).split("/")[0]!, path: `${path}/dependsOn/${i}` })),
  );
  const outside = refs.filter((r) => !mayUse(who, r.serverId));
  if (outside.length === 0) return;
  const kept = new Set((await store.services({ serverId })).flatMap((s) => s.check.dependsOn.map((ref) => `${s.id} ${qualify(ref, serverId)}`)));
  permitReferences(who, outside.filter((r) => !kept.has(`${r.service} ${qualify(r.ref, serverId)}`)), what);
}

/**
 * A change of configuration the store refused whole: because the graph of dependsOn would not stay whole (400
 * for the document's own faults, 409 when it would leave other services pointing at nothing), or because a
 * heartbeat's pingKey is another service's (409). `checkPath` says where a written service's check sits in
 * the document, to locate the fault. Services on servers `who` may not use are not named (a token limited to
 * some servers learns nothing of the others from a refusal).
 */
export async function refusable<T>(change: Promise<T>, checkPath: (service: string) => string | undefined = () => undefined, who?: Principal): Promise<T> {
  const shown = (service: string) => (who === undefined || mayUse(who, service.split("/")[0]!) ? service : "a service of another server");
  try {
    return await change;
  } catch (error) {
    if (error instanceof PingKeyTaken) {
      const path = `${checkPath(error.service) ?? ""}/${error.field}`;
      const message = error.problem(shown(error.owner));
      throw new HttpError(409, `${error.field} ${message}`, [{ path, message }]);
    }
    if (error instanceof ChannelsRefused) {
      const errors = error.unknown.map((u) => {
        const base = u.serviceId === null ? "" : (checkPath(`${u.serverId}/${u.serviceId}`) ?? "");
        return { path: `${base}/${u.field ?? "channels"}`, message: `names ${u.channel}, which is not a channel; create it first (PUT /channels/${u.channel}) or fix the name` };
      });
      throw new HttpError(400, `${error.message}; GET /channels lists them`, errors);
    }
    if (!(error instanceof DependenciesRefused)) throw error;
    const refusal = describeRefusal(error.problems.map((p) => hidden(p, shown)), (service, index) => {
      const path = checkPath(service);
      return path === undefined ? undefined : `${path}/dependsOn/${index}`;
    });
    throw new HttpError(refusal.conflict ? 409 : 400, refusal.detail, refusal.conflict ? undefined : [...refusal.errors]);
  }
}

/** A problem of the graph with the services a token may not see renamed by `shown`. */
function hidden(p: DependencyProblem, shown: (service: string) => string): DependencyProblem {
  if (p.kind === "dangling") return { ...p, dependents: [...new Set(p.dependents.map(shown))] };
  if (p.kind === "cycle") return { ...p, cycle: p.cycle.map(shown) };
  return p;
}
