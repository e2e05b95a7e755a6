/**
 * Access to the API: with a token configured, every request but GET /healthz must carry
 * `Authorization: Bearer <token>`. Both sides are hashed before a constant-time comparison, so neither the
 * token's content nor its length leaks through timing.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { HttpError } from "./problem.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();

/** A check for the Authorization header, or null when no token is configured (the API is open). */
export function bearerCheck(token: string | undefined): ((headers: IncomingHttpHeaders) => void) | null {
  if (token === undefined) return null;
  const expected = digest(token);
  return (headers) => {
    // The scheme name is case-insensitive (RFC 9110, 11.1).
    const given = /^bearer +(.*)$/is.exec(headers.authorization ?? "")?.[1];
    if (given === undefined || !timingSafeEqual(digest(given), expected)) {
      throw new HttpError(
        401,
        given === undefined
          ? "this API needs a token: send Authorization: Bearer <token> (the daemon's --token or HEALTHD_TOKEN)"
          : "the token is not the daemon's; check --token or HEALTHD_TOKEN",
        undefined,
        { "www-authenticate": 'Bearer realm="healthd"' },
      );
    }
  };
}

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}
