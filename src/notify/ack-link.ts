/**
 * The signed one-click link that acknowledges an incident from its notification: `{public URL}/incidents/{id}/
 * ack/{signature}`, the signature an HMAC-SHA256 of the incident's id and its service under the cluster's secret
 * (kept in the database, so every node makes and accepts the same links). The link is the credential: it names
 * one incident and can only acknowledge it, while it is open. The service is signed too because SQLite gives a
 * deleted service's last incident id to the next incident, whichever service has it. Compared in constant time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** Which incident a link is for: its id and its service's. */
export interface AckSubject {
  readonly id: number;
  readonly serverId: string;
  readonly serviceId: string;
}

/** The signature of an incident's link: 32 characters of base64url (192 bits of the HMAC). */
export function ackSignature(secret: string, incident: AckSubject): string {
  return createHmac("sha256", secret).update(`healthd-ack:${incident.id}:${incident.serverId}/${incident.serviceId}`).digest("base64url").slice(0, 32);
}

/** Whether `signature` is this incident's. */
export function validAckSignature(secret: string, incident: AckSubject, signature: string): boolean {
  const expected = Buffer.from(ackSignature(secret, incident));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The link, under healthd's public URL (serve --public-url). */
export function ackLink(publicUrl: string, secret: string, incident: AckSubject): string {
  return new URL(`incidents/${incident.id}/ack/${ackSignature(secret, incident)}`, publicUrl.replace(/\/?$/, "/")).toString();
}

/** The events whose notifications carry the link: those that ask someone to act. */
export const asksToAct = (event: string) => event === "down" || event === "late" || event === "reminder" || event === "escalation";
