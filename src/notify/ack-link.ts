/**
 * The signed one-click link that acknowledges an incident from its notification: `{public URL}/incidents/{id}/
 * ack/{signature}`, the signature an HMAC-SHA256 of the incident's id under the cluster's secret (kept in the
 * database, so every node makes and accepts the same links). The link is the credential: it names one incident
 * and can only acknowledge it, while it is open. Compared in constant time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The signature of incident `id`'s link: 32 characters of base64url (192 bits of the HMAC). */
export function ackSignature(secret: string, id: number): string {
  return createHmac("sha256", secret).update(`healthd-ack:${id}`).digest("base64url").slice(0, 32);
}

/** Whether `signature` is incident `id`'s. */
export function validAckSignature(secret: string, id: number, signature: string): boolean {
  const expected = Buffer.from(ackSignature(secret, id));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The link, under healthd's public URL (serve --public-url). */
export function ackLink(publicUrl: string, secret: string, id: number): string {
  return new URL(`incidents/${id}/ack/${ackSignature(secret, id)}`, publicUrl.replace(/\/?$/, "/")).toString();
}

/** The events whose notifications carry the link: those that ask someone to act. */
export const asksToAct = (event: string) => event === "down" || event === "late" || event === "reminder" || event === "escalation";
