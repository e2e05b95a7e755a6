/**
 * A UDP check: send one datagram to a port and judge the first answer (its text, a pattern, its bytes, its
 * latency); the alternatives of which one must hold. No expectation: any answer is enough. UDP has no
 * connection, so no answer within the timeout is the failure; a port that says it is closed (ICMP port
 * unreachable) fails at once.
 */
import { z } from "zod";
import { integer, limits, regex } from "./common.ts";
import { host } from "./tcp.ts";

/** The most of one datagram sent or kept: what fits in one IPv4 packet on most links without fragments. */
export const datagramBytes = 1400;

const hex = z
  .string()
  .max(datagramBytes * 2)
  .regex(/^(?:[0-9A-Fa-f]{2})+$/, "must be bytes as pairs of hex digits, such as 0d0a or DEADBEEF (no spaces, no 0x)");

const conditions = ["contains", "matches", "hex", "maxLatencyMs"] as const;
export const udpAlternative = z
  .strictObject({
    /** Text the answer holds (read as UTF-8). */
    contains: z.string().min(1).max(limits.patternLength).optional(),
    matches: regex.optional(),
    /** Bytes the answer holds somewhere, as hex. */
    hex: hex.optional(),
    maxLatencyMs: integer(1, 600_000, 500).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

export const udpFields = {
  host,
  port: integer(1, 65535, 53),
  // What to send, as text (\r \n \t \\ read as the characters they name, as tcp's send) or as hex bytes: one of them.
  send: z.string().min(1).max(datagramBytes).nullable().default(null),
  sendHex: hex.nullable().default(null),
  expect: z.array(udpAlternative).max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`).default([]),
};

export function udpRules(c: { send?: unknown; sendHex?: unknown }, ctx: z.RefinementCtx): void {
  const given = [c.send, c.sendHex].filter((v) => v !== undefined && v !== null).length;
  if (given !== 1) {
    ctx.addIssue({
      code: "custom",
      path: [given === 0 ? "send" : "sendHex"],
      message: given === 0 ? "a UDP check sends a datagram to be answered: give send (text) or sendHex (bytes)" : "give send or sendHex, not both",
    });
  }
}
