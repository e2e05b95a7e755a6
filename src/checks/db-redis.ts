/**
 * A redis check's exchange, spoken here in RESP2 (resp.ts) on healthd's own connection (connect.ts: the shared
 * read buffer, and for rediss:// the shared TLS secure context): connect; log in when the URL says to (AUTH
 * with its user and password, SELECT of its database), in one write; then the query's command and QUIT in
 * another, so the server answers and ends the session itself; hand back the command's answer as text. The
 * runner (database.ts) holds the deadline and closes the connection.
 *
 * The command waits for the login's answers, as @redis/client made it wait: pipelined behind a refused AUTH or
 * SELECT it would run anyway, as the default user or in database 0, which the URL did not ask for.
 *
 * Why not @redis/client: its machinery a connection (the socket wrapper, command queue, decoder, a client
 * object with every command on its prototype) cost more than the exchange; this costs less
 * (docs/benchmarks/2026-12-06-kinds.md).
 */
import { redisWords } from "../domain/schema/database.ts";
import { connect } from "./connect.ts";
import { CheckFailure } from "./failure.ts";
import { closedByServer, failures, type Login, type Row, type Session } from "./db-session.ts";
import { encodeCommands, replyText, RespDecoder, RespError, respLimits, ServerError, type Reply } from "./resp.ts";

/** Redis's words for a refused login: a wrong password or user, a password wanted, or one given to a server without any. */
const refusal = /^(WRONGPASS|NOAUTH|ERR AUTH|ERR invalid password|ERR Client sent AUTH)/;

/**
 * Redis's words for a server that takes no connection now, whatever the login: full, in protected mode, loading
 * its data, a replica without its master, busy with a script. Not the login's fault nor the query's: `connect`.
 */
const unavailable = /^(ERR max number of clients|DENIED|LOADING|MASTERDOWN|BUSY)/;

/** QUIT: the server answers +OK and closes; its answer comes after the command's, which ends the check. */
const quit = ["QUIT"];

/** Nothing to load: the protocol is spoken here (the runner loads the other kinds' clients before the clock starts). */
export const loadRedis = (): Promise<void> => Promise.resolve();

export function askRedis(login: Login, query: string, session: Session): Promise<Row> {
  const where = `${login.host.includes(":") ? `[${login.host}]` : login.host}:${login.port}`;
  const words = redisWords(query);
  if (!words.ok) return Promise.reject(failures.query(`the query ${words.problem}`));
  // As @redis/client logged in: AUTH when the URL has a user or a password (none, or an empty one: ""), SELECT
  // unless database 0. An empty password (a ${NAME:-} filled with nothing) is none, as @redis/client took it.
  const password = login.password === "" ? null : login.password;
  const logins: string[][] = [];
  if (login.user !== null || password !== null) logins.push(login.user === null ? ["AUTH", password!] : ["AUTH", login.user, password ?? ""]);
  if (login.database !== null && Number(login.database) !== 0) logins.push(["SELECT", String(Number(login.database))]);
  // A bare PING is answered PONG by every Redis: anything else (a POP3 server's "+OK ...") is another service.
  const pinging = words.words.length === 1 && words.words[0]!.toUpperCase() === "PING";
  const tls = login.tls !== "none";
  return new Promise<Row>((resolve, reject) => {
    let replies = 0;
    let refused = false;
    const take = (reply: Reply) => {
      if (refused) return;
      const index = replies++;
      if (index < logins.length) {
        // A login refused: AUTH's words, or SELECT's (a database out of range), as @redis/client's connect() failed.
        // Nothing more is taken, so that SELECT's answer behind a refused AUTH cannot send the command.
        if (reply instanceof ServerError) return void ((refused = true), reject(unavailable.test(reply.said) ? takesNone(where, reply.said) : failures.auth(where, reply.said)));
        if (reply !== "OK") return void ((refused = true), reject(unexpected(where, logins[index]![0]!, reply, "OK")));
        if (index < logins.length - 1) return;
        return ask();
      }
      if (index > logins.length) return; // QUIT's +OK
      if (reply instanceof ServerError) {
        return reject(unavailable.test(reply.said) ? takesNone(where, reply.said) : refusal.test(reply.said) ? failures.auth(where, reply.said) : failures.query(reply.said));
      }
      if (pinging && reply !== "PONG") return reject(unexpected(where, "PING", reply, "PONG"));
      resolve([replyText(reply)]);
    };
    const decoder = new RespDecoder(take);
    const read = (view: Buffer) => {
      try {
        decoder.write(view);
      } catch (error) {
        reading = drop;
        if (!(error instanceof RespError)) return reject(error);
        reject(
          error.kind === "size"
            ? new CheckFailure("size", `${where} sent more than ${respLimits.maxBytes} bytes of answers (${error.message}); a health check's answer is small: ask for less (PING, or GET of one key)`)
            : failures.protocol(where, "Redis", error.message),
        );
      }
    };
    let reading = read;
    const socket = connect({ host: login.host, port: login.port, tls, verifyTls: login.tls === "verified" }, () => reading);
    session.close = () => socket.destroy();
    socket.on("error", reject);
    socket.on("close", () => reject(closedByServer));
    /** The check's command, and QUIT behind it. */
    const ask = () => {
      session.stage = "querying";
      socket.write(encodeCommands([words.words, quit]));
    };
    socket.once(tls ? "secureConnect" : "connect", () => {
      if (logins.length === 0) return ask();
      session.stage = "logging in";
      socket.write(encodeCommands(logins));
    });
  });
}

const drop = () => {};

/** An answer no Redis gives to `command` (another service on the port): what came, and what a Redis says. */
function unexpected(where: string, command: string, reply: Reply, wanted: string): CheckFailure {
  return failures.protocol(where, "Redis", `it answered ${command} with ${JSON.stringify(replyText(reply).slice(0, 80))}, not ${wanted}; is ${where} a Redis port?`);
}

/** The server refused any connection now (full, protected mode, loading): what it said, and where to look. */
function takesNone(where: string, said: string): CheckFailure {
  const hint = said.startsWith("DENIED") ? "; give it a password (requirepass) or set protected-mode no, and put the password in the URL as ${NAME}" : "";
  return new CheckFailure("connect", `${where} takes no connection now: ${said}${hint}`);
}
