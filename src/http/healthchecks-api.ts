/**
 * Healthchecks.io's management API (/api/v3/checks/..., /api/v3/channels/; v1 and v2 too, which older clients
 * and its Terraform provider use: the same but for v1's `started` status) over healthd's heartbeats, so
 * that HC's Terraform provider, its Ansible modules and the client libraries work with a base URL changed and
 * a healthd token as the key (X-Api-Key, or `api_key` in a write's JSON body, as HC takes it). A server stands
 * for an HC project: a token sees the heartbeats of the servers it may use; a check's uuid is its heartbeat's
 * pingKey. Answers are HC's: its fields, its statuses and its `{"error": ...}` texts, a read key getting HC's
 * read-only view and, on a write endpoint, HC's 401 `wrong api key` (not healthd's 403). The mapping itself is
 * healthchecks-map.ts; what healthd lacks is listed in docs/guide/coming-from-another-tool.md.
 *
 * A new check goes to the server named by `server` in the body (healthd's own field), else to the token's one
 * server when it is limited to one, else to the server `healthchecks` (made with the first check).
 */
import { z } from "zod";
import type { Logger } from "../platform/log.ts";
import type { HeartbeatCheck, ScheduleChange } from "../domain/model.ts";
import { serverDocument, serviceDocument } from "../domain/schema/index.ts";
import { dueAt, shown, upstreamRefs } from "../status/shown.ts";
import type { Store, StoredService } from "../store/store.ts";
import { validate } from "../domain/validate.ts";
import type { Authenticate, Principal } from "./access.ts";
import { channelUuid, checkDict, flipDicts, freeId, hcDefaults, hcStatus, hcTags, heartbeatInput, isPing, matchesUnique, pingDicts, readSpec, slugify, uniqueKey, type HcSpec, type HcVersion } from "./healthchecks-map.ts";
import { HttpError } from "./problem.ts";
import type { Operation, Request, Response, Route } from "./router.ts";
import { refusable } from "./services.ts";

export interface HealthchecksContext {
  readonly store: Store;
  readonly now: () => number;
  /** Told of every write before its answer is sent, so the scheduler follows it at once. */
  readonly scheduleChanged: (change: ScheduleChange) => Promise<void>;
  /** Who a request is (access.ts); absent: everyone is admin, as for the rest of the API. */
  readonly authenticate?: Authenticate | undefined;
  /** The daemon's public URL (--public-url) for the URLs in answers; else the request's Host. */
  readonly publicUrl?: string | null | undefined;
  /** Where who changed what is said (the router says it of the operations it authenticates, not of these). */
  readonly log?: Logger | undefined;
}

/** Where a new check goes when neither the body nor the token says (made with the first check). */
export const defaultServer = "healthchecks";

/** The pings HC gives at most (its cap of 1,000): also what n_pings counts up to. */
const pingLimit = 1000;

type Heartbeat = StoredService & { readonly check: HeartbeatCheck & { readonly pingKey: string } };
const isHeartbeat = (s: StoredService): s is Heartbeat => s.check.type === "heartbeat" && typeof s.check.pingKey === "string";

/** An HC answer: JSON as HC sends it (application/json, errors as `{"error": ...}`), open to browsers. */
const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "X-Api-Key" };
const answer = (status: number, body: unknown): Response => ({ status, text: JSON.stringify(body), headers: { ...cors, "content-type": "application/json" } });
const plain = (status: number, text: string): Response => ({ status, text, headers: { ...cors, "content-type": "text/plain; charset=utf-8" } });

/** Thrown to answer HC's way: `{"error": ...}`, or a plain text when `text` (HC's 409 of resume). */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly text = false,
  ) {
    super(error);
  }
}
const notFound = () => new Refusal(404, "not found");

export function healthchecksRoutes(ctx: HealthchecksContext): Route[] {
  const { store } = ctx;
  /** Who each request turned out to be and the check it named, for the log line of a change (not the uuid: a ping key is a secret). */
  const senders = new WeakMap<Request, Principal>();
  const named = new WeakMap<Request, string>();

  /** HC's authorize: the key from X-Api-Key (or a write's body); a read key, or a ping one, may not write. */
  async function principal(req: Request, need: "read" | "write", bodyKey?: unknown): Promise<Principal> {
    const fromBody = need === "write" && req.headers["x-api-key"] === undefined && typeof bodyKey === "string" ? bodyKey : undefined;
    const headers = fromBody === undefined ? req.headers : { ...req.headers, "x-api-key": fromBody };
    // Even where the daemon has no token, as HC always asks one: any web page may send a request here, and
    // these answers carry Access-Control-Allow-Origin: *. A browser sends X-Api-Key, Authorization or a JSON body
    // to another origin only after asking (and is refused), so a key present is this API's client, not a forgery.
    if (typeof headers["x-api-key"] !== "string" && headers.authorization === undefined) throw new Refusal(401, "missing api key");
    let who: Principal;
    try {
      who = ctx.authenticate ? await ctx.authenticate(headers) : { scope: "admin", servers: null, name: "anyone" };
    } catch (error) {
      if (!(error instanceof HttpError && error.status === 401)) throw error;
      const sent = headers["x-api-key"] !== undefined || headers.authorization !== undefined;
      throw new Refusal(401, sent ? "wrong api key" : "missing api key");
    }
    const may = need === "read" ? who.scope !== "ping" : who.scope === "write" || who.scope === "admin";
    if (!may) throw new Refusal(401, "wrong api key");
    senders.set(req, who);
    return who;
  }

  /** The heartbeats `who` may see (of its servers), with what their answers need. */
  async function visible(who: Principal, serverId?: string) {
    const lists = who.servers === null || serverId !== undefined
      ? [await store.services(serverId === undefined ? undefined : { serverId })]
      : await Promise.all(who.servers.map((id) => store.services({ serverId: id })));
    return lists.flat().filter((s): s is Heartbeat => isHeartbeat(s) && (who.servers === null || who.servers.includes(s.serverId)));
  }

  /** HC's check objects of `services`. */
  async function dicts(req: Request, services: readonly Heartbeat[], readOnly: boolean) {
    const now = ctx.now();
    const [upstream, counts] = await Promise.all([
      store.upstream(upstreamRefs(services)),
      Promise.all(services.map(async (s) => (await store.readEntries(s.key, { limit: pingLimit })).entries.filter(isPing).length)),
    ]);
    const base = (ctx.publicUrl ?? `http://${req.headers.host ?? "localhost"}`).replace(/\/+$/, "");
    return services.map((s, i) =>
      checkDict(
        {
          serverId: s.serverId,
          serviceId: s.id,
          name: s.name,
          tags: s.tags,
          check: s.check,
          status: hcStatus(shown(s, upstream, now).status),
          started: s.state?.lastStartAt != null,
          lastPingAt: s.state?.lastPingAt ?? null,
          lastDurationMs: s.state?.lastDurationMs ?? null,
          dueAt: dueAt(s),
          nPings: counts[i]!,
        },
        { readOnly, base, version: version(req) },
      ),
    );
  }
  const dict = async (req: Request, service: Heartbeat, readOnly = false) => (await dicts(req, [service], readOnly))[0]!;

  /** The check a path names, by uuid (or by unique_key where HC takes one), among those `who` sees: else 404. */
  async function find(req: Request, who: Principal, byUniqueKey = false): Promise<Heartbeat> {
    const code = req.params.check!;
    const found = (await visible(who)).find((s) => s.check.pingKey === code || (byUniqueKey && /^[0-9a-f]{40}$/.test(code) && uniqueKey(s.check.pingKey) === code));
    if (!found) throw notFound();
    named.set(req, `${found.serverId}/${found.id}`);
    return found;
  }

  /** A write's JSON body, read before the key as HC does: 400 when it is not JSON, or not an object. */
  async function body(req: Request): Promise<Record<string, unknown>> {
    const raw = await req.body();
    if (raw === undefined) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.text);
    } catch {
      throw new Refusal(400, "could not parse request body");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Refusal(400, "json validation error: value is not an object");
    // A key in the body counts only in a JSON body: a form another site posts (no preflight) could carry one.
    const json = raw.type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(raw.type);
    if (!json) delete (parsed as Record<string, unknown>).api_key;
    return parsed as Record<string, unknown>;
  }

  /** HC's `channels`: "*" all, "" none (healthd: the server's default), else channel ids or names, comma separated. */
  async function channelNames(spec: HcSpec): Promise<readonly string[] | null | undefined> {
    if (spec.channels === undefined) return undefined;
    const names = ["ntfy", ...(await store.channels()).map((c) => c.name)];
    if (spec.channels.trim() === "") return null;
    if (spec.channels.trim() === "*") return names;
    const chosen = spec.channels.split(",").map((part) => {
      const given = part.trim();
      if (given === "") throw new Refusal(400, "empty channel identifier");
      const name = names.find((n) => channelUuid(n) === given.toLowerCase() || n === given);
      if (name === undefined) throw new Refusal(400, `invalid channel identifier: ${given}`);
      return name;
    });
    return [...new Set(chosen)];
  }

  /** Write a heartbeat service (create or change) and answer it; `create` the server too when it is the default one. */
  async function write(serverId: string, input: Record<string, unknown>): Promise<Heartbeat> {
    const parsed = validate(serviceDocument, input);
    if (!parsed.ok) throw new Refusal(400, `json validation error: ${parsed.errors[0]!.path.slice(1).replaceAll("/", ".")} ${parsed.errors[0]!.message}`);
    let schedule: ScheduleChange;
    const put = await refusable(store.putService(serverId, parsed.value, ctx.now()));
    if (put) schedule = put.schedule;
    else if (serverId === defaultServer) {
      // The first check of the default server makes it. Two such first checks at once could replace each other's
      // server: a window of one request, once.
      schedule = (await refusable(store.applyServers(new Map([[serverId, serverDocument.parse({ services: [input] })]]), { now: ctx.now() }))).schedule;
    } else throw new Refusal(400, `no server ${JSON.stringify(serverId)}: create it first (PUT /services/${serverId}), or leave "server" out`);
    await ctx.scheduleChanged(schedule);
    const [service] = await store.services({ serverId, serviceId: input.id as string });
    if (!service || !isHeartbeat(service)) throw new Error(`the service ${serverId}/${String(input.id)} just written is not there`);
    return service;
  }

  /** A stored heartbeat changed as `spec` says (its slug is its id, so it cannot change). */
  async function update(service: Heartbeat, spec: HcSpec): Promise<Heartbeat> {
    if (spec.slug && spec.slug !== service.id) {
      throw new Refusal(400, `json validation error: slug cannot change: in healthd it is the service id (${service.id}); leave slug out or give it as it is`);
    }
    const name = spec.name === undefined ? service.name : spec.name || undefined;
    const check = heartbeatInput(service.check, spec, await channelNames(spec));
    const tags = spec.tags === undefined ? service.tags : hcTags(spec.tags);
    return write(service.serverId, { id: service.id, ...(name === undefined ? {} : { name }), tags, check });
  }

  async function create(req: Request, who: Principal, spec: HcSpec): Promise<Response> {
    const serverId = spec.server ?? (who.servers === null ? defaultServer : who.servers.length === 1 ? who.servers[0]! : undefined);
    if (serverId === undefined) {
      throw new Refusal(400, `token ${JSON.stringify(who.name)} may use several servers (${who.servers!.join(", ")}): say which the check goes to with "server" in the body`);
    }
    if (who.servers !== null && !who.servers.includes(serverId)) throw new Refusal(403, `token ${JSON.stringify(who.name)} may not use server ${serverId}`);
    const own = await visible(who, serverId);
    if ((spec.unique ?? []).length > 0) {
      const all = await dicts(req, own, false);
      const match = own.find((_, i) => matchesUnique(spec, all[i]!));
      if (match) return answer(200, await dict(req, await update(match, spec)));
    }
    // Every service of the server, heartbeat or not, holds its id.
    const taken = new Set((await store.services({ serverId })).map((s) => s.id));
    if (spec.slug && (await store.findService(serverId, spec.slug)).key !== undefined) {
      throw new Refusal(409, `slug ${JSON.stringify(spec.slug)} is already a service's of server ${serverId} (a slug is a service id in healthd, unique in its server); choose another`);
    }
    const id = spec.slug || freeId(slugify(spec.name ?? "") || "check", taken);
    const check = heartbeatInput(hcDefaults, spec, await channelNames(spec));
    return answer(201, await dict(req, await write(serverId, { id, ...(spec.name ? { name: spec.name } : {}), tags: hcTags(spec.tags ?? ""), check })));
  }

  /** Runs `handle`, answering its refusals HC's way; a change made is logged with who made it. */
  const hc = (handle: (req: Request) => Promise<Response>, path: string) => async (req: Request) => {
    try {
      version(req); // an unknown version is 404 before anything else, as HC's URLs have no such path
      const done = await handle(req);
      const who = senders.get(req);
      if (req.method !== "GET" && req.method !== "HEAD" && done.status < 400 && who) {
        const what = named.get(req);
        const where = path.replace(":version", req.params.version!).replace(":check", "{uuid}");
        ctx.log?.info(`${req.method} ${where}${what ? ` (${what})` : ""} by ${who.name}`, { status: done.status });
      }
      return done;
    } catch (error) {
      if (error instanceof Refusal) return error.text ? plain(error.status, error.error) : answer(error.status, { error: error.error });
      if (error instanceof HttpError && error.status < 500) return answer(error.status, { error: error.detail });
      throw error;
    }
  };
  const spec = (body: Record<string, unknown>): HcSpec => {
    const read = readSpec(body);
    if (!read.ok) throw new Refusal(400, read.error);
    return read.spec;
  };
  /** Pause or resume: a PUT of the same check with `paused` changed (and the state healthd keeps left as it is). */
  const setPaused = async (req: Request, paused: boolean): Promise<Response> => {
    const key = (await body(req)).api_key;
    const service = await find(req, await principal(req, "write", key));
    if (!paused && !service.check.paused) throw new Refusal(409, "check is not paused", true);
    const changed = service.check.paused === paused ? service : await write(service.serverId, { id: service.id, name: service.name, tags: service.tags, check: { ...service.check, paused } });
    return answer(200, await dict(req, changed));
  };

  const op = (path: string, summary: string, operationId: string, handle: (req: Request) => Promise<Response>, more: Partial<Operation> = {}): Operation => ({
    summary: `${summary} (Healthchecks.io's API; version v1, v2 or v3; key in X-Api-Key)`,
    operationId,
    // The key is checked here, HC's way (401 with HC's texts), not by the router.
    open: true,
    query: noQuery,
    ...more,
    responses: {
      200: { description: "HC's answer", schema: z.looseObject({}) },
      400: { description: 'Invalid input: `{"error": ...}` with HC\'s text' },
      401: { description: "Missing or wrong api key (a read key on a write endpoint too)" },
      404: { description: "No such check among those the key may see" },
      ...more.responses,
    },
    handle: hc(handle, path),
  });
  const [checks, check, channels] = ["/api/:version/checks", "/api/:version/checks/:check", "/api/:version/channels"];
  const writes = { body: { schema: specSchema, required: false, types: ["*/*"] } };

  return [
    {
      path: checks,
      methods: {
        GET: op(checks, "List the heartbeats the key may see as checks; ?slug= and ?tag= filter", "hcListChecks", async (req) => {
          const who = await principal(req, "read");
          const { tag, slug } = req.query as z.output<typeof listQuery>;
          const services = (await visible(who)).filter((s) => (tag === undefined || s.tags.includes(tag.toLowerCase())) && (slug === undefined || s.id === slug));
          return answer(200, { checks: await dicts(req, services, who.scope === "read") });
        }, { query: listQuery }),
        POST: op(checks, "Create a check (a heartbeat), or update the one matching `unique`", "hcCreateCheck", async (req) => {
          const raw = await body(req);
          const who = await principal(req, "write", raw.api_key);
          return create(req, who, spec(raw));
        }, { ...writes, responses: { 200: { description: "An existing check matched `unique` and was updated" }, 201: { description: "Created" } } }),
      },
    },
    {
      path: check,
      methods: {
        GET: op(check, "A check, by uuid (its ping key) or unique_key", "hcGetCheck", async (req) => {
          const who = await principal(req, "read");
          return answer(200, await dict(req, await find(req, who, true), who.scope === "read"));
        }),
        POST: op(check, "Change a check's fields", "hcUpdateCheck", async (req) => {
          const raw = await body(req);
          const service = await find(req, await principal(req, "write", raw.api_key));
          return answer(200, await dict(req, await update(service, spec(raw))));
        }, writes),
        DELETE: op(check, "Delete a check (the heartbeat service, with its entries)", "hcDeleteCheck", async (req) => {
          const service = await find(req, await principal(req, "write"));
          const last = await dict(req, service);
          const change = await store.deleteService(service.serverId, service.id, ctx.now());
          if (!change) throw notFound();
          await ctx.scheduleChanged(change);
          return answer(200, last);
        }),
      },
    },
    { path: `${check}/pause`, methods: { POST: op(`${check}/pause`, "Pause a check", "hcPauseCheck", (req) => setPaused(req, true), writes) } },
    { path: `${check}/resume`, methods: { POST: op(`${check}/resume`, "Resume a paused check (409 when it is not paused)", "hcResumeCheck", (req) => setPaused(req, false), writes) } },
    {
      path: `${check}/pings`,
      methods: {
        GET: op(`${check}/pings`, "A check's pings kept, newest first (at most 1,000)", "hcListPings", async (req) => {
          const service = await find(req, await principal(req, "write"));
          return answer(200, { pings: pingDicts((await store.readEntries(service.key, { limit: pingLimit })).entries) });
        }),
      },
    },
    {
      path: `${check}/flips`,
      methods: {
        GET: op(`${check}/flips`, "A check's flips (its incidents opening and closing), newest first; ?seconds=, ?start=, ?end=", "hcListFlips", async (req) => {
          const service = await find(req, await principal(req, "read"), true);
          const window = flipWindow(req.query as z.output<typeof flipsQuery>, ctx.now());
          if (!window) return plain(400, "");
          const { incidents } = await store.incidents({ serverId: service.serverId, serviceId: service.id, limit: 1000 });
          return answer(200, { flips: flipDicts(incidents, window) });
        }, { query: flipsQuery }),
      },
    },
    {
      path: channels,
      methods: {
        GET: op(channels, "The channels, as HC's integrations (id, name, kind)", "hcListChannels", async (req) => {
          await principal(req, "write");
          const stored = (await store.channels()).map((c) => ({ id: channelUuid(c.name), name: c.name, kind: c.doc.type }));
          return answer(200, { channels: [{ id: channelUuid("ntfy"), name: "ntfy", kind: "ntfy" }, ...stored] });
        }),
      },
    },
  ];
}

// HC's clients may send parameters HC ignores: they are let through, unread.
const noQuery = z.looseObject({});
const listQuery = z.looseObject({
  tag: z.string().optional().describe("A tag the checks must carry (compared lowercased, as healthd keeps them)"),
  slug: z.string().optional().describe("The check's slug (its service id)"),
});
const flipsQuery = z.looseObject({
  seconds: z.string().optional().describe("Only flips of the last this many seconds (0 to 31536000)"),
  start: z.string().optional().describe("Only flips at or after this Unix time (seconds)"),
  end: z.string().optional().describe("Only flips before this Unix time (seconds)"),
});

/** The version of HC's API a request's path names (v1, v2, v3); else 404, as for a path HC does not have. */
function version(req: Request): HcVersion {
  const match = /^v([123])$/.exec(req.params.version ?? "");
  if (!match) throw new Refusal(404, "not found");
  return Number(match[1]) as HcVersion;
}

/** HC's flips filters: `seconds` (0 to a year) back from now, `start` and `end` (Unix seconds); undefined when one is bad. */
function flipWindow(q: z.output<typeof flipsQuery>, now: number): { start: number; end: number } | undefined {
  const read = (value: string | undefined, max: number) => (value === undefined ? null : /^[0-9]+$/.test(value) && Number(value) <= max ? Number(value) : undefined);
  const [seconds, start, end] = [read(q.seconds, 31_536_000), read(q.start, 10_000_000_000), read(q.end, 10_000_000_000)];
  if (seconds === undefined || start === undefined || end === undefined) return undefined;
  // HC reads 0 as not given.
  return { start: Math.max(start ? start * 1000 : -Infinity, seconds ? now - seconds * 1000 : -Infinity), end: end ? end * 1000 : Infinity };
}

/** The body of create and update as the OpenAPI document describes it (read by readSpec, with HC's own texts). */
const specSchema = z.looseObject({
  name: z.string().max(100).optional(),
  slug: z.string().max(100).optional().describe("The service id of a new check; it cannot change"),
  tags: z.string().optional().describe("Space-separated tags: the service's tags, lowercased; left out on update, kept as they are"),
  desc: z.string().optional().describe("Accepted, not kept"),
  timeout: z.number().min(60).max(31_536_000).optional().describe("Seconds between pings: the heartbeat's periodSeconds"),
  grace: z.number().min(60).max(31_536_000).optional().describe("Seconds: graceSeconds"),
  schedule: z.string().optional().describe("A 5-field cron expression"),
  tz: z.string().optional(),
  manual_resume: z.boolean().optional().describe("The heartbeat's manualResume: a ping does not resume it when paused"),
  methods: z.enum(["", "POST"]).optional().describe("Accepted, not kept"),
  channels: z.string().optional().describe('"*" all, "" the default, or channel ids or names, comma separated'),
  unique: z.array(z.enum(["name", "slug", "tags", "timeout", "grace"])).optional(),
  server: z.string().optional().describe("healthd's own: the server a new check goes to"),
  api_key: z.string().optional(),
});
