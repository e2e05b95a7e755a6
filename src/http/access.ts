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

/**
 * The bearer token of a request, if it sends one. The scheme name is case-insensitive (RFC 9110, 11.1). An
 * `X-Api-Key` header counts the same: Healthchecks.io's clients send their key so (healthchecks-api.ts).
 */
export const bearer = (headers: IncomingHttpHeaders) =>
  /^bearer +(.*)$/is.exec(headers.authorization ?? "")?.[1] ?? (typeof headers["x-api-key"] === "string" ? headers["x-api-key"] : undefined);

/** Answers who a request is; throws HttpError 401 when it needs a token and sends none, or an unknown one. */
export type Authenticate = (headers: IncomingHttpHeaders) => Promise<Principal>;

/** The cookie of a browser signed in on the sign-in page. */
export const sessionCookie = "healthd_session";

export interface Access {
  readonly authenticate: Authenticate;
  /** Whether the API needs a token, as last known (--token, or tokens in the database). */
  tokensRequired(): boolean;
  /** Ask the database again now (a token was made or revoked, here or elsewhere): onChange hears of a switch at once. */
  refresh(): Promise<void>;
  /**
   * What `secret` signs a browser in as: a principal that may read (a ping token may not), and the hash
   * of the token the session hangs on; undefined when it is no token of this daemon.
   */
  signIn(secret: string): Promise<{ readonly principal: Principal; readonly tokenHash: string } | undefined>;
  /**
   * The console's: who a browser session (its cookie's secret) is, with the scope of the token it signed in with
   * (not reduced to read): the console's forms carry a CSRF token bound to that secret (console/csrf.ts).
   */
  sessionPrincipal(secret: string): Promise<Principal | undefined>;
}

export interface AccessOptions {
  /** Whether the database held tokens at start, for an outage before the first request. */
  readonly hadTokens?: boolean | undefined;
  readonly now: () => number;
  /**
   * Told when the database's answer switches the API between open and "token required" (the first token made,
   * the last one revoked): the daemon says so in its log (describeAccess), so nobody is locked out unawares.
   */
  readonly onChange?: (tokensRequired: boolean) => void;
}

/**
 * What needs a token and what stays open, in a sentence for the log: said at start and whenever it switches
 * (access decides it at each request, from the database: a first token closes an open API within a second).
 */
export function describeAccess(options: { readonly daemonToken: boolean; readonly storedTokens: boolean; readonly publicStatus: boolean }): string {
  if (options.daemonToken || options.storedTokens) {
    const why = options.daemonToken ? "--token is set" : "the database holds tokens";
    const needs = options.publicStatus ? "the API and pings by name need a token" : "the API, the status page and pings by name need a token";
    const open = options.publicStatus ? "pings by key (/ping/KEY), the status page and badges (--public-status), public named pages and /healthz" : "pings by key (/ping/KEY), public named pages and /healthz";
    return `${needs} (${why}); ${open} stay open`;
  }
  return (
    "the API, the status page and pings answer anyone who reaches this address (no --token, no token in the database); " +
    "the first token made (healthd token create, POST /tokens) makes the API, the status page and pings by name need one within a second, " +
    "pings by key (/ping/KEY) stay open"
  );
}

/** A request's cookie of that name, if it sends one. */
export function cookie(headers: IncomingHttpHeaders, name: string): string | undefined {
  for (const part of (headers.cookie ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

export function authenticator(adminToken: string | undefined, store: Pick<TokenStore, "tokenByHash" | "hasTokens" | "sessionToken">, options: AccessOptions): Access {
  const expected = adminToken === undefined ? undefined : Buffer.from(hashToken(adminToken), "hex");
  // What the database last said, for when it cannot answer: tokens it accepted (by hash), whether any existed.
  const accepted = new Map<string, Principal>();
  let hadTokens = options.hadTokens;
  let askedAt = -Infinity;
  /**
   * Whether the database holds tokens; during an outage, what it last said (unknown: the outage's 503). For a
   * request with no token (`fresh` false) an answer of the last second will do: asking on every request queued
   * each page of an open daemon behind SQLite's writes (bench:status, 4,900 to 2,900 pages/s). A token that
   * is sent is always looked up, so a revocation holds at once; a new token closes an open API within a second.
   */
  const hasTokens = async (fresh: boolean) => {
    if (expected !== undefined) return true;
    if (!fresh && hadTokens !== undefined && options.now() - askedAt < 1000) return hadTokens;
    try {
      const before = hadTokens;
      hadTokens = await store.hasTokens();
      askedAt = options.now();
      if (before !== undefined && before !== hadTokens) options.onChange?.(hadTokens);
      return hadTokens;
    } catch (error) {
      if (error instanceof StoreUnavailable && hadTokens !== undefined) return hadTokens;
      throw error;
    }
  };
  const lookUp = async (hash: string): Promise<Principal | undefined> => {
    if (expected !== undefined && timingSafeEqual(Buffer.from(hash, "hex"), expected)) return daemonToken;
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
  /** A browser session reads, as the token it signed in with (which must still exist): it never changes anything. */
  const reader = (p: Principal): Principal | undefined => (p.scope === "ping" ? undefined : { scope: "read", servers: p.servers, name: `${p.name} (signed in)` });
  const session = async (secret: string): Promise<Principal | undefined> => {
    const tokenHash = await store.sessionToken(hashToken(secret), options.now());
    const principal = tokenHash === undefined ? undefined : await lookUp(tokenHash);
    return principal && reader(principal);
  };
  return {
    tokensRequired: () => expected !== undefined || hadTokens === true,
    async refresh() {
      await hasTokens(true).catch(() => undefined); // an outage: the next request asks again
    },
    async authenticate(headers) {
      const given = bearer(headers);
      if (given === undefined) {
        if (!(await hasTokens(false))) return anyone;
        const secret = cookie(headers, sessionCookie);
        const signedIn = secret === undefined ? undefined : await session(secret);
        if (signedIn) return signedIn;
        throw unauthorized(
          secret === undefined
            ? "this API needs a token: send Authorization: Bearer <token> (the daemon's --token or HEALTHD_TOKEN, or one from healthd token create)"
            : "this browser's session is over (signed out, expired, or its token revoked); sign in again at /login",
        );
      }
      const stored = await lookUp(hashToken(given));
      if (stored) return stored;
      if (!(await hasTokens(true))) return anyone;
      throw unauthorized("the token is not known (revoked, mistyped, or of another database); check --token or HEALTHD_TOKEN, or list tokens with healthd token list");
    },
    async sessionPrincipal(secret) {
      const tokenHash = await store.sessionToken(hashToken(secret), options.now());
      const principal = tokenHash === undefined ? undefined : await lookUp(tokenHash);
      return principal && principal.scope !== "ping" ? { ...principal, name: `${principal.name} (signed in)` } : undefined;
    },
    async signIn(secret) {
      const tokenHash = hashToken(secret);
      const principal = await lookUp(tokenHash);
      const signedIn = principal && reader(principal);
      return signedIn && { principal: signedIn, tokenHash };
    },
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

/** Whether `principal` may use server `serverId`: the rule permitServer enforces, for handlers that filter or hide. */
export const mayUse = (principal: Principal, serverId: string): boolean => principal.servers === null || principal.servers.includes(serverId);

/** Whether `principal` may use every one of `servers` (null: every server, which only an unlimited token may). */
export const mayUseAll = (principal: Principal, servers: readonly string[] | null): boolean =>
  principal.servers === null || (servers !== null && servers.every((s) => mayUse(principal, s)));

/**
 * Throws 403 when a request names a server `principal` may not use: at `path` of its body, the server, or
 * `ref` on it (a dependsOn). The answer is the same whether that server or service exists or not,
 * so a token limited to some servers learns nothing of the others (a 400 "does not exist" beside a 201 would).
 */
export function permitReferences(principal: Principal, refs: readonly { readonly serverId: string; readonly ref?: string; readonly path: string }[], what: string): void {
  if (principal.servers === null) return;
  const outside = refs.filter((r) => !mayUse(principal, r.serverId));
  if (outside.length === 0) return;
  const limited = `token ${JSON.stringify(principal.name)} is limited to server${principal.servers.length === 1 ? "" : "s"} ${principal.servers.join(", ")}`;
  const message = (r: { serverId: string; ref?: string }) => `names ${r.ref === undefined ? "server " : `${r.ref}, of server `}${r.serverId}; ${limited}: name only those`;
  throw new HttpError(403, `${what} ${message(outside[0]!)}`, outside.map((r) => ({ path: r.path, message: message(r) })));
}

/**
 * Whether `principal` sees a check's secrets (its secret-looking header and body values, a heartbeat's
 * pingKey): a token that may change the check may read what it would write; a `read` one (and a signed-in
 * browser, which reads) sees them masked (schema/secrets.ts, maskedCheck).
 */
export const seesSecrets = (principal: Principal): boolean => grants[principal.scope].includes("write");

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}
