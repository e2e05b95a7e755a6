/**
 * Access to the API. Two kinds of token: the daemon's own (--token, in memory: admin), and scoped tokens
 * stored in the database (`read`, `write`, `ping`, `admin`, optionally limited to some servers), found by the
 * SHA-256 of the secret a request sends. With neither, the API is open. A token revoked on any node stops
 * working at once on every node: the database is asked on every request that sends one it does not know.
 *
 * While the database cannot answer (an outage), access is decided from what it last said: a token it accepted
 * is still accepted, and an API it last said had no tokens stays open; nothing else gets in. The daemon's own
 * token, --public-status and /healthz never need the database.
 *
 * The daemon's token is compared hashed, in constant time, so neither its content nor its length leaks
 * through timing. A stored token is looked up by its hash: timing can at most tell how much of a SHA-256 two
 * hashes share, which says nothing of a secret (finding one from its hash is what SHA-256 prevents).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { StoreUnavailable } from "../store/errors.ts";
import type { Scope, TokenStore } from "../store/store.ts";
import { HttpError } from "./problem.ts";

/** Who a request is: what it may do, and on which servers (null: all of them). */
export interface Principal {
  readonly scope: Scope;
  readonly servers: readonly string[] | null;
  /** For the log: the stored token's name, "--token", or "anyone" when the API is open. */
  readonly name: string;
}

const anyone: Principal = { scope: "admin", servers: null, name: "anyone" };
const daemonToken: Principal = { scope: "admin", servers: null, name: "--token" };

/** The SHA-256 of a token's secret, hex: what the database keeps of it. */
export const hashToken = (secret: string) => createHash("sha256").update(secret).digest("hex");

/** A new token's secret: 32 random bytes, base64url, after a prefix that says what it is (secret scanners know it by). */
export const newSecret = () => `hd_${randomBytes(32).toString("base64url")}`;

const unauthorized = (detail: string) => new HttpError(401, detail, undefined, { "www-authenticate": 'Bearer realm="healthd"' });

/** The bearer token of a request, if it sends one. The scheme name is case-insensitive (RFC 9110, 11.1). */
export const bearer = (headers: IncomingHttpHeaders) => /^bearer +(.*)$/is.exec(headers.authorization ?? "")?.[1];

/** Answers who a request is; throws HttpError 401 when it needs a token and sends none, or an unknown one. */
export type Authenticate = (headers: IncomingHttpHeaders) => Promise<Principal>;

/** `hadTokens`: whether the database held tokens at start, for an outage before the first request. */
export function authenticator(adminToken: string | undefined, store: Pick<TokenStore, "tokenByHash" | "hasTokens">, hadTokensAtStart?: boolean): Authenticate {
  const expected = adminToken === undefined ? undefined : createHash("sha256").update(adminToken).digest();
  // What the database last said, for when it cannot answer: tokens it accepted (by hash), whether any existed.
  const accepted = new Map<string, Principal>();
  let hadTokens = hadTokensAtStart;
  /** Whether the database holds tokens; during an outage, what it last said (unknown: the outage's 503). */
  const hasTokens = async () => {
    if (expected !== undefined) return true;
    try {
      return (hadTokens = await store.hasTokens());
    } catch (error) {
      if (error instanceof StoreUnavailable && hadTokens !== undefined) return hadTokens;
      throw error;
    }
  };
  const lookUp = async (hash: string): Promise<Principal | undefined> => {
    let stored;
    try {
      stored = await store.tokenByHash(hash);
    } catch (error) {
      if (!(error instanceof StoreUnavailable)) throw error;
      if (accepted.has(hash)) return accepted.get(hash);
      if (expected === undefined && hadTokens === false) return undefined; // an open API: the token does not matter
      throw error;
    }
    if (!stored) return void accepted.delete(hash);
    const principal: Principal = { scope: stored.scope, servers: stored.servers, name: stored.name };
    if (accepted.size >= 1000) accepted.clear();
    accepted.set(hash, principal);
    return principal;
  };
  return async (headers) => {
    const given = bearer(headers);
    if (given === undefined) {
      if (!(await hasTokens())) return anyone;
      throw unauthorized("this API needs a token: send Authorization: Bearer <token> (the daemon's --token or HEALTHD_TOKEN, or one from healthd token create)");
    }
    if (expected !== undefined && timingSafeEqual(createHash("sha256").update(given).digest(), expected)) return daemonToken;
    const stored = await lookUp(hashToken(given));
    if (stored) return stored;
    if (!(await hasTokens())) return anyone;
    throw unauthorized("the token is not known (revoked, mistyped, or of another database); check --token or HEALTHD_TOKEN, or list tokens with healthd token list");
  };
}

/** What each scope may do beyond its own name: write may read and ping; admin may do everything. */
const grants: Readonly<Record<Scope, readonly Scope[]>> = {
  read: ["read"],
  ping: ["ping"],
  write: ["read", "write", "ping"],
  admin: ["read", "write", "ping", "admin"],
};

/** Throws 403 unless `principal` may do what `scope` names; `what` is the request, for the message. */
export function permitScope(principal: Principal, scope: Scope, what: string): void {
  if (grants[principal.scope].includes(scope)) return;
  throw new HttpError(403, `${what} needs a token of scope ${scope} or above; token ${JSON.stringify(principal.name)} has scope ${principal.scope}`);
}

/**
 * Throws 403 unless `principal` may use server `serverId`; undefined: something of every server, which a
 * token limited to some servers may not do.
 */
export function permitServer(principal: Principal, serverId: string | undefined, what: string): void {
  if (principal.servers === null) return;
  const limited = `token ${JSON.stringify(principal.name)} is limited to server${principal.servers.length === 1 ? "" : "s"} ${principal.servers.join(", ")}`;
  if (serverId === undefined) throw new HttpError(403, `${what} covers every server; ${limited}: ask for one of them (GET /services/{serverId})`);
  if (!principal.servers.includes(serverId)) throw new HttpError(403, `${what} is on server ${serverId}; ${limited}`);
}

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}
