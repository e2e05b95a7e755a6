/**
 * Uptime Kuma's push URL, so that a job written for a Kuma push monitor moves to healthd by changing only its
 * base URL: `GET|POST /api/push/{pushToken}?status=up|down&msg=&ping=` pings the heartbeat whose `pushToken`
 * it is. Answered as Kuma's server/routers/api-router.js answers, byte for byte: `{"ok":true}`, or 404
 * `{"ok":false,"msg":...}` for an unknown token, a paused heartbeat or a ping out of range. `status` other
 * than `up` is a failure; `msg` (default OK) is kept as the ping's body; `ping` as its latency (Kuma's
 * parseFloat, 0 or none: no latency). As with /ping, `{"ok":true}` means committed.
 */
import { z } from "zod";
import type { Clock } from "../platform/clock.ts";
import type { Ping } from "../domain/batch.ts";
import { RunGone } from "../runtime/recorder.ts";
import { StoreUnavailable } from "../store/errors.ts";
import { pingBodyLimit, pingLimiter, type PingBuckets } from "./ping.ts";
import type { Request, Response, Route } from "./router.ts";

export interface CompatContext {
  /** The ping key of the heartbeat a Kuma push token or a Gatus key names, if any. */
  readonly pingKeyBy: (kind: "push" | "gatus", value: string) => string | undefined;
  /** The server and pause of the heartbeat of a ping key, if there is one. */
  readonly heartbeat: (pingKey: string) => { readonly serverId: string; readonly paused: boolean } | undefined;
  /** Store a ping, as /ping does: resolves once committed (false: gone), rejects when it cannot be stored. */
  readonly ping: (pingKey: string, ping: Ping, at: number) => Promise<boolean>;
  readonly clock: Clock;
}

/** Kuma's largest ping, in ms (it fits both of its engines' columns). */
const maxPingMs = 100_000_000_000;

const kuma = (status: number, body: { ok: true } | { ok: false; msg: string }, headers: Record<string, string> = {}): Response => ({
  status,
  // Express's res.json: no newline after it.
  text: JSON.stringify(body),
  headers: { "content-type": "application/json; charset=utf-8", ...headers },
});

const notFound = () => kuma(404, { ok: false, msg: "Monitor not found or not active." });

const pushQuery = z.looseObject({
  status: z.string().optional().describe("up (the default) for a success; anything else is a failure"),
  msg: z.string().optional().describe("Kept as the ping's body (default OK)"),
  ping: z.string().optional().describe("The job's own latency in ms, 0 to 100000000000"),
});

export function kumaPushRoutes(ctx: CompatContext, buckets: PingBuckets): Route[] {
  const allowed = pingLimiter(buckets);
  const handle = async (req: Request): Promise<Response> => {
    const { status, msg, ping } = req.query as z.output<typeof pushQuery>;
    // Kuma's own reading: parseFloat, and a 0 or NaN is no latency; the range is checked before the token.
    const latencyMs = Number.parseFloat(ping ?? "") || null;
    if (latencyMs !== null && (latencyMs < 0 || latencyMs > maxPingMs)) {
      return kuma(404, { ok: false, msg: `Invalid ping value. Must be between 0 and ${maxPingMs} ms.` });
    }
    const pingKey = ctx.pingKeyBy("push", req.params.pushToken!);
    // Kuma finds only active monitors: a paused heartbeat is not found, as a paused Kuma monitor is not.
    if (pingKey === undefined || ctx.heartbeat(pingKey)?.paused !== false) return notFound();
    const now = ctx.clock.now();
    if (!allowed(pingKey, now)) return kuma(429, { ok: false, msg: "Too many pushes for this token; slow down." }, { "retry-after": "1" });
    const body = Buffer.from(msg || "OK").subarray(0, pingBodyLimit).toString("utf8");
    const signal = (status || "up") === "up" ? "success" : "fail";
    try {
      if (!(await ctx.ping(pingKey, { signal, exitCode: null, body, runId: null, latencyMs }, now))) return notFound();
    } catch (error) {
      if (error instanceof RunGone) return notFound();
      // Kuma answers every other failure so; the job's curl sees it was not taken. The daemon's log has the
      // error; an unauthenticated sender gets its code only, as a ping's does.
      const why = error instanceof StoreUnavailable ? ` (${error.code})` : "";
      return kuma(404, { ok: false, msg: `The push could not be stored${why}; send it again.` });
    }
    return kuma(200, { ok: true });
  };
  const operation = (summary: string, operationId: string) => ({
    summary,
    operationId,
    open: true,
    query: pushQuery,
    responses: {
      200: { description: 'Stored: {"ok":true}', contentType: "application/json" },
      404: { description: 'No heartbeat has this push token, it is paused, the ping is out of range, or the push could not be stored: {"ok":false,"msg":...}' },
      429: { description: "Too many pings for this heartbeat" },
    },
    handle,
  });
  return [
    {
      path: "/api/push/:pushToken",
      methods: {
        GET: operation("Uptime Kuma's push URL: ping the heartbeat with this pushToken (HEAD too)", "kumaPush"),
        POST: operation("Uptime Kuma's push URL, by POST (the body is not read)", "kumaPushByPost"),
      },
    },
  ];
}
