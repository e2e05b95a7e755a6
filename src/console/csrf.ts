/**
 * The console's CSRF tokens. A form's token is derived from the secret of the browser's session cookie (or,
 * on a daemon without tokens, of the console's own cookie): another site can make a browser post, but can
 * neither read the cookie (HttpOnly, SameSite=Strict) nor a page holding the token. Derived, not stored, so any
 * node of a cluster checks it, and signing out (a new session) makes the old forms useless.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** The cookie that ties a browser's forms together on a daemon open to anyone (no session to tie them to). */
export const consoleCookie = "healthd_console";

export const newConsoleSecret = () => randomBytes(32).toString("base64url");

export const csrfToken = (secret: string) => createHash("sha256").update(`healthd console csrf\0${secret}`).digest("base64url");

/** Whether `given` is the token of `secret`, compared in constant time. */
export function csrfMatches(secret: string, given: unknown): boolean {
  if (typeof given !== "string") return false;
  const expected = Buffer.from(csrfToken(secret));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
