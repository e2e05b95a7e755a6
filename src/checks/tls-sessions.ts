/**
 * The last TLS session of each target, so that a returning check resumes it: still a fresh TCP connection and
 * a fresh handshake, but an abbreviated one, without the certificate's transfer and chain verification, nor
 * the server's signature (what it saves the check on OpenSSL 3.0 is less than hoped: tls.ts says how much). A
 * resumed handshake brings no certificate (Node's getPeerCertificate() and getPeerX509Certificate() give none,
 * tested), so what the full handshake showed of it (its names, its expiry) is kept with the session: the
 * session is that certificate's (a server resumes only what it issued to that handshake).
 *
 * A session is offered for `fullEveryMs` (10 minutes) after the full handshake that made it, then a full
 * handshake is made again: the chain is verified again and a replaced or renewed certificate is seen, so the
 * certificate a check shows is never older than that. Ten minutes is far below any certificate's warning
 * (days), and above the default intervals, so most checks resume; a server's own ticket lifetime (nginx's and
 * Node's 5 minutes) may end it sooner, which makes a full handshake, no failure. Nor is a session offered once
 * its certificate has expired on the check's clock: a resumed handshake cannot pass what the full one would
 * fail for that. A failed check drops its target's session.
 */
import type { PeerCertificate, TLSSocket } from "node:tls";
import type { Clock } from "../platform/clock.ts";
import { expiryOf } from "./connect.ts";

/** What one target's last full handshake left: the session to resume, and what it showed of the certificate. */
export interface Kept {
  readonly session: Buffer;
  /** When the full handshake was made (monotonic ms). */
  readonly fullAt: number;
  /** When the certificate expires (Unix ms): a certificate without a readable expiry leaves no session. */
  readonly validTo: number;
  /** The entry's answers: the certificate's subject and issuer. */
  readonly answers: readonly string[];
}

/** How a target is reached: a session made one way is never offered another (verified or not, another name). */
export interface SessionTarget {
  readonly host: string;
  readonly port: number;
  /** The name sent (SNI) and verified; null for an address without one. */
  readonly servername: string | null;
  readonly starttls: string | null;
  readonly verifyTls: boolean;
  readonly minVersion: string | null;
}

export function sessionKey(t: SessionTarget): string {
  return `${t.host}\0${t.port}\0${t.servername ?? ""}\0${t.starttls ?? ""}\0${t.verifyTls}\0${t.minVersion ?? ""}`;
}

export class TlsSessions {
  // A Map keeps insertion order: the first is the target whose full handshake is oldest, the one to let go
  // (a target still checked has made one within fullEveryMs).
  readonly #kept = new Map<string, Kept>();

  /**
   * @param fullEveryMs how long after its full handshake a session is offered. Default 10 minutes.
   * @param cap how many targets' sessions are kept (about 1 KB each). Default 10,000.
   */
  constructor(
    readonly fullEveryMs = 10 * 60_000,
    readonly cap = 10_000,
  ) {}

  /** `key`'s session, if one may be resumed at `monotonic` (and `now`, the wall clock, for its certificate). */
  offer(key: string, monotonic: number, now: number): Kept | undefined {
    const kept = this.#kept.get(key);
    if (kept === undefined) return undefined;
    if (monotonic - kept.fullAt < this.fullEveryMs && now < kept.validTo) return kept;
    this.#kept.delete(key);
    return undefined;
  }

  keep(key: string, kept: Kept): void {
    this.#kept.delete(key);
    this.#kept.set(key, kept);
    if (this.#kept.size > this.cap) this.#kept.delete(this.#kept.keys().next().value!);
  }

  drop(key: string): void {
    this.#kept.delete(key);
  }

  get size(): number {
    return this.#kept.size;
  }
}

/** The daemon's: one for every check of the process. */
export const tlsSessions = new TlsSessions();

/** What a handshake showed of the certificate: the socket's after a full one, the session's after a resumed one. */
export interface Shown {
  readonly resumed: boolean;
  readonly validTo: number | null;
  /** The certificate's subject and issuer, as people read them. */
  readonly answers: readonly string[];
}

export function shownBy(socket: TLSSocket, kept: Kept | undefined): Shown {
  if (kept !== undefined && socket.isSessionReused()) return { resumed: true, validTo: kept.validTo, answers: kept.answers };
  const peer = socket.getPeerCertificate();
  return { resumed: false, validTo: expiryOf(peer), answers: describe(peer) };
}

/**
 * After a check that passed: keep the session its full handshake made (a resumed one keeps the one it had). TLS
 * 1.2 issues it within the handshake (`issued`), 1.3 a round trip after it: the socket then reads until it
 * comes, the server closes, or `ms` pass (a server that issues none is asked again at the next full handshake).
 */
export async function keepAfter(sessions: TlsSessions, key: string, socket: TLSSocket, seen: Shown, fullAt: number, issued: Buffer | undefined, clock: Clock, ms: number): Promise<void> {
  if (seen.resumed || seen.validTo === null) return;
  const session = issued ?? (await ticket(socket, clock, ms));
  if (session) sessions.keep(key, { session, fullAt, validTo: seen.validTo, answers: seen.answers });
}

function ticket(socket: TLSSocket, clock: Clock, ms: number): Promise<Buffer | undefined> {
  if (ms <= 0) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const done = (session?: Buffer) => {
      clock.clearTimeout(timer);
      resolve(session);
    };
    const timer = clock.setTimeout(done, ms);
    socket.once("session", done);
    socket.once("end", () => done());
    socket.once("close", () => done());
    socket.on("error", () => done());
    socket.resume(); // what the server says besides is not this check's
  });
}

/** The certificate's subject and issuer as people read them (CN=mail.example.org, O=Example). */
function describe(cert: PeerCertificate | undefined): string[] {
  const name = (fields: object | undefined) =>
    Object.entries(fields ?? {})
      .map(([key, value]) => `${key}=${[value].flat().join("+")}`)
      .join(", ");
  return cert && Object.keys(cert).length > 0 ? [`subject: ${name(cert.subject)}`, `issuer: ${name(cert.issuer)}`] : [];
}
