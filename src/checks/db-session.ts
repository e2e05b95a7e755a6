/**
 * What the database check's runner (database.ts) and its drivers (db-postgres.ts, db-mysql.ts, db-redis.ts)
 * share: the login a driver is given, the session both hold while the check runs, and the failures a driver
 * says what the server did with.
 */
import type { Connection } from "../domain/schema/database.ts";
import { CheckFailure } from "./failure.ts";

/** What a driver is given: where to go, as whom (the password read), and how long the whole check has. */
export interface Login extends Omit<Connection, "password"> {
  readonly password: string | null;
  readonly timeoutMs: number;
}

/** What a driver and the runner share while a check runs: what it is doing, and how to end it. */
export interface Session {
  /** What the check is doing, for a timeout's message ("connecting", "logging in", "querying"). */
  stage: string;
  /** Ends the connection at once (the runner calls it when the check is over, whatever happened). */
  close: () => void;
  /** Whether the check is over: a driver that loaded its library too late makes no connection. */
  readonly over: () => boolean;
}

/** A driver's answer: the first row's values as text (null for SQL's NULL), or null when no row came. */
export type Row = readonly (string | null)[] | null;

/** Errors a driver meets, said as the kind of failure they are. */
export const failures = {
  /** The server refused the login (user, password, database, or the client's way of logging in). */
  auth: (where: string, said: string) => new CheckFailure("auth", `${where} refused the login: ${said}`),
  /** The server failed the query. */
  query: (said: string) => new CheckFailure("query", `the query failed: ${said}`),
  /** What came back was not the protocol (garbage, another service on the port). */
  protocol: (where: string, server: string, said: string) => new CheckFailure("protocol", `${where} did not answer as a ${server} server: ${said}`),
};

/**
 * The server closed the connection before its answer, as classify (failure.ts) reads it: a constant, not an Error
 * made at each close. A connection closes after every answer too, when the check's promise has long settled, and
 * the Error's stack trace made then for nothing was 3 % of a postgres check's CPU (profiled under bench:kinds).
 */
export const closedByServer: { readonly code: "ECONNRESET"; readonly message: string } = Object.freeze({ code: "ECONNRESET", message: "the server closed the connection" });

/**
 * Rejects with a protocol failure when the first bytes the server sends cannot begin an answer of its
 * protocol: garbage then fails at once, rather than at the deadline while the client waits for the rest of a
 * message whose length was garbage too. Never resolves; a first chunk too short to judge is let through.
 */
export function sniffed(socket: { once(event: "data", listener: (chunk: Buffer) => void): unknown }, looksRight: (first: Buffer) => boolean | undefined, where: string, server: string): Promise<never> {
  return new Promise<never>((_, reject) => {
    socket.once("data", (chunk) => {
      if (looksRight(chunk) !== false) return;
      const shown = chunk.subarray(0, 16).toString("hex").replace(/(..)/g, "$1 ").trim();
      reject(failures.protocol(where, server, `its first bytes (${shown}) begin no ${server} message`));
    });
  });
}
