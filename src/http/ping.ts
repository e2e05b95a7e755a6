/**
 * The ping URLs of heartbeats, compatible with Healthchecks.io's, so that a job moves to healthd by changing
 * only its base URL: `/ping/{key}` success, `/start`, `/fail`, `/log`, `/{exitCode}`; HEAD, GET or POST, with
 * `?rid=` to pair a start with its finish. The key is the secret: no token is needed. A ping may instead name
 * its heartbeat, `/ping/{serverId}/{serviceId}[/signal]`, with a token that may ping that server (a ping,
 * write or admin token): a request that sends a token is read that way. Answers are plain text as
 * Healthchecks.io's are (`OK`, `not found`), each with `Ping-Body-Limit`; a POST body is kept, its first 10,000
 * bytes (the rest, up to 10 MiB, is read and dropped). `OK` means stored: a ping is answered once the batch
 * holding it commits (pings of one moment share a commit); one that cannot be stored is 503 with Retry-After,
 * and forgotten (its sender retries). Each known key is limited to a rate well above any job's; an unknown
 * key leaves nothing behind.
 */
import { z } from "zod";
import type { Clock } from "../platform/clock.ts";
import type { Ping } from "../domain/batch.ts";
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
  /** The ping key of the heartbeat `serverId/serviceId`, for pings by name; undefined when it is none. */
  readonly pingKeyOf: (serverId: string, serviceId: string) => string | undefined;
  readonly clock: Clock;
}

/** What a ping's body may keep, in bytes. */
export const pingBodyLimit = 10_000;

/** The largest ping body read (its first pingBodyLimit bytes kept) rather than refused with 413. */
export const pingBodyMax = 10 * 1024 * 1024;

/** Pings a key may send: a burst of this many, then this many a second. */
const burst = 200;
const perSecond = 100;

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const text = (status: number, body: string, headers: Record<string, string> = {}): Response => ({
  status,
  text: body,
  headers: { "content-type": "text/plain; charset=utf-8", "ping-body-limit": String(pingBodyLimit), ...headers },
});

// Other query parameters (Healthchecks.io's clients may send some) are let through, unread.
const pingQuery = z.looseObject({ rid: z.string().optional().describe("A UUID that pairs a start with its finish when runs overlap") });

/** The rate limit's state: a token bucket per known key that pinged lately (its size is a metric). */
export type PingBuckets = Map<string, { tokens: number; at: number }>;

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

  /** The ping key and signal word a request names: by key, or by name with a token. */
  const target = async (req: Request): Promise<{ key: string | undefined; word: string | undefined }> => {
    const { key, signal, serverId, serviceId } = req.params as Partial<Record<"key" | "signal" | "serverId" | "serviceId", string>>;
    if (serverId === undefined && (signal === undefined || (bearer(req.headers) === undefined && uuid.test(key!)))) return { key: key!, word: signal };
    // By name: /ping/{serverId}/{serviceId}[/{signal}], with a token (ping keys are UUIDs: without a token, a
    // first segment that is none is a name whose token was forgotten).
    const [server, service, word] = serverId === undefined ? [key!, signal!, undefined] : [serverId, serviceId!, signal];
    if (bearer(req.headers) === undefined) {
      throw new HttpError(401, `a ping by server and service name (${server}/${service}) needs a token that may ping: send Authorization: Bearer <token>`);
    }
    const who = await req.principal();
    const what = `a ping of ${server}/${service}`;
    permitScope(who, "ping", what);
    permitServer(who, server, what);
    return { key: ctx.pingKeyOf(server, service), word };
  };

  const handle = async (req: Request): Promise<Response> => {
    const { key, word } = await target(req);
    const { rid } = req.query as z.output<typeof pingQuery>;
    let signal: Ping["signal"] = "success";
    let exitCode: number | null = null;
    if (word === "start" || word === "fail" || word === "log") signal = word;
    else if (word !== undefined) {
      if (!/^[0-9]{1,3}$/.test(word) || Number(word) > 255) return text(400, "invalid exit code: use 0 to 255, or start, fail or log\n");
      signal = "exit";
      exitCode = Number(word);
    }
    if (rid !== undefined && !uuid.test(rid)) return text(400, "invalid rid: it must be a UUID\n");
    // An unknown key is answered before anything is kept about it: a bucket each would let anyone fill memory.
    if (key === undefined || !ctx.knows(key)) return text(404, "not found\n");
    const now = ctx.clock.now();
    if (!allowed(key, now)) return text(429, "too many pings for this key; slow down\n", { "retry-after": "1" });
    const body = req.method === "POST" ? await req.body() : undefined;
    const kept = body === undefined ? null : Buffer.from(body.text).subarray(0, pingBodyLimit).toString("utf8");
    try {
      if (!(await ctx.ping(key, { signal, exitCode, body: kept, runId: rid?.toLowerCase() ?? null }, now))) return text(404, "not found\n");
    } catch (error) {
      if (error instanceof RunGone) return text(404, "not found\n");
      // Not stored, and not kept to be stored later: the sender retries, and is told when. The daemon's log
      // has the error; an unauthenticated sender gets its code only.
      const why = error instanceof StoreUnavailable ? `the database cannot take it now (${error.code})` : "the database refused it";
      return text(503, `the ping was not stored: ${why}; nothing was kept, send it again\n`, { "retry-after": "1" });
    }
    return text(200, "OK");
  };

  const operation = (summary: string, operationId: string) => ({
    summary,
    operationId,
    open: true,
    query: pingQuery,
    body: { schema: z.string(), required: false, types: ["*/*"], maxBytes: pingBodyMax, keepBytes: pingBodyLimit },
    responses: {
      200: { description: "OK", contentType: "text/plain" },
      400: { description: "A bad exit code or rid" },
      401: { description: "A ping by name without a token, or with an unknown one" },
      403: { description: "A ping by name with a token that may not ping that server" },
      404: { description: "No heartbeat has this key (or this name)" },
      429: { description: "Too many pings for this key" },
      503: { description: "The ping could not be stored (the database is unavailable); send it again after Retry-After" },
    },
    handle,
  });
  return [
    {
      path: "/ping/:serverId/:serviceId/:signal",
      methods: {
        GET: operation("A heartbeat named by server and service, with a ping token: start, fail, log, or an exit code (HEAD too)", "pingNamedSignal"),
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
          "A heartbeat's job started, failed, logged, or exited with a code: start, fail, log, or 0 to 255 (HEAD too); with a ping token, /ping/{serverId}/{serviceId}: it succeeded",
          "pingSignal",
        ),
        POST: operation("The same with the job's output as the body", "pingSignalWithBody"),
      },
    },
  ];
}
