/**
 * /services: servers, their services and their entries.
 */
import { z } from "zod";
import type { ScheduleChange } from "../model.ts";
import { hourMs } from "../rollup/deltas.ts";
import { quantile } from "../rollup/sketch.ts";
import { id, serverDocument, serviceDocument, validate, type FieldError } from "../schema.ts";
import { decodeCursor } from "../store/queries/entries.ts";
import type { Store } from "../store/store.ts";
import { HttpError, invalid } from "./problem.ts";
import type { Request, Route } from "./router.ts";

export interface ServicesContext {
  readonly store: Store;
  /** Told of every write before its response is sent, so the scheduler follows it at once. */
  readonly scheduleChanged: (change: ScheduleChange) => Promise<void>;
  readonly now: () => number;
}

export function serviceRoutes(ctx: ServicesContext): Route[] {
  const { store } = ctx;
  return [
    {
      path: "/services",
      methods: { GET: async () => ({ status: 200, body: { servers: await store.listServers() } }) },
    },
    {
      path: "/services/:serverId",
      methods: {
        GET: async (req) => {
          const server = await store.getServer(req.params.serverId!);
          if (!server) throw noServer(req.params.serverId!);
          return { status: 200, body: server };
        },
        PUT: async (req) => {
          const serverId = pathId(req, "serverId");
          const body = await req.json();
          if (body === undefined) throw new HttpError(400, "the body is empty; send a server document", [{ path: "", message: "required" }]);
          const parsed = validate(serverDocument, body);
          const errors: FieldError[] = parsed.ok ? [] : [...parsed.errors];
          const bodyId = (body as { id?: unknown } | null)?.id;
          if (typeof bodyId === "string" && bodyId !== serverId) {
            errors.push({ path: "/id", message: `must equal the server id of the path (${serverId}), or be left out` });
          }
          if (!parsed.ok || errors.length > 0) throw invalid(errors, "the server document");
          const result = await store.applyServers(new Map([[serverId, parsed.value]]), { now: ctx.now() });
          await ctx.scheduleChanged(result.schedule);
          return { status: result.servers[0]!.outcome === "created" ? 201 : 200, body: await store.getServer(serverId) };
        },
        DELETE: async (req) => {
          const serverId = req.params.serverId!;
          const change = await store.deleteServer(serverId);
          if (!change) throw noServer(serverId);
          await ctx.scheduleChanged(change);
          return { status: 204 };
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId",
      methods: {
        GET: async (req) => {
          const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
          const service = await store.getService(serverId, serviceId);
          if (!service) throw await notFound(store, serverId, serviceId);
          return { status: 200, body: service };
        },
        PUT: async (req) => {
          const serverId = pathId(req, "serverId");
          const serviceId = pathId(req, "serviceId");
          const body = await req.json();
          if (body === undefined) throw new HttpError(400, "the body is empty; send a service document", [{ path: "", message: "required" }]);
          const parsed = validate(serviceInPath, body);
          const errors: FieldError[] = parsed.ok ? [] : [...parsed.errors];
          const bodyId = (body as { id?: unknown } | null)?.id;
          if (typeof bodyId === "string" && bodyId !== serviceId) {
            errors.push({ path: "/id", message: `must equal the service id of the path (${serviceId}), or be left out` });
          }
          if (!parsed.ok || errors.length > 0) throw invalid(errors, "the service document");
          const result = await store.putService(serverId, { ...parsed.value, id: serviceId }, ctx.now());
          if (!result) throw noServer(serverId);
          await ctx.scheduleChanged(result.schedule);
          return { status: result.outcome === "created" ? 201 : 200, body: await store.getService(serverId, serviceId) };
        },
        DELETE: async (req) => {
          const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
          const change = await store.deleteService(serverId, serviceId, ctx.now());
          if (!change) throw await notFound(store, serverId, serviceId);
          await ctx.scheduleChanged(change);
          return { status: 204 };
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/stats",
      methods: {
        GET: async (req) => {
          const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
          const { window } = parseQuery(statsQuery, req.query);
          const key = await serviceKey(store, serverId, serviceId);
          const now = ctx.now();
          const since = Math.floor((now - windows[window] * hourMs) / hourMs) * hourMs;
          const totals = await store.rollupTotals(key, since);
          const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 10) / 10);
          return {
            status: 200,
            body: {
              window,
              since: new Date(since).toISOString(),
              checks: totals.checks,
              failures: totals.failures,
              uptime: totals.checks === 0 ? null : (totals.checks - totals.failures) / totals.checks,
              latencyMs: {
                mean: round(totals.checks === 0 ? null : totals.latencySum / totals.checks),
                p50: round(quantile(totals.sketch, 0.5)),
                p95: round(quantile(totals.sketch, 0.95)),
              },
            },
          };
        },
      },
    },
    {
      path: "/services/:serverId/:serviceId/data",
      methods: {
        GET: async (req) => {
          const { serverId, serviceId } = req.params as { serverId: string; serviceId: string };
          const query = parseQuery(entriesQuery, req.query);
          const key = await serviceKey(store, serverId, serviceId);
          return { status: 200, body: await store.readEntries(key, query) };
        },
      },
    },
  ];
}

/** A service document as PUT on its own path takes it: the id comes from the path and may be left out. */
const serviceInPath = serviceDocument.extend({ id: id.optional() });

function pathId(req: Request, name: string): string {
  const value = req.params[name]!;
  const parsed = id.safeParse(value);
  if (!parsed.success) throw invalid([{ path: `/${name}`, message: parsed.error.issues[0]!.message }], `the path's ${name}`);
  return value;
}

/** The service's key, or the 404 that says whether its server is missing too. */
async function serviceKey(store: Store, serverId: string, serviceId: string): Promise<number> {
  const found = await store.findService(serverId, serviceId);
  if (found.key === undefined) throw found.serverExists ? noService(serverId, serviceId) : noServer(serverId);
  return found.key;
}

async function notFound(store: Store, serverId: string, serviceId: string): Promise<HttpError> {
  const found = await store.findService(serverId, serviceId);
  return found.key === undefined && !found.serverExists ? noServer(serverId) : noService(serverId, serviceId);
}

const noServer = (serverId: string) =>
  new HttpError(404, `no server ${JSON.stringify(serverId)}; GET /services lists them, PUT /services/{serverId} creates one`);
const noService = (serverId: string, serviceId: string) =>
  new HttpError(404, `server ${JSON.stringify(serverId)} has no service ${JSON.stringify(serviceId)}; GET /services/${serverId} lists its services`);

const isoTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/, "must be an ISO 8601 time such as 2026-01-31T12:00:00Z")
  .transform((text, ctx) => {
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: "custom", message: "is not a real date and time" });
      return z.NEVER;
    }
    return ms;
  });

/** Stats windows, in hours. */
const windows = { "24h": 24, "7d": 168, "30d": 720, "365d": 8760 } as const;
const statsQuery = z.strictObject({
  window: z.enum(Object.keys(windows) as [keyof typeof windows], "must be one of 24h, 7d, 30d, 365d").default("24h"),
});

const entriesQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^[0-9]+$/, "must be an integer from 1 to 1000")
    .transform(Number)
    .pipe(z.number().min(1, "must be an integer from 1 to 1000").max(1000, "must be an integer from 1 to 1000"))
    .default(100),
  before: z
    .string()
    .refine((c) => decodeCursor(c) !== undefined, "is not a cursor; pass the next value of a previous page")
    .optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  ok: z.enum(["true", "false"], 'must be "true" or "false"').transform((v) => v === "true").optional(),
});

/** Query strings are validated like bodies: unknown, repeated and malformed parameters are 400. */
function parseQuery<S extends z.ZodType>(schema: S, params: URLSearchParams): z.output<S> {
  const errors: FieldError[] = [];
  const record: Record<string, string> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    if (values.length > 1) errors.push({ path: `/${key}`, message: "is given more than once; give it once" });
    record[key] = values[0]!;
  }
  const parsed = validate(schema, record);
  if (!parsed.ok) errors.push(...parsed.errors);
  if (errors.length > 0 || !parsed.ok) throw invalid(errors, "the query string");
  return parsed.value;
}
