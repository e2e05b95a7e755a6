/**
 * An ICMP check: echo requests to a host (IPv4 or IPv6), judged by how many came back and how fast. healthd
 * sends them on one ICMP datagram socket, or through the system's `ping` (iputils) where the system gives it
 * none: see checks/icmp.ts.
 */
import { z } from "zod";
import { integer } from "./common.ts";
import { host } from "./tcp.ts";

export const icmpFields = {
  host,
  count: integer(1, 10, 3).default(3),
  // The share of echoes that may go unanswered before the check fails (0: every one must come back).
  maxLossPercent: integer(0, 100, 0).default(0),
  // The most the average round trip may take, in ms (null: any).
  maxLatencyMs: integer(1, 600_000, 500).nullable().default(null),
};

/**
 * ping (the way icmp checks run without the socket) counts its deadline in whole seconds, and both ways send
 * their echoes 200 ms apart: a timeout shorter than both would send fewer echoes than `count`, silently, and
 * judge the loss on those.
 */
export function icmpRules(c: { count?: unknown; timeoutMs?: unknown }, ctx: z.RefinementCtx): void {
  const count = typeof c.count === "number" ? c.count : 3;
  const least = Math.max(1000, count * 200 + 800);
  if (typeof c.timeoutMs === "number" && c.timeoutMs < least) {
    ctx.addIssue({ code: "custom", path: ["timeoutMs"], message: `must be at least ${least} ms for ${count} echoes 200 ms apart (ping waits in whole seconds); raise it, or lower count` });
  }
}
