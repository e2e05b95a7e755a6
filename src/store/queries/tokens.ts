/** Scoped tokens and browser sessions as records: what /tokens, /login and `healthd token` read and write, and what access looks up. */
import type { Kysely, Selectable } from "kysely";
import type { NewToken, TokenRecord } from "../store.ts";
import type { Tables, TokensTable } from "../tables.ts";

type Db = Kysely<Tables>;

const columns = ["id", "name", "scope", "servers", "created_at"] as const;

function tokenFromRow(r: Pick<Selectable<TokensTable>, (typeof columns)[number]>): TokenRecord {
  return { id: Number(r.id), name: r.name, scope: r.scope, servers: r.servers === null ? null : (JSON.parse(r.servers) as string[]), createdAt: Number(r.created_at) };
}

export async function createToken(db: Db, token: NewToken, now: number): Promise<TokenRecord | "name taken"> {
  const taken = await db.selectFrom("tokens").select("id").where("name", "=", token.name).executeTakeFirst();
  if (taken) return "name taken";
  const row = await db
    .insertInto("tokens")
    .values({ name: token.name, scope: token.scope, servers: token.servers === null ? null : JSON.stringify(token.servers), hash: token.hash, created_at: now })
    .returning(columns)
    .executeTakeFirstOrThrow();
  return tokenFromRow(row);
}

export async function tokens(db: Db): Promise<TokenRecord[]> {
  return (await db.selectFrom("tokens").select(columns).orderBy("id").execute()).map(tokenFromRow);
}

export async function tokenByHash(db: Db, hash: string): Promise<TokenRecord | undefined> {
  const row = await db.selectFrom("tokens").select(columns).where("hash", "=", hash).executeTakeFirst();
  return row && tokenFromRow(row);
}

export async function hasTokens(db: Db): Promise<boolean> {
  return (await db.selectFrom("tokens").select("id").limit(1).executeTakeFirst()) !== undefined;
}

export async function revokeToken(db: Db, id: number): Promise<boolean> {
  const result = await db.deleteFrom("tokens").where("id", "=", id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function createSession(db: Db, session: { hash: string; tokenHash: string; expiresAt: number }, now: number): Promise<void> {
  await db.deleteFrom("sessions").where("expires_at", "<=", now).execute();
  await db.insertInto("sessions").values({ hash: session.hash, token_hash: session.tokenHash, expires_at: session.expiresAt, created_at: now }).execute();
}

export async function sessionToken(db: Db, hash: string, now: number): Promise<string | undefined> {
  const row = await db.selectFrom("sessions").select("token_hash").where("hash", "=", hash).where("expires_at", ">", now).executeTakeFirst();
  return row?.token_hash;
}

export async function endSession(db: Db, hash: string): Promise<void> {
  await db.deleteFrom("sessions").where("hash", "=", hash).execute();
}
