/**
 * A WebSocket check: open a connection to a ws:// or wss:// URL (the HTTP upgrade), optionally send one
 * message, and judge the first message that comes back (its text, a pattern, the latency); the alternatives of
 * which one must hold. Without `send` and without a condition on the message, the upgrade is enough.
 */
import { z } from "zod";
import { integer, limits, regex } from "./common.ts";
import { sentHeaders } from "./headers.ts";

/** The most of the first message healthd reads: a larger one fails the check (size) rather than be buffered. */
export const websocketMessageBytes = 64 * 1024;

const url = z
  .string()
  .max(limits.urlLength)
  .superRefine((text, ctx) => {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be an absolute URL such as wss://example.org/socket" });
      return;
    }
    if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") {
      ctx.addIssue({ code: "custom", message: `must use ws or wss (got ${parsed.protocol.slice(0, -1)}); an http(s) URL is an http check` });
    }
    if (parsed.username || parsed.password) ctx.addIssue({ code: "custom", message: "must not carry credentials; send them in headers.authorization" });
    if (parsed.hash) ctx.addIssue({ code: "custom", message: "must not have a #fragment (a WebSocket URL has none); remove it" });
  });

/** A subprotocol as the Sec-WebSocket-Protocol header lists it (an HTTP token). */
const protocol = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, "must be a subprotocol name such as graphql-transport-ws (an HTTP token)");

const conditions = ["contains", "matches", "maxLatencyMs"] as const;
export const websocketAlternative = z
  .strictObject({
    /** Text the first message holds (a binary one is read as UTF-8). */
    contains: z.string().min(1).max(limits.patternLength).optional(),
    matches: regex.optional(),
    maxLatencyMs: integer(1, 600_000, 500).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

export const websocketFields = {
  url,
  headers: sentHeaders("a check")
    .refine((h) => !Object.keys(h).some((name) => /^sec-websocket-/i.test(name)), "must not set Sec-WebSocket-* headers (healthd makes the handshake's; give subprotocols in protocols)")
    .default({}),
  // Subprotocols offered (Sec-WebSocket-Protocol); the server must choose one of them when any are given.
  protocols: z
    .array(protocol)
    .max(16, "holds at most 16 subprotocols")
    .refine((names) => new Set(names).size === names.length, "names a subprotocol twice; give each once")
    .default([]),
  verifyTls: z.boolean().default(true),
  // A text message sent once the connection is open (\r \n \t \\ read as the characters they name, as tcp's
  // send); "" sends an empty one. null: nothing is sent.
  send: z.string().max(limits.requestBodyBytes).nullable().default(null),
  expect: z.array(websocketAlternative).max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`).default([]),
};

/** Whether a check waits for the first message: it sends one, or a condition looks at what comes back. */
export const awaitsMessage = (c: { send: string | null; expect: readonly { contains?: string; matches?: string }[] }) =>
  c.send !== null || c.expect.some((a) => a.contains !== undefined || a.matches !== undefined);
