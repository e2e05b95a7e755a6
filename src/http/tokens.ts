/**
 * /tokens: scoped tokens of the API, made by an admin. The secret is answered once, at creation; the database
 * keeps only its SHA-256. Revoking deletes the row, so every node refuses the token from its next request.
 */
import type { TokenStore } from "../store/store.ts";
import { tokenBody } from "../domain/schema/token.ts";
import { hashToken, newSecret } from "./access.ts";
import { createdTokenAnswer, tokensAnswer } from "./answers.ts";
import { HttpError } from "./problem.ts";
import { validBody, type Route } from "./router.ts";
import { tokenJson } from "./views.ts";

export interface TokenContext {
  readonly store: TokenStore;
  readonly now: () => number;
  /** Told after a token is made or revoked: the first or the last one switches the API open or closed. */
  readonly changed?: () => Promise<void>;
}

// On every server: a token limited to some servers may not touch what serves them all (an unlimited token, a shared channel).
const admin = { scope: "admin" } as const;

export function tokenRoutes(ctx: TokenContext): Route[] {
  const { store } = ctx;
  return [
    {
      path: "/tokens",
      methods: {
        GET: {
          ...admin,
          summary: "Every scoped token, without its secret",
          operationId: "listTokens",
          responses: { 200: { description: "The tokens, oldest first", schema: tokensAnswer } },
          handle: async () => ({ status: 200, body: { tokens: (await store.tokens()).map(tokenJson) } }),
        },
        POST: {
          ...admin,
          summary: "Make a scoped token; its secret is in this answer only",
          operationId: "createToken",
          body: { schema: tokenBody, required: true },
          responses: {
            201: { description: "Made; `token` is the secret, shown this once", schema: createdTokenAnswer },
            400: { description: "Invalid input; every problem is listed in `errors`" },
            409: { description: "A token has that name" },
          },
          handle: async (req) => {
            const { name, scope, servers = null } = await validBody(req, tokenBody, "the token", 'a token such as {"name": "ci", "scope": "write", "servers": ["web-01"]}');
            const secret = newSecret();
            const made = await store.createToken({ name, scope, servers, hash: hashToken(secret) }, ctx.now());
            if (made === "name taken") throw new HttpError(409, `a token is named ${name}; choose another name, or revoke it first (DELETE /tokens/{id})`);
            await ctx.changed?.();
            return { status: 201, body: { ...tokenJson(made), token: secret }, headers: { location: `/tokens/${made.id}` } };
          },
        },
      },
    },
    {
      path: "/tokens/:id",
      methods: {
        DELETE: {
          ...admin,
          summary: "Revoke a token: every node refuses it from now on",
          operationId: "revokeToken",
          responses: { 204: { description: "Revoked" }, 404: { description: "No such token" } },
          handle: async (req) => {
            const tokenId = /^[0-9]{1,15}$/.test(req.params.id!) ? Number(req.params.id) : undefined;
            if (tokenId === undefined || !(await store.revokeToken(tokenId))) {
              throw new HttpError(404, `no token ${JSON.stringify(req.params.id)}; GET /tokens lists them`);
            }
            await ctx.changed?.();
            return { status: 204 };
          },
        },
      },
    },
  ];
}
