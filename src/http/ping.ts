/**
 * The ping URLs of heartbeats, Healthchecks.io's, so that a job moves to healthd by changing only its base URL:
 * `/ping/{key}` success, `/start`, `/fail`, `/log`, `/{exitCode}`, with `?rid=` to pair a start with its
 * finish; and its slug URLs, `/ping/{serverPingKey}/{serviceId}[/signal]`, with `?create=1` to make the
 * heartbeat when its server allows it (autoProvision). The keys are the secret: no token is needed. A ping may
 * instead name its heartbeat, `/ping/{serverId}/{serviceId}[/signal]`, with a token that may ping that server
 * (a ping, write or admin token). Answers are plain text, Healthchecks.io's words (`OK`, `Created`,
 * `not found`, `invalid url format`, `invalid uuid format`), each with `Ping-Body-Limit`,
 * `Access-Control-Allow-Origin: *` and a Cache-Control that keeps it from every cache; a POST body is kept,
 * its first 10,000 bytes (the rest, up to 10 MiB, is read and dropped), with the method, user agent, address
 * and scheme it came with. `OK` means stored: a ping is answered once the batch holding it commits (pings of
 * one moment share a commit); one that cannot be stored is 503 with Retry-After, and forgotten (its sender
 * retries). Each known key is limited to a rate well above any job's; an unknown key leaves nothing behind. */
import { z } from "zod";
import type { Clock } from "../platform/clock.ts";
import type { Ping } from "../domain/batch.ts";
import { pingBodyLimit } from "../domain/ping.ts";
import { RunGone } from "../runtime/recorder.ts";
import { StoreUnavailable } from "../store/errors.ts";
import { bearer, permitScope, permitServer } from "./access.ts";
import { HttpError } from "./problem.ts";
import type { Request, Response, Route } from "./router.ts";

export interface PingContext {
  /** Whether a heartbeat has `pingKey` (asked before anything is kept about the key). */
  readonly knows: (pingKey: string) => boolean;
  /**
   * Store a ping for the heartbeat of `pingKey`: resolves once committed (false when none has the key),
   * rejects when it cannot be stored (RunGone: the heartbeat was deleted meanwhile).
   */
  readonly ping: (pingKey: string, ping: Ping, at: number) => Promise<boolean>;
  /** The ping key of the heartbeat `serverId/serviceId`, for pings by name and by slug; undefined when it is none. */
  readonly pingKeyOf: (serverId: string, serviceId: string) => string | undefined;
  /** The server whose ping key (the first segment of a slug URL) this is, if any. */
  readonly serverOf: (serverPingKey: string) => Promise<string | undefined>;
  /**
   * Make the heartbeat `serverId/serviceId` from its server's heartbeatDefaults (a slug URL's `?create=1`):
   * its ping key, or undefined when the server does not allow it (autoProvision false).
   */
  readonly provision: (serverId: string, serviceId: string) => Promise<string | undefined>;
  /** Whether an X-Forwarded-For or X-Forwarded-Proto header from this peer address is believed (serve --trust-proxy). */
  readonly trusted: (address: string) => boolean;
  readonly clock: Clock;
}

export { pingBodyLimit };

/** The largest ping body read (its first pingBodyLimit bytes kept) rather than refused with 413. */
export const pingBodyMax = 10 * 1024 * 1024;

/** A user agent is kept to this many characters, as Healthchecks.io keeps it. */
const userAgentLimit = 200;

/** Pings a key may send: a burst of this many, then this many a second. */
const burst = 200;
const perSecond = 100;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Every ping answer's headers: a browser's fetch may read it (Access-Control-Allow-Origin), and no cache keeps
 * it (Healthchecks.io's clients and tests look for `no-cache`; `no-store` is what keeps a proxy from answering).
 */
const pingHeaders = {
  "content-type": "text/plain; charset=utf-8",
  "ping-body-limit": String(pingBodyLimit),
  "access-control-allow-origin": "*",
  "cache-control": "no-cache, no-store",
} as const;

// The bodies Healthchecks.io answers, word for word (no newline): its clients compare them.
const text = (status: number, body: string, headers: Record<string, string> = {}): Response => ({ status, text: body, headers: { ...pingHeaders, ...headers } });
const notFound = () => text(404, "not found");
/**
 * A ping not stored, and not kept to be stored later: the sender retries, and is told when. The daemon's log
 * has the error; an unauthenticated sender gets its code only.
 */
const unstored = (error: unknown) => {
  const why = error instanceof StoreUnavailable ? `the database cannot take it now (${error.code})` : "the database refused it";
  return text(503, `the ping was not stored: ${why}; nothing was kept, send it again\n`, { "retry-after": "1" });
};
const badUrl = () => text(400, "invalid url format");

// Other query parameters (Healthchecks.io's clients may send some) are let through, unread.
const pingQuery = z.looseObject({
  rid: z.string().optional().describe("A UUID that pairs a start with its finish when runs overlap"),
  create: z.string().optional().describe("1 on a slug URL: make the heartbeat when its server has autoProvision (201 Created)"),
});

/** The rate limit's state: a token bucket per known key that pinged lately (its size is a metric). */
export type PingBuckets = Map<string, { tokens: number; at: number }>;

/** Where a ping goes: a heartbeat's key (or none found), the signal word after it, and how it was named. */
interface Target {
  readonly key: string | undefined;
  readonly word: string | undefined;
  /** A slug URL's server and slug (a service id), when the heartbeat may be made by `?create=1`. */
  readonly slug?: { readonly serverId: string; readonly serviceId: string };
}

/** A signal word: start, fail, log, or an exit code (0 success, 1 to 255 a failure; above, "too big"); undefined when it is none. */
function signalOf(word: string | undefined): Pick<Ping, "signal" | "exitCode"> | "too big" | undefined {
  if (word === undefined) return { signal: "success", exitCode: null };
  if (word === "start" || word === "fail" || word === "log") return { signal: word, exitCode: null };
  if (!/^[0-9]+$/.test(word)) return undefined;
  const code = Number(word);
  return code > 255 ? "too big" : { signal: "exit", exitCode: code };
}

/**
 * Whether a heartbeat's key may ping now: a token bucket per key, shared by every URL that pings it (full
 * buckets are forgotten when there are many).
 */
export function pingLimiter(buckets: PingBuckets): (pingKey: string, now: number) => boolean {
  return (pingKey, now) => {
    const bucket = buckets.get(pingKey) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens--;
    buckets.set(pingKey, bucket);
    if (buckets.size > 10_000) for (const [key, b] of buckets) if (b.tokens >= burst - 1) buckets.delete(key);
    return true;
  };
}

export function pingRoutes(ctx: PingContext, buckets: PingBuckets = new Map()): Route[] {
  const allowed = pingLimiter(buckets);

  /**
   * The heartbeat a request names. `/ping/{a}[/{b}[/{c}]]`: `a` a heartbeat's ping key (b the signal); else a
   * server's ping key (b a service id, the slug; c the signal); else, with a token that may ping it, a
   * server id (b a service id; c the signal). Anything else is not found: a 401 would tell a job that guessed
   * nothing more, and Healthchecks.io's clients retry a 404 as they would a 401 (not at all).
   */
  const target = async (req: Request): Promise<Target | Response> => {
    const params = req.params as Partial<Record<"key" | "signal" | "serverId" | "serviceId", string>>;
    const [a, b, c] = params.serverId === undefined ? [params.key!, params.signal, undefined] : [params.serverId, params.serviceId!, params.signal];
    if (b === undefined || (c === undefined && (ctx.knows(a) || (uuid.test(a) && bearer(req.headers) === undefined)))) return { key: a, word: b };
    const serverId = await ctx.serverOf(a);
    if (serverId !== undefined) {
      const key = ctx.pingKeyOf(serverId, b);
      // Healthchecks.io's slugs are lower case: one with a capital that names no service is a bad URL there.
      if (key === undefined && /[A-Z]/.test(b)) return badUrl();
      return { key, word: c, slug: { serverId, serviceId: b } };
    }
    if (bearer(req.headers) === undefined) return notFound();
    const who = await req.principal();
    const what = `a ping of ${a}/${b}`;
    permitScope(who, "ping", what);
    permitServer(who, a, what);
    return { key: ctx.pingKeyOf(a, b), word: c };
  };

  /** What the request says of its sender, kept with the ping (X-Forwarded-* only from a trusted proxy). */
  const senderOf = (req: Request): Pick<Ping, "method" | "userAgent" | "remoteAddr" | "scheme"> => {
    const peer = req.remoteAddress ?? null;
    const proxied = peer !== null && ctx.trusted(peer);
    const forwarded = proxied ? forwardedFor(req.headers["x-forwarded-for"]) : null;
    const proto = proxied ? req.headers["x-forwarded-proto"] : undefined;
    return {
      method: req.method,
      userAgent: (req.headers["user-agent"] ?? "").slice(0, userAgentLimit),
      remoteAddr: forwarded ?? (peer === null ? null : unmapped(peer)),
      scheme: typeof proto === "string" && /^https?$/i.test(proto.trim()) ? proto.trim().toLowerCase() : req.encrypted ? "https" : "http",
    };
  };

  const handle = async (req: Request): Promise<Response> => {
    const found = await target(req);
    if (!("key" in found)) return found;
    const { word, slug } = found;
    let { key } = found;
    const { rid, create } = req.query as z.output<typeof pingQuery>;
    // Healthchecks.io's order: the heartbeat first (404), then the exit code and the rid (400).
    let created = false;
    if ((key === undefined || !ctx.knows(key)) && slug !== undefined && create === "1") {
      try {
        key = await ctx.provision(slug.serverId, slug.serviceId);
      } catch (error) {
        if (error instanceof StoreUnavailable) return unstored(error);
        throw error;
      }
      created = key !== undefined;
    }
    // An unknown key is answered before anything is kept about it: a bucket each would let anyone fill memory.
    if (key === undefined || !ctx.knows(key)) return notFound();
    const signal = signalOf(word);
    if (signal === undefined) return notFound();
    if (signal === "too big") return badUrl();
    if (rid !== undefined && !uuid.test(rid)) return text(400, "invalid uuid format");
    const now = ctx.clock.now();
    if (!allowed(key, now)) return text(429, "too many pings for this key; slow down\n", { "retry-after": "1" });
    const body = req.method === "POST" ? await req.body() : undefined;
    const kept = body === undefined ? null : Buffer.from(body.text).subarray(0, pingBodyLimit).toString("utf8");
    const ping: Ping = { ...signal, body: kept, runId: rid?.toLowerCase() ?? null, ...senderOf(req) };
    try {
      if (!(await ctx.ping(key, ping, now))) return notFound();
    } catch (error) {
      if (error instanceof RunGone) return notFound();
      return unstored(error);
    }
    return created ? text(201, "Created") : text(200, "OK");
  };

  /** Every ping answer carries the ping headers, a problem (401, 403, 413) too. */
  const handled = async (req: Request): Promise<Response> => {
    try {
      return await handle(req);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      throw new HttpError(error.status, error.detail, error.errors, { ...error.headers, "access-control-allow-origin": "*", "cache-control": pingHeaders["cache-control"] });
    }
  };

  const operation = (summary: string, operationId: string) => ({
    summary,
    operationId,
    open: true,
    query: pingQuery,
    body: { schema: z.string(), required: false, types: ["*/*"], maxBytes: pingBodyMax, keepBytes: pingBodyLimit },
    responses: {
      200: { description: "OK", contentType: "text/plain" },
      201: { description: "Created: a slug URL's `?create=1` made the heartbeat (its server has autoProvision)", contentType: "text/plain" },
      400: { description: "An exit code above 255 (`invalid url format`), or a rid that is not a UUID (`invalid uuid format`)" },
      401: { description: "A ping by name with an unknown token" },
      403: { description: "A ping by name with a token that may not ping that server" },
      404: { description: "`not found`: no heartbeat has this key (or this slug, or this name), or the signal word is none of start, fail, log, 0 to 255" },
      429: { description: "Too many pings for this key" },
      503: { description: "The ping could not be stored (the database is unavailable); send it again after Retry-After" },
    },
    handle: handled,
  });
  return [
    {
      path: "/ping/:serverId/:serviceId/:signal",
      methods: {
        GET: operation("A heartbeat by its server's ping key and its id (a slug URL, /ping/{serverPingKey}/{serviceId}/{signal}), or by server and service with a ping token: start, fail, log, or an exit code (HEAD too)", "pingNamedSignal"),
        POST: operation("The same with the job's output as the body", "pingNamedSignalWithBody"),
      },
    },
    {
      path: "/ping/:key",
      methods: {
        GET: operation("A heartbeat's job succeeded (HEAD too)", "pingSuccess"),
        POST: operation("A heartbeat's job succeeded, with its output as the body", "pingSuccessWithBody"),
      },
    },
    {
      path: "/ping/:key/:signal",
      methods: {
        GET: operation(
          "A heartbeat's job started, failed, logged, or exited with a code: start, fail, log, or 0 to 255 (HEAD too); /ping/{serverPingKey}/{serviceId} (a slug URL), or with a ping token /ping/{serverId}/{serviceId}: it succeeded",
          "pingSignal",
        ),
        POST: operation("The same with the job's output as the body", "pingSignalWithBody"),
      },
    },
  ];
}

/** The first address of an X-Forwarded-For header, without a port (`1.1.1.1:1234`), as Healthchecks.io reads it. */
function forwardedFor(header: string | string[] | undefined): string | null {
  const first = (Array.isArray(header) ? header[0] : header)?.split(",")[0]?.trim();
  if (!first) return null;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(first);
  return (withPort ? withPort[1]! : first).slice(0, 100);
}

/** A socket's IPv4 address as IPv4 (Node says ::ffff:127.0.0.1 on a dual-stack socket). */
const unmapped = (address: string) => address.replace(/^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/, "$1");
