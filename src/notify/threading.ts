/**
 * How an incident's emails thread together: its DOWN has a Message-ID made from the incident (the same on
 * every node, every retry and every restart, so nothing needs storing), and its reminders and RECOVERED answer
 * it with In-Reply-To and References. Mail readers that thread by those headers (Thunderbird, Apple Mail,
 * Outlook, mutt) show an incident as one conversation. A notification of no incident keeps an id of its own.
 *
 * The id's right side is the domain of the channel's `from` (RFC 5322 wants a domain the sender speaks for);
 * its left side names the incident and, hashed, its server and service, so that two installations of healthd
 * mailing one inbox from one domain do not thread each other's incident 123 together.
 */
import { createHash } from "node:crypto";
import type { NotificationEvent } from "../domain/notification.ts";

export interface ThreadHeaders {
  readonly messageId: string;
  readonly inReplyTo?: string;
  readonly references?: string;
}

/** The domain of an address as `from` takes it ("healthd <alerts@example.org>"); "healthd" when it has none. */
export function domainOf(from: string): string {
  const address = /<([^>]*)>\s*$/.exec(from)?.[1] ?? from;
  const domain = address.slice(address.lastIndexOf("@") + 1).trim().toLowerCase();
  return address.includes("@") && /^[a-z0-9.-]+$/.test(domain) ? domain : "healthd";
}

/** The Message-ID of an incident's DOWN: what its later emails answer. */
export function incidentMessageId(event: Pick<NotificationEvent, "incidentId" | "server" | "service">, from: string): string {
  return `<incident-${event.incidentId}.${who(`${event.server}/${event.service}`)}.down@${domainOf(from)}>`;
}

/** Who an id is about, hashed: short, and only the characters a Message-ID may hold. */
const who = (name: string) => createHash("sha256").update(name).digest("hex").slice(0, 10);

export function threadHeaders(event: NotificationEvent, from: string): ThreadHeaders {
  const domain = domainOf(from);
  const group = event.group ?? null;
  if (event.incidentId === null && group === null) return { messageId: `<${event.id}@${domain}>` };
  // A storm's grouped DOWN and RECOVERED thread as an incident's do, under the storm's id.
  const down = event.incidentId !== null ? incidentMessageId(event, from) : `<group-${group}.${who(event.server)}.down@${domain}>`;
  // A missed heartbeat's DOWN is a "late" event: it opens the thread as a DOWN does.
  if (event.event === "down" || event.event === "late") return { messageId: down };
  const own = event.event === "recovered" ? down.replace(/\.down@/, ".recovered@") : `<${event.id}@${domain}>`;
  return { messageId: own, inReplyTo: down, references: down };
}
