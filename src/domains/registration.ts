/**
 * Which registered domain a check looks at: tldts knows the public suffixes (www.example.co.uk is under
 * example.co.uk). Kept with the check when it is saved, for the DOMAIN warning (rdap.ts, watcher.ts). Pure.
 */
import { getDomain } from "tldts";
import type { Check } from "../model.ts";

/** The registered domain a check's host belongs to; null for an IP address, a bare name, or a heartbeat. */
export function registeredDomain(check: Check): string | null {
  const host = check.type === "http" ? new URL(check.url).hostname : check.type === "tcp" ? check.host : check.type === "dns" ? check.name : null;
  if (host === null) return null;
  return getDomain(host.replace(/\.$/, ""), { allowPrivateDomains: false })?.toLowerCase() ?? null;
}
