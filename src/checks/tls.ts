/**
 * A TLS check: connect, run the protocol's STARTTLS exchange when it has one (starttls.ts), make the handshake
 * verifying the chain for the server's name, and judge the certificate's days and the latency. One deadline,
 * `timeoutMs`, covers it all. The entry's answers are the certificate's subject and issuer; its expiry goes
 * where every kind's does (certExpiresAt: certWarnDays warns of it). What it judges is pure (evaluateTls).
 * A returning check resumes its target's session, with a full handshake at least every 10 minutes
 * (tls-sessions.ts).
 *
 * Cost (bench:kinds, 1,000 checks every 20 s of one local TLS 1.3 target, Node 20 with OpenSSL 3.0, a loaded
 * 2-core machine, 2026-12-06): 1.4 to 1.9 ms CPU a check, 2.2 to 2.8 times an http check's, against 3.2 to 3.6
 * before the shared secure context and the certificate read once, which made that gain: with sessions never
 * offered it was 2.8 as well. Not the 1.5 aimed at: in a profile of the daemon, OpenSSL's own work a
 * connection is most of what is left, decoding the session to resume (it holds the certificate, parsed again
 * each time: 30 % of the busy time) and making the ClientHello (its key share: 26 %); a full handshake decodes
 * the same certificate and verifies it, so resuming saves the client little on OpenSSL 3.0 (the server more:
 * no signature, no certificate sent).
 */
import { connect as netConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { systemClock } from "../platform/clock.ts";
import type { Outcome, TlsCheck } from "../domain/model.ts";
import { secureContext } from "./connect.ts";
import { certCondition, firstHolding, latencyCondition, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { matchesHere } from "./matching.ts";
import { startTls } from "./starttls.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { keepAfter, sessionKey, shownBy, tlsSessions, type TlsSessions } from "./tls-sessions.ts";

export type TlsRequest = Pick<TlsCheck, "host" | "port" | "starttls" | "servername" | "verifyTls" | "minVersion" | "expect" | "timeoutMs">;

/** What a TLS check showed, as the evaluator needs it. */
export interface TlsObservation {
  readonly latencyMs: number;
  readonly certValidTo: number | null;
  readonly checkedAt: number;
}

export interface TlsOptions extends ControllerOptions {
  /** Where a returning check finds its target's last session (tls-sessions.ts). Default the process's. */
  readonly sessions?: TlsSessions;
  /** Certificates trusted instead of Node's bundled roots (a private CA: the tests'). Default none. */
  readonly ca?: string;
}

export async function runTlsCheck(check: TlsRequest, options: TlsOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const sessions = options.sessions ?? tlsSessions;
  const servername = check.servername ?? (isIP(check.host) ? undefined : check.host);
  const key = sessionKey({ host: check.host, port: check.port, servername: servername ?? null, starttls: check.starttls, verifyTls: check.verifyTls, minVersion: check.minVersion });
  const kept = sessions.offer(key, started, checkedAt);
  const where = `${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
  let stage = "connecting";
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  // The outermost socket: the plain one, then the TLS one over it, which owns it (destroying the plain one
  // under a TLS socket crashes the process at its exit).
  let socket: Socket | undefined;
  let issued: Buffer | undefined;
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const exchange = async (): Promise<TLSSocket> => {
      const plain = await opened((socket = netConnect({ host: check.host, port: check.port })), "connect");
      if (check.starttls) {
        stage = `asking for STARTTLS (${check.starttls})`;
        await startTls(plain, check.starttls, where);
      }
      if (deadline.over) throw timedOut; // agreed too late: the socket is destroyed already
      stage = "in the TLS handshake";
      const secure = tlsConnect({ socket: plain, servername, rejectUnauthorized: check.verifyTls, secureContext: secureContext(check.minVersion, options.ca), ...(kept ? { session: kept.session } : {}) });
      // TLS 1.2 issues the session within the handshake, 1.3 after it (keepAfter waits for it).
      secure.once("session", (session: Buffer) => (issued = session));
      return opened((socket = secure), "secureConnect");
    };
    const secure = await deadline.until(exchange());
    const latencyMs = round(clock.monotonic() - started);
    // A resumed handshake brings no certificate: what its full one showed is kept with the session.
    const seen = shownBy(secure, kept);
    const certValidTo = seen.validTo;
    const answers = [...seen.answers];
    // No pattern among a tls check's conditions: nothing to run off the event loop.
    const verdict = evaluateTls(check.expect, { latencyMs, certValidTo, checkedAt });
    const cert = certValidTo === null ? {} : { certExpiresAt: certValidTo };
    if (!verdict.ok) {
      sessions.drop(key);
      return { ...fail({ kind: verdict.errorKind, message: verdict.error }), latencyMs, answers, ...cert };
    }
    // Wait for a TLS 1.3 ticket as long as the connection took so far (more than the round trip it needs), at
    // least 50 ms, within the deadline.
    await keepAfter(sessions, key, secure, seen, started, issued, clock, Math.min(Math.max(clock.monotonic() - started, 50), check.timeoutMs - latencyMs));
    return { ok: true, status: null, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, answers, ...cert };
  } catch (error) {
    sessions.drop(key);
    if (error === timedOut) return fail(new CheckFailure("timeout", `no TLS connection to ${where} within ${check.timeoutMs} ms (timed out ${stage})`));
    return fail(classify(error, check.host, where, stage));
  } finally {
    deadline.clear();
    socket?.destroy();
  }
}

/** `socket` once it emits `event`, or its error. */
function opened<S extends Socket>(socket: S, event: string): Promise<S> {
  return new Promise((resolve, reject) => {
    socket.once(event, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Which alternative held, or why none did: pure. No alternatives: the verified handshake was enough. */
export function evaluateTls(expect: TlsRequest["expect"], seen: TlsObservation): Verdict {
  if (expect.length === 0) return { ok: true, matched: 0 };
  return firstHolding(expect, conditionsOf, seen, matchesHere);
}

const built = new WeakMap<object, Condition<TlsObservation>[]>();
function conditionsOf(a: TlsRequest["expect"][number]): Condition<TlsObservation>[] {
  let list = built.get(a);
  if (list) return list;
  list = [];
  if (a.certValidDays !== undefined) list.push(certCondition(a.certValidDays, "the server sent no certificate"));
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  built.set(a, list);
  return list;
}
