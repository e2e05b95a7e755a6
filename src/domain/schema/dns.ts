/**
 * A DNS check: one question (a name and a record type) asked of a server, and expectations on the answer's
 * code, its records and its latency; the alternatives of which one must hold.
 */
import { isIP } from "node:net";
import { z } from "zod";
import { integer, limits, regex } from "./common.ts";
import { host } from "./tcp.ts";

export const recordTypes = ["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA", "SRV", "CAA", "PTR"] as const;
/** The answer codes of RFC 1035 and 2136, by the names dig prints. */
export const rcodes = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"] as const;

const name = z
  .string()
  .max(253)
  .regex(/^(?=.{1,253}$)(\*\.)?([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/, "must be a domain name such as example.org");

/** A DNS server as a check names it: host, host:port, [IPv6]:port or a bare IPv6 address (port 53 when left out). */
export function parseServer(text: string): { host: string; port: number } | null {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  const [address, port] = bracketed
    ? [bracketed[1]!, bracketed[2]]
    : isIP(text) === 6 || !text.includes(":")
      ? [text, undefined]
      : [text.slice(0, text.lastIndexOf(":")), text.slice(text.lastIndexOf(":") + 1)];
  const number = port === undefined ? 53 : /^\d{1,5}$/.test(port) ? Number(port) : NaN;
  if (!host.safeParse(address).success || !(number >= 1 && number <= 65535)) return null;
  return { host: address, port: number };
}

const server = z
  .string()
  .max(300)
  .refine((text) => parseServer(text) !== null, "must be a DNS server as host, host:port or [IPv6]:port, such as 192.0.2.53 or 127.0.0.1:5353");

const answers = z
  .strictObject({
    includes: z.string().min(1).max(limits.patternLength).optional(),
    equals: z.array(z.string().min(1).max(limits.patternLength)).max(100).optional(),
    matches: regex.optional(),
  })
  .refine((a) => [a.includes, a.equals, a.matches].filter((x) => x !== undefined).length === 1, { message: "needs exactly one of includes, equals or matches" });

const conditions = ["rcode", "answers", "minAnswers", "maxLatencyMs"] as const;
export const dnsAlternative = z
  .strictObject({
    rcode: z.enum(rcodes, `must be one of ${rcodes.join(", ")}`).optional(),
    answers: answers.optional(),
    minAnswers: integer(0, 100, 1).optional(),
    maxLatencyMs: integer(1, 600_000, 200).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

export const dnsFields = {
  name,
  recordType: z.enum(recordTypes, `must be one of ${recordTypes.join(", ")}`).default("A"),
  // Null asks the system's resolvers (the first of /etc/resolv.conf's nameservers).
  server: server.nullable().default(null),
  expect: z
    .array(dnsAlternative)
    .min(1, 'needs at least one alternative, for example [{"rcode": "NOERROR", "minAnswers": 1}]')
    .max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`)
    .default([{ rcode: "NOERROR", minAnswers: 1 }]),
};
