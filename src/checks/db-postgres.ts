/**
 * A postgres check's exchange, on node-postgres (already healthd's store engine): connect, log in, run the
 * query in the simple protocol, take its first row as the server's text (no type parsing: "t", not true), and
 * hand it back. The runner (database.ts) holds the deadline and closes the connection.
 */
import { isIP, type Socket } from "node:net";
import { failures, sniffed, type Login, type Row, type Session } from "./db-session.ts";

/** What a server's first message after a startup may be: authentication, an error, a notice, a protocol version. */
const firstMessages = new Set(["R", "E", "N", "v"].map((c) => c.charCodeAt(0)));

/** Every value as the server wrote it: the check judges text, and parsing a type could only differ from it. */
const asText = { getTypeParser: () => (value: string) => value };

let library: Promise<typeof import("pg")> | undefined;
/** The client library, loaded once, when the first such check runs (healthd ping and the other commands never pay it). */
export const loadPostgres = () => (library ??= import("pg"));

export async function askPostgres(login: Login, query: string, session: Session): Promise<Row> {
  const { default: pg } = await loadPostgres();
  if (session.over()) return null; // loaded too late: the check is over, and a connection made now would outlive it
  const where = `${login.host.includes(":") ? `[${login.host}]` : login.host}:${login.port}`;
  const client = new pg.Client({
    host: login.host,
    port: login.port,
    user: login.user ?? undefined,
    password: login.password ?? undefined,
    database: login.database ?? undefined,
    ssl: login.tls === "none" ? false : { rejectUnauthorized: login.tls === "verified", servername: isIP(login.host) ? undefined : login.host },
    types: asText,
    application_name: "healthd",
  });
  const connection = (client as unknown as { connection: { stream: Socket; once(event: string, listener: () => void): void } }).connection;
  // The socket goes at once, so that a server that never closes its end holds nothing of ours. No Terminate
  // first: PostgreSQL logs a client's end without one only at DEBUG1 (checked: nothing in its log at the
  // default level), and its write was a tenth of a check's CPU. (MariaDB does log it: mysql says COM_QUIT.)
  session.close = () => connection.stream.destroy();
  // Errors after the answer say nothing about it; before it, connect() and the query reject with them.
  client.on("error", () => {});
  connection.once("connect", () => (session.stage = "logging in"));
  // Over TLS the first bytes answer the TLS request, then are TLS's: only a plain connection is sniffed.
  const garbage = login.tls === "none" ? sniffed(connection.stream, (first) => firstMessages.has(first[0]!), where, "PostgreSQL") : new Promise<never>(() => {});
  garbage.catch(() => {});
  try {
    await Promise.race([client.connect(), garbage]);
  } catch (error) {
    throw fromServer(error, where, "login");
  }
  session.stage = "querying";
  const answer = new Promise<Row>((resolve, reject) => {
    // rowMode is pg's (its types leave it out of QueryConfig): each row an array, in the columns' order.
    const config = { text: query, rowMode: "array", types: asText };
    const running = client.query(new pg.Query(config as typeof config & { text: string }));
    running.on("row", (row: (string | null)[]) => resolve(row));
    running.on("end", () => resolve(null));
    running.on("error", (error: unknown) => reject(fromServer(error, where, "query")));
  });
  return Promise.race([answer, garbage]);
}

/** What the server (or its absence) said, as the check's failure: its SQLSTATE tells a login's from a query's. */
function fromServer(error: unknown, where: string, during: "login" | "query"): unknown {
  const e = error as { code?: string; severity?: string; message?: string };
  if (e.severity !== undefined && typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) {
    const said = `${e.message} (SQLSTATE ${e.code})`;
    // Class 28 is a refused login; 3D000 a database that is not there; both come when logging in.
    return during === "login" || e.code.startsWith("28") ? failures.auth(where, said) : failures.query(said);
  }
  if (e.severity !== undefined || /^received invalid response/.test(e.message ?? "")) return failures.protocol(where, "PostgreSQL", e.message ?? String(error));
  if (e.code === undefined && /^Connection terminated/.test(e.message ?? "")) {
    return Object.assign(new Error(`the server closed the connection`), { code: "ECONNRESET" });
  }
  return error;
}
