/**
 * A domain's registration as RDAP tells it: which registry's RDAP server answers for a domain (IANA's bootstrap
 * file, RFC 9224), and when the registration expires (the "expiration" event of the answer, RFC 9083). Pure.
 */
import { z } from "zod";
import shipped from "./iana-rdap-dns.json" with { type: "json" };

/** IANA's bootstrap file for domains (https://data.iana.org/rdap/dns.json), as RFC 9224 defines it. */
export const bootstrapFile = z.object({
  services: z.array(z.tuple([z.array(z.string()), z.array(z.url())]), { error: 'must list services as [["tld", ...], ["https://rdap.example/", ...]]' }),
});

/** Which RDAP base URL answers for each TLD (or longer suffix), from a bootstrap file. */
export type Bootstrap = ReadonlyMap<string, string>;

export function readBootstrap(json: unknown): { ok: true; bootstrap: Bootstrap } | { ok: false; problem: string } {
  const parsed = bootstrapFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, problem: `${issue.path.length > 0 ? `/${issue.path.join("/")}` : "the file"} ${issue.message}` };
  }
  const bases = new Map<string, string>();
  for (const [suffixes, urls] of parsed.data.services) {
    // Of a registry's URLs, https first.
    const url = urls.find((u) => u.startsWith("https:")) ?? urls[0];
    if (url) for (const suffix of suffixes) bases.set(suffix.toLowerCase(), url.endsWith("/") ? url : `${url}/`);
  }
  return { ok: true, bootstrap: bases };
}

/** The bootstrap that ships with healthd (IANA's, as of its publication date in the file). */
export const shippedBootstrap: Bootstrap = (() => {
  const read = readBootstrap(shipped);
  if (!read.ok) throw new Error(`the shipped RDAP bootstrap is broken: ${read.problem}`);
  return read.bootstrap;
})();

/** The URL to ask about `domain`: the longest suffix the bootstrap knows; null when its registry has no RDAP. */
export function rdapUrl(bootstrap: Bootstrap, domain: string): string | null {
  const labels = domain.split(".");
  for (let i = 1; i < labels.length; i++) {
    const base = bootstrap.get(labels.slice(i).join("."));
    if (base) return `${base}domain/${domain}`;
  }
  return null;
}

const rdapDomain = z.object({
  events: z.array(z.object({ eventAction: z.string(), eventDate: z.string() }).passthrough()).optional(),
});

/** When an RDAP domain answer says the registration expires, or why it cannot be read. */
export function expiryOf(json: unknown): { ok: true; expiresAt: number } | { ok: false; problem: string } {
  const parsed = rdapDomain.safeParse(json);
  if (!parsed.success) return { ok: false, problem: "the answer is not an RDAP domain object (its events are malformed)" };
  const event = parsed.data.events?.find((e) => e.eventAction.toLowerCase() === "expiration");
  if (!event) return { ok: false, problem: "the answer has no expiration event" };
  const at = Date.parse(event.eventDate);
  if (!Number.isFinite(at)) return { ok: false, problem: `its expiration date ${JSON.stringify(event.eventDate.slice(0, 64))} is not a date` };
  return { ok: true, expiresAt: at };
}
