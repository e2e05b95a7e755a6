/**
 * A redis check's exchange, on @redis/client (the maintained client; RESP with its AUTH and SELECT at connect
 * is more than a banner): connect, log in, send the query's command, and hand back its answer as text. The
 * client is told never to reconnect nor queue while offline, and sends nothing of its own (no CLIENT SETINFO);
 * the runner (database.ts) holds the deadline and destroys the client.
 */
import { redisWords } from "../domain/schema/database.ts";
import { failures, type Login, type Row, type Session } from "./db-session.ts";

/** Redis's words for a refused login: a wrong password or user, a password wanted, or one given to a server without any. */
const refusal = /^(WRONGPASS|NOAUTH|ERR AUTH|ERR invalid password|ERR Client sent AUTH)/;

type RedisClientClass = typeof import("@redis/client/dist/lib/client/index.js").default;
let library: Promise<{ createClient: ReturnType<RedisClientClass["factory"]>; ErrorReply: typeof import("@redis/client").ErrorReply }> | undefined;
/**
 * The client library, loaded once, when the first such check runs (healthd ping and the other commands never
 * pay it), and its client class made once. createClient makes that class (every command of Redis attached to a
 * prototype) again whenever its options differ from the last call's (a cache of one entry, compared as JSON):
 * a daemon with two redis checks of different URLs paid it at every check, 46 ms of CPU a check in a loop
 * alternating two URLs against 0.6 ms with one. The class depends only on modules, functions, scripts and RESP,
 * none of which a check sets; each check's options go to the instance.
 */
export const loadRedis = () =>
  (library ??= Promise.all([import("@redis/client/dist/lib/client/index.js"), import("@redis/client")]).then(([client, { ErrorReply }]) => {
    // The module is CommonJS with __esModule: Node gives its exports object as the default import (the class is
    // its default); tsx, as TypeScript, gives the class.
    const exported = client.default as unknown as RedisClientClass & { default?: RedisClientClass };
    return { createClient: (exported.default ?? exported).factory(), ErrorReply };
  }));

export async function askRedis(login: Login, query: string, session: Session): Promise<Row> {
  const { createClient, ErrorReply } = await loadRedis();
  if (session.over()) return null; // loaded too late: a connection made now would outlive the check
  const where = `${login.host.includes(":") ? `[${login.host}]` : login.host}:${login.port}`;
  const words = redisWords(query);
  if (!words.ok) throw failures.query(`the query ${words.problem}`);
  const tls = login.tls === "none" ? {} : { tls: true as const, servername: login.host, rejectUnauthorized: login.tls === "verified" };
  const client = createClient({
    socket: {
      host: login.host,
      port: login.port,
      ...tls,
      // The deadline is the runner's; the client's own is set past it, so that it never speaks first.
      connectTimeout: login.timeoutMs + 1000,
      reconnectStrategy: false,
    },
    ...(login.user === null ? {} : { username: login.user }),
    ...(login.password === null ? {} : { password: login.password }),
    ...(login.database === null ? {} : { database: Number(login.database) }),
    disableOfflineQueue: true,
    disableClientInfo: true,
  });
  session.close = () => {
    if (client.isOpen) client.destroy();
  };
  // Errors come as events too; the awaited calls below reject with the ones that matter.
  client.on("error", () => {});
  client.once("connect", () => (session.stage = "logging in"));
  try {
    await client.connect();
  } catch (error) {
    throw fromServer(error, where, true, error instanceof ErrorReply);
  }
  session.stage = "querying";
  try {
    return [text(await client.sendCommand(words.words))];
  } catch (error) {
    throw fromServer(error, where, false, error instanceof ErrorReply);
  }
}

/** An answer as text: a string as it is, a number in decimal, nil as nothing, an array's items a line each. */
function text(reply: unknown): string {
  if (reply === null || reply === undefined) return "";
  if (Buffer.isBuffer(reply)) return reply.toString("utf8");
  if (Array.isArray(reply)) return reply.map(text).join("\n");
  if (reply instanceof Map) return [...reply].map(([k, v]) => `${text(k)}\n${text(v)}`).join("\n");
  return String(reply);
}

/** What the server (or its absence) said, as the check's failure: `replied` when it was Redis's error reply. */
function fromServer(error: unknown, where: string, loggingIn: boolean, replied: boolean): unknown {
  const e = error as { name?: string; message?: string; code?: string };
  const said = e.message ?? String(error);
  if (replied) {
    return loggingIn || refusal.test(said) ? failures.auth(where, said) : failures.query(said);
  }
  if (e.code === undefined && /closed unexpectedly/i.test(said)) return Object.assign(new Error("the server closed the connection"), { code: "ECONNRESET" });
  if (e.code === undefined && !/timeout/i.test(e.name ?? "")) return failures.protocol(where, "Redis", said);
  return error;
}
