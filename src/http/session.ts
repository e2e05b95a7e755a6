/**
 * Signing a browser in and out: POST /login takes a token from the sign-in page's form and answers a session
 * cookie (HttpOnly, SameSite=Strict, Secure behind https, 30 days) that lets the browser read pages and JSON;
 * /logout ends it. The cookie holds a random secret; the database keeps its hash and the hash of the token,
 * so revoking the token ends the session on every node.
 */
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import { renderSignIn, signInPolicy } from "../status/sign-in.ts";
import type { TokenStore } from "../store/store.ts";
import { cookie, hashToken, sessionCookie, type Access } from "./access.ts";
import type { Request, Response, Route } from "./router.ts";

const sessionDays = 30;

export interface SessionContext {
  readonly store: TokenStore;
  readonly access: Access;
  readonly now: () => number;
}

/** Where a sign-in may lead: a path of this daemon, never another site (`//evil.example` is one). */
export function safeNext(next: unknown): string {
  return typeof next === "string" && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") && next.length <= 2000 ? next : "/status";
}

/** The sign-in page as an answer (401 when a page asked for needs it, 200 at /login). */
export function signInPage(status: number, next: string, error?: string): Response {
  return {
    status,
    text: renderSignIn({ next: safeNext(next), error }),
    headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": signInPolicy, "cache-control": "no-store", "referrer-policy": "no-referrer", "x-content-type-options": "nosniff" },
  };
}

const behindHttps = (headers: IncomingHttpHeaders) => String(headers["x-forwarded-proto"] ?? "").split(",")[0]!.trim() === "https";

const cookieFor = (value: string, maxAge: number, headers: IncomingHttpHeaders) =>
  `${sessionCookie}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${behindHttps(headers) ? "; Secure" : ""}`;

const form = z.strictObject({ token: z.string().max(4096).optional(), next: z.string().max(2000).optional() });

export function sessionRoutes(ctx: SessionContext): Route[] {
  const signIn = async (req: Request): Promise<Response> => {
    const body = await req.body();
    const fields = Object.fromEntries(new URLSearchParams(body?.text ?? ""));
    const parsed = form.safeParse(fields);
    const next = safeNext(parsed.success ? parsed.data.next : undefined);
    const token = parsed.success ? (parsed.data.token ?? "").trim() : "";
    if (token === "") return signInPage(400, next, "Type the token: the daemon's --token, or one made with healthd token create.");
    const signed = await ctx.access.signIn(token);
    if (!signed) return signInPage(401, next, "That token is not one of this healthd (or it may only ping). Check it and try again.");
    const secret = randomBytes(32).toString("base64url");
    const now = ctx.now();
    await ctx.store.createSession({ hash: hashToken(secret), tokenHash: signed.tokenHash, expiresAt: now + sessionDays * 86_400_000 }, now);
    return { status: 303, headers: { location: next, "set-cookie": cookieFor(secret, sessionDays * 86_400, req.headers), "cache-control": "no-store" } };
  };
  const signOut = async (req: Request): Promise<Response> => {
    const secret = cookie(req.headers, sessionCookie);
    if (secret !== undefined) await ctx.store.endSession(hashToken(secret));
    return { status: 303, headers: { location: "/login", "set-cookie": cookieFor("", 0, req.headers), "cache-control": "no-store" } };
  };
  const page = { 200: { description: "The sign-in page", contentType: "text/html" } };
  return [
    {
      path: "/login",
      methods: {
        GET: {
          summary: "The sign-in page: a token typed there signs this browser in",
          operationId: "signInPage",
          open: true,
          query: z.strictObject({ next: z.string().max(2000).optional().describe("Where to go once signed in (a path of this daemon)") }),
          responses: page,
          handle: (req) => signInPage(200, (req.query as { next?: string }).next ?? "/status"),
        },
        POST: {
          summary: "Sign this browser in with a token (a form: token, next): a session cookie for 30 days that may read",
          operationId: "signIn",
          open: true,
          body: { schema: form, required: true, types: ["application/x-www-form-urlencoded"] },
          responses: { 303: { description: "Signed in: to `next`, with the session cookie" }, 400: { description: "No token given" }, 401: { description: "Not a token of this daemon" } },
          handle: signIn,
        },
      },
    },
    {
      path: "/logout",
      methods: {
        GET: { summary: "Sign this browser out", operationId: "signOutPage", open: true, responses: { 303: { description: "Signed out: to /login" } }, handle: signOut },
        POST: { summary: "Sign this browser out", operationId: "signOut", open: true, responses: { 303: { description: "Signed out: to /login" } }, handle: signOut },
      },
    },
  ];
}
