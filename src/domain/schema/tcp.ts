/**
 * A TCP check: connect to a port (optionally over TLS), optionally send a line, and expect a banner, a latency
 * or a certificate's remaining days; the alternatives of which one must hold. No expectation: connecting (and
 * the handshake) is enough.
 */
import { isIP } from "node:net";
import { z } from "zod";
import { integer, limits, regex } from "./common.ts";

/** A host name (letters, digits, dots, dashes) or an IPv4 or IPv6 address, without brackets or a port. */
export const host = z
  .string()
  .max(253)
  .refine(
    (text) => isIP(text) !== 0 || /^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/.test(text),
    "must be a host name such as db.example.org or an IP address such as 192.0.2.10 or 2001:db8::1 (no port, no brackets)",
  );

const banner = z
  .strictObject({ contains: z.string().min(1).max(limits.patternLength).optional(), matches: regex.optional() })
  .refine((b) => (b.contains === undefined) !== (b.matches === undefined), { message: "needs exactly one of contains or matches" });

const conditions = ["banner", "maxLatencyMs", "certValidDays"] as const;
export const tcpAlternative = z
  .strictObject({
    banner: banner.optional(),
    maxLatencyMs: integer(1, 600_000, 500).optional(),
    certValidDays: integer(0, 3650, 14).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

export const tcpFields = {
  host,
  port: integer(1, 65535, 22),
  tls: z.boolean().default(false),
  verifyTls: z.boolean().default(true),
  // What to write once connected (a protocol's greeting or a probe such as "PING\r\n"): \r \n \t \\ escapes are
  // read as such, so a YAML file can write them plainly too.
  send: z.string().min(1).max(limits.requestBodyBytes).nullable().default(null),
  expect: z.array(tcpAlternative).max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`).default([]),
  certWarnDays: integer(0, 3650, 14).nullable().default(null),
};

export function tcpRules(c: { tls?: unknown; certWarnDays?: unknown; expect?: unknown }, ctx: z.RefinementCtx): void {
  if (c.tls === true) return;
  if (c.certWarnDays != null) ctx.addIssue({ code: "custom", path: ["certWarnDays"], message: "needs tls: true (a plain connection has no certificate)" });
  if (Array.isArray(c.expect)) {
    c.expect.forEach((a: { certValidDays?: unknown } | null, i) => {
      if (a?.certValidDays !== undefined) ctx.addIssue({ code: "custom", path: ["expect", i, "certValidDays"], message: "needs tls: true (a plain connection has no certificate)" });
    });
  }
}
