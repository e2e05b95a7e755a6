/**
 * A TLS check: connect to a port, upgrade with the protocol's STARTTLS when it has one (SMTP, IMAP, POP3, FTP,
 * PostgreSQL, LDAP), make the handshake and verify the chain; expect a certificate's remaining days or a
 * latency, the alternatives of which one must hold. No expectation: a verified handshake is enough.
 */
import { isIP } from "node:net";
import { z } from "zod";
import { integer, limits } from "./common.ts";
import { host } from "./tcp.ts";

export const starttlsProtocols = ["smtp", "imap", "pop3", "ftp", "postgres", "ldap"] as const;
export const tlsVersions = ["TLSv1.2", "TLSv1.3"] as const;

const conditions = ["certValidDays", "maxLatencyMs"] as const;
export const tlsAlternative = z
  .strictObject({
    certValidDays: integer(0, 3650, 14).optional(),
    maxLatencyMs: integer(1, 600_000, 500).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

export const tlsFields = {
  host,
  port: integer(1, 65535, 443),
  starttls: z.enum(starttlsProtocols).nullable().default(null),
  // The name asked for (SNI) and verified: the host's when it is a name; give it when the host is an address.
  servername: host
    .refine((name) => isIP(name) === 0, "must be a DNS name (SNI names no address); leave it out to connect to an address by it")
    .nullable()
    .default(null),
  verifyTls: z.boolean().default(true),
  minVersion: z.enum(tlsVersions).nullable().default(null),
  expect: z.array(tlsAlternative).max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`).default([]),
  certWarnDays: integer(0, 3650, 14).nullable().default(null),
};
