/**
 * Gatus's external-endpoint API, so that a job written for a Gatus external endpoint moves to healthd by
 * changing only its base URL (and its token): `POST /api/v1/endpoints/{key}/external?success=true|false
 * &error=&duration=` with `Authorization: Bearer <token>` pings the heartbeat whose `gatusKey` is the key
 * (compared lower-cased, as Gatus does). The token is a healthd token that may ping the heartbeat's server
 * (scope ping or above). Answered as Gatus's api/external_endpoint.go answers, in its order and words (plain
 * text): a bad `success` is 400 before any token is looked at, an unknown key 404 before the token is.
 * `error` is kept as the body of a failure; `duration` (a Go duration) as the latency.
 */
import { z } from "zod";
import { RunGone } from "../runtime/recorder.ts";
import { permitScope, permitServer } from "./access.ts";
import type { CompatContext } from "./kuma-push.ts";
import { pingBodyLimit, pingLimiter, type PingBuckets } from "./ping.ts";
import { HttpError } from "./problem.ts";
import type { Request, Response, Route } from "./router.ts";

const text = (status: number, body: string, headers: Record<string, string> = {}): Response => ({
  status,
  text: body,
  headers: { "content-type": "text/plain; charset=utf-8", ...headers },
});

const externalQuery = z.looseObject({
  success: z.string().optional().describe("true or false, exactly: whether the job succeeded"),
  error: z.string().optional().describe("With success=false: what went wrong (kept as the ping's body)"),
  duration: z.string().optional().describe("How long the job took, a Go duration such as 300ms or 1m30s (kept as the latency)"),
});

const units: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A Go duration (time.ParseDuration) in ms, or Go's error text for one it refuses: `[-+]?([0-9]*(\.[0-9]*)?
 * unit)+`, or `0`.
 */
export function goDuration(text: string): { ok: true; ms: number } | { ok: false; error: string } {
  const invalid = { ok: false, error: `time: invalid duration ${JSON.stringify(text)}` } as const;
  let s = text;
  const negative = s.startsWith("-");
  if (s.startsWith("-") || s.startsWith("+")) s = s.slice(1);
  if (s === "0") return { ok: true, ms: 0 };
  if (s === "") return invalid;
  let ns = 0;
  while (s !== "") {
    const number = /^([0-9]*)(?:\.([0-9]*))?/.exec(s)!;
    if (number[0] === "" || (number[1] === "" && !number[2])) return invalid;
    s = s.slice(number[0].length);
    const unit = /^[^0-9.]*/.exec(s)![0];
    if (unit === "") return { ok: false, error: `time: missing unit in duration ${JSON.stringify(text)}` };
    const scale = units[unit];
    if (scale === undefined) return { ok: false, error: `time: unknown unit ${JSON.stringify(unit)} in duration ${JSON.stringify(text)}` };
    s = s.slice(unit.length);
    ns += Number(`${number[1] || "0"}.${number[2] || "0"}`) * scale * 1e6;
    if (ns > 9_223_372_036_854_775_807) return invalid; // past an int64 of nanoseconds
  }
  return { ok: true, ms: (negative ? -ns : ns) / 1e6 };
}

export function gatusExternalRoutes(ctx: CompatContext, buckets: PingBuckets): Route[] {
  const allowed = pingLimiter(buckets);
  const handle = async (req: Request): Promise<Response> => {
    const { success, error, duration } = req.query as z.output<typeof externalQuery>;
    if (success !== "true" && success !== "false") return text(400, "missing or invalid success query parameter");
    const authorization = req.headers.authorization ?? "";
    if (!authorization.startsWith("Bearer ")) return text(401, "invalid Authorization header");
    if (authorization.slice("Bearer ".length).trim() === "") return text(401, "bearer token must not be empty");
    const key = req.params.key!.toLowerCase();
    const pingKey = ctx.pingKeyBy("gatus", key);
    const heartbeat = pingKey === undefined ? undefined : ctx.heartbeat(pingKey);
    if (pingKey === undefined || heartbeat === undefined) return text(404, "not found");
    try {
      const who = await req.principal();
      const what = `a result of Gatus external endpoint ${key}`;
      permitScope(who, "ping", what);
      permitServer(who, heartbeat.serverId, what);
    } catch (refused) {
      // Gatus has one answer for a token that is not the endpoint's: unknown, or one that may not ping it.
      if (refused instanceof HttpError && (refused.status === 401 || refused.status === 403)) return text(401, "invalid token");
      throw refused;
    }
    const took = duration ? goDuration(duration) : ({ ok: true, ms: 0 } as const);
    if (!took.ok) return text(400, `invalid duration: ${took.error}`);
    const now = ctx.clock.now();
    if (!allowed(pingKey, now)) return text(429, "too many results for this endpoint; slow down", { "retry-after": "1" });
    // Gatus keeps the error of a failure only; a negative duration (Go takes it) is no latency.
    const body = success === "false" && error ? Buffer.from(error).subarray(0, pingBodyLimit).toString("utf8") : null;
    const ping = { signal: success === "true" ? "success" : "fail", exitCode: null, body, runId: null, latencyMs: Math.max(0, took.ms) } as const;
    try {
      if (!(await ctx.ping(pingKey, ping, now))) return text(404, "endpoint not found");
    } catch (failure) {
      if (failure instanceof RunGone) return text(404, "endpoint not found");
      return text(500, (failure as Error).message);
    }
    return text(200, "");
  };
  return [
    {
      path: "/api/v1/endpoints/:key/external",
      methods: {
        POST: {
          summary: "Gatus's external-endpoint URL: a result for the heartbeat with this gatusKey, with a token that may ping it",
          operationId: "gatusExternalEndpointResult",
          // Open to the router: the handler answers as Gatus does, in Gatus's order (a bad success before a token).
          open: true,
          query: externalQuery,
          responses: {
            200: { description: "Stored (an empty body)", contentType: "text/plain" },
            400: { description: "success is not true or false, or duration is not a Go duration" },
            401: { description: "No Bearer token, an empty one, or one that may not ping this heartbeat" },
            404: { description: "No heartbeat has this gatusKey" },
            429: { description: "Too many results for this heartbeat" },
            500: { description: "The result could not be stored; send it again" },
          },
          handle,
        },
      },
    },
  ];
}
