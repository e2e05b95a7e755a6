/**
 * A postgres check's exchange, spoken with pg-protocol (node-postgres's own serializer and parser): connect,
 * TLS when asked (SSLRequest, then the handshake on the same socket), the startup, the login (trust, a
 * cleartext or md5 password, or SCRAM-SHA-256 on pg's own SASL code), one query in the simple protocol, and its
 * first row as the server wrote it (no type parsing: "t", not true). The runner (database.ts) holds the
 * deadline and closes the connection.
 *
 * Why not pg's Client: a check is one connection, one query, one row, and Client is made for a pool's long
 * lives (ConnectionParameters reading environment variables and defaults, Query and Result objects, event
 * plumbing); this costs a tenth less (docs/benchmarks.md). What is left is mostly the protocol's own; a bare
 * loop of the same bytes with no parsing costs ~75% of this check. With no password to give, the query and
 * Terminate go in the startup's write: one round trip, as http makes (docs/benchmarks/2026-12-06-kinds.md).
 */
import { createHash } from "node:crypto";
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { serialize } from "pg-protocol";
import type { BackendMessage, DatabaseError } from "pg-protocol/dist/messages.js";
import { Parser } from "pg-protocol/dist/parser.js";
import { CheckFailure } from "./failure.ts";
import { closedByServer, failures, sniffed, type Login, type Row, type Session } from "./db-session.ts";

/** What a server's first message after a startup may be: authentication, an error, a notice, a protocol version. */
const firstMessages = new Set(["R", "E", "N", "v"].map((c) => c.charCodeAt(0)));

/**
 * What a check reads of a server at most. A health query's first row is small, and pg-protocol's parser would
 * otherwise keep growing its buffer for a message whose announced length a hostile server chose (up to 2 GiB).
 */
const maxAnswerBytes = 1 << 20;

/** Terminate ('X'): the goodbye, sent behind the query. */
const terminate = serialize.end();

/** pg's SCRAM-SHA-256 (RFC 5802 with SASLprep), the one PostgreSQL speaks: not a thing to write again (pg-sasl.d.ts). */
type Sasl = typeof import("pg/lib/crypto/sasl.js");

let library: Promise<Sasl> | undefined;
/** pg's SASL code, loaded once, when the first such check runs (healthd ping and the other commands never pay it). */
export const loadPostgres = () => (library ??= import("pg/lib/crypto/sasl.js").then((m: { default: Sasl }) => m.default));

/** A message as pg-protocol's parser gives it: its name, and the fields of the few kinds read here. */
type Message = BackendMessage & { salt?: Buffer; mechanisms?: string[]; data?: string; fields?: (string | null)[] };

export async function askPostgres(login: Login, query: string, session: Session): Promise<Row> {
  const sasl = await loadPostgres();
  if (session.over()) return null; // loaded too late: the check is over, and a connection made now would outlive it
  const where = `${login.host.includes(":") ? `[${login.host}]` : login.host}:${login.port}`;
  const plain = connectTcp({ host: login.host, port: login.port, noDelay: true });
  let stream: Socket = plain;
  // The socket goes at once when the check ends, so that a server that never closes its end holds nothing of ours.
  // Only the outermost: a TLS socket owns the plain one under it (destroying that one too crashes the process
  // at its exit, as tls.ts found).
  session.close = () => stream.destroy();
  // With no password to give, the query goes with the startup (below).
  const pipelined = login.password === null;
  return new Promise<Row>((resolve, reject) => {
    let loggedIn = false;
    const fail = (error: unknown) => reject(fromServer(error, where, loggedIn ? "query" : "login"));
    const closed = () => reject(closedByServer);
    plain.on("error", reject);
    plain.on("close", closed);
    plain.once("connect", () => {
      session.stage = "logging in";
      if (login.tls === "none") return start();
      plain.write(serialize.requestSsl());
      plain.once("data", (answer) => {
        // One byte: S to go on in TLS, N for a server without it; anything else is no PostgreSQL.
        if (answer[0] === 0x4e) return reject(new Error("The server does not support SSL connections"));
        if (answer[0] !== 0x53 || answer.length !== 1) return reject(failures.protocol(where, "PostgreSQL", `its answer to the TLS request (${answer.subarray(0, 16).toString("hex")}) is neither S nor N`));
        // SNI takes names only (RFC 6066); an address is checked against the certificate's through `host`.
        const secure = connectTls({ socket: plain, host: login.host, servername: isIP(login.host) ? undefined : login.host, rejectUnauthorized: login.tls === "verified" });
        stream = secure;
        secure.on("error", reject);
        secure.once("secureConnect", start);
      });
    });

    /** The startup, then each message the server sends, until the first row or the end of the query. */
    const start = () => {
      const parser = new Parser();
      let read = 0;
      stream.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > maxAnswerBytes) return reject(new CheckFailure("size", `${where} sent more than ${maxAnswerBytes} bytes before the query's first row; a health query's answer is small: ask for less (SELECT 1)`));
        try {
          parser.parse(chunk, (message) => answer(message as Message));
        } catch (error) {
          const said = (error as Error).message;
          // pg-protocol knows the names of the login methods it reads; another one (GSSAPI, SSPI) is a method, not garbage.
          if (/^Unknown authenticationOk message type/.test(said)) return reject(failures.auth(where, `it asks for a way of logging in healthd does not speak (${said.replace(/^Unknown authenticationOk message type /, "method ")}): give the role a scram-sha-256 password in pg_hba.conf`));
          reject(failures.protocol(where, "PostgreSQL", said));
        }
      });
      // No database named: the server takes the user's name, as libpq and pg do.
      const startup = serialize.startup({ user: login.user ?? "", ...(login.database === null ? {} : { database: login.database }), application_name: "healthd" });
      // With no password to give, the login cannot be a conversation: the query and Terminate go in the startup's
      // write, which the server reads once it has let us in (one round trip, one write, one read less). A server
      // that asks for a password anyway has its request read first and refused (auth, below), before its
      // complaint about what it read in place of the password.
      stream.write(pipelined ? Buffer.concat([startup, serialize.query(query), terminate]) : startup);
    };
    // Over TLS the first bytes answer the TLS request, then are TLS's: only a plain connection is sniffed.
    if (login.tls === "none") sniffed(plain, (first) => firstMessages.has(first[0]!), where, "PostgreSQL").catch(reject);

    let scram: ReturnType<Sasl["startSession"]> | undefined;
    let proven = false;
    /** AuthenticationOk came: the server let us in. */
    let admitted = false;
    /** The SCRAM session under way: a server's SCRAM message before it asked for SCRAM is no PostgreSQL. */
    const scramSession = () => {
      if (scram === undefined) throw failures.protocol(where, "PostgreSQL", "it sent a SCRAM message before asking for SCRAM");
      return scram;
    };
    const answer = (message: Message): void => {
      try {
        said(message);
      } catch (error) {
        fail(error);
      }
    };
    const said = (message: Message): void => {
      switch (message.name) {
        case "authenticationCleartextPassword":
          // The password itself on the wire: only to a server whose certificate was verified, which alone makes
          // it the server meant (with sslmode=require anyone in the way could ask for it; libpq's require_auth).
          password(); // none: that is the thing to fix first
          if (login.tls !== "verified") throw failures.auth(where, "it asks for the password in cleartext, which healthd sends only over a verified TLS connection: set sslmode=verify-full, or have the server ask for scram-sha-256 (pg_hba.conf)");
          return void stream.write(serialize.password(password()));
        case "authenticationMD5Password": {
          // PostgreSQL's md5: md5(md5(password + user) + salt), in hex, after "md5".
          const inner = createHash("md5").update(password() + (login.user ?? ""), "utf8").digest("hex");
          return void stream.write(serialize.password(`md5${createHash("md5").update(Buffer.concat([Buffer.from(inner), message.salt!])).digest("hex")}`));
        }
        case "authenticationSASL":
          password(); // none: refused now, not after a SCRAM message the server read our pipelined query for
          // No channel binding (SCRAM-SHA-256-PLUS): libpq's default too, and what pg does unless told to.
          scram = sasl.startSession(message.mechanisms ?? []);
          return void stream.write(serialize.sendSASLInitialResponseMessage(scram.mechanism, scram.response));
        case "authenticationSASLContinue": {
          const exchange = scramSession();
          return void sasl.continueSession(exchange, password(), message.data ?? "").then(() => stream.write(serialize.sendSCRAMClientFinalMessage(exchange.response)), fail);
        }
        case "authenticationSASLFinal":
          // The server proves it knew the password too: a server that did not is refused.
          sasl.finalizeSession(scramSession(), message.data ?? "");
          proven = true;
          return;
        case "authenticationOk":
          // A server that began SCRAM and lets us in without its proof could be anyone: refused.
          if (scram !== undefined && !proven) throw failures.auth(where, "it ended SCRAM without proving it knows the password (no server signature)");
          admitted = true;
          return;
        case "readyForQuery":
          if (loggedIn) return resolve(null); // the query ended without a row
          // Ready before it let us in is no PostgreSQL: what follows cannot be the query's answer.
          if (!admitted) throw failures.protocol(where, "PostgreSQL", "it said it was ready for a query before accepting the login");
          loggedIn = true;
          session.stage = "querying";
          if (pipelined) return; // sent with the startup
          // Terminate goes in the query's write: the server answers, reads it and ends the session itself, so
          // the close that wakes the other side is its own (our write and close cost half as much, profiled).
          return void stream.write(Buffer.concat([serialize.query(query), terminate]));
        case "dataRow":
          // A row is the query's only once logged in: one before is no answer (and with the query pipelined, the
          // server has not read it yet).
          if (!loggedIn) throw failures.protocol(where, "PostgreSQL", "it sent a row before accepting the login");
          return resolve(message.fields!);
        case "error":
          return fail(message);
        default:
          // parameterStatus, backendKeyData, notice, rowDescription, commandComplete, emptyQuery: nothing to do.
          return;
      }
    };
    /** The password the server asks for: one the URL gives none for is a refused login, said so. */
    const password = (): string => {
      if (login.password === null) throw failures.auth(where, "it asks for a password, and the check's URL gives none: write it as ${HEALTHD_SECRET_NAME}");
      return login.password;
    };
  });
}

/** What the server (or its absence) said, as the check's failure: its SQLSTATE tells a login's from a query's. */
function fromServer(error: unknown, where: string, during: "login" | "query"): unknown {
  if (error instanceof CheckFailure) return error;
  const e = error as Partial<DatabaseError>;
  if (e.severity !== undefined && typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) {
    const said = `${e.message} (SQLSTATE ${e.code})`;
    // Class 28 is a refused login; 3D000 a database that is not there. Anything else before the login ended
    // (57P03 starting up, 53300 too many connections) is the server not taking connections, not the password.
    if (e.code.startsWith("28") || e.code === "3D000") return failures.auth(where, said);
    return during === "login" ? new CheckFailure("connect", `${where} took no connection: ${said}`) : failures.query(said);
  }
  if (e.severity !== undefined || /^received invalid response/.test(e.message ?? "")) return failures.protocol(where, "PostgreSQL", e.message ?? String(error));
  // pg's SASL code says what was wrong with the server's side of SCRAM (a nonce, a signature): a login refused.
  if (/^SASL: /.test(e.message ?? "")) return failures.auth(where, e.message!);
  return error;
}
