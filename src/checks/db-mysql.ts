/**
 * A mysql check's exchange (MySQL and MariaDB), on mysql2: its protocol (handshake, the auth plugins, packets)
 * is not one to write again, and mysql2 is the maintained client. Connect, log in, run the query, take its
 * first row as the server's text and hand it back; the runner (database.ts) holds the deadline and closes.
 * The goodbye (COM_QUIT) rides in the query's write: a quarter of a check's CPU less (docs/benchmarks.md).
 */
import type { Socket } from "node:net";
import { failures, sniffed, type Login, type Row, type Session } from "./db-session.ts";

/** The server's codes for a refused login: access denied (1045, 1044, 1698), unknown database (1049), an auth plugin mysql2 lacks (1251). */
const loginRefusals = new Set([1044, 1045, 1049, 1251, 1698]);

/** COM_QUIT as a packet: its length (1), sequence 0, the command 0x01. */
const quit = Buffer.from([1, 0, 0, 0, 1]);

let library: Promise<typeof import("mysql2")> | undefined;
/** The client library, loaded once, when the first such check runs (healthd ping and the other commands never pay it). */
export const loadMysql = () => (library ??= import("mysql2"));

export async function askMysql(login: Login, query: string, session: Session): Promise<Row> {
  const { createConnection } = await loadMysql();
  if (session.over()) return null; // loaded too late: a connection made now would outlive the check
  const where = `${login.host.includes(":") ? `[${login.host}]` : login.host}:${login.port}`;
  const connection = createConnection({
    host: login.host,
    port: login.port,
    user: login.user ?? undefined,
    password: login.password ?? undefined,
    database: login.database ?? undefined,
    ...(login.tls === "none" ? {} : { ssl: { rejectUnauthorized: login.tls === "verified" } }),
    // The deadline is the runner's: no timer of mysql2's own, which would outlive a connection ended mid-handshake.
    connectTimeout: 0,
    rowsAsArray: true,
    // Every value as the server wrote it: the check judges text.
    typeCast: (field) => field.string(),
    multipleStatements: false,
    enableKeepAlive: false,
  });
  session.close = () => connection.destroy();
  let loggedIn = false;
  let failed: (error: unknown) => void = () => {};
  // A failed login is told on the connection, not on the query queued behind it; after the answer, errors say nothing.
  connection.on("error", (error) => failed(fromServer(error, where, loggedIn)));
  (connection as unknown as { stream: Socket }).stream.once("connect", () => (session.stage = "logging in"));
  connection.once("connect", () => {
    loggedIn = true;
    session.stage = "querying";
    // The goodbye (COM_QUIT: MariaDB then logs no "Aborted connection") goes in the same write as the query,
    // which mysql2 sends as this returns: the server answers the query, reads the goodbye and closes. Said
    // after the answer through mysql2's end() it was a command, a packet and a write of its own, a tenth of
    // the check's CPU. The socket is TLS's by now when the URL asked for it.
    const current = (connection as unknown as { stream: Socket }).stream;
    current.cork();
    process.nextTick(() => {
      current.write(quit);
      current.uncork();
    });
  });
  // The server speaks first: a packet of sequence 0 holding protocol version 10, or an error (0xff).
  const stream = (connection as unknown as { stream: Socket }).stream;
  const garbage = sniffed(stream, (first) => (first.length < 5 ? undefined : first[3] === 0 && (first[4] === 0x0a || first[4] === 0xff)), where, "MySQL");
  garbage.catch(() => {});
  const answer = new Promise<Row>((resolve, reject) => {
    failed = reject;
    // mysql2 queues the query until the login is done; a failed login fails it with the login's error.
    const running = connection.query(query);
    running.on("result", (row: unknown) => resolve(Array.isArray(row) ? (row as (string | null)[]) : null));
    running.on("end", () => resolve(null));
    running.on("error", (error: unknown) => reject(fromServer(error, where, loggedIn)));
  });
  return Promise.race([answer, garbage]);
}

/** What the server (or its absence) said, as the check's failure: a server's error during login is a refusal. */
function fromServer(error: unknown, where: string, loggedIn: boolean): unknown {
  const e = error as { code?: string; errno?: number; sqlState?: string; message?: string; fatal?: boolean };
  if (typeof e.sqlState === "string" && typeof e.errno === "number" && e.errno >= 1000) {
    const said = `${e.message} (${e.code ?? e.errno})`;
    return !loggedIn || loginRefusals.has(e.errno) ? failures.auth(where, said) : failures.query(said);
  }
  if (typeof e.code === "string" && (e.code.startsWith("PROTOCOL_") || e.code === "HANDSHAKE_NO_SSL_SUPPORT")) {
    if (e.code === "PROTOCOL_CONNECTION_LOST") return Object.assign(new Error("the server closed the connection"), { code: "ECONNRESET" });
    return failures.protocol(where, "MySQL", e.message ?? e.code);
  }
  if (e.code === undefined && e.message !== undefined) return failures.protocol(where, "MySQL", e.message);
  return error;
}
