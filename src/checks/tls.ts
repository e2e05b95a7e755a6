/**
 * A TLS check: connect, run the protocol's STARTTLS exchange when it has one (starttls.ts), make the handshake
 * verifying the chain for the server's name, and judge the certificate's days and the latency. One deadline,
 * `timeoutMs`, covers it all. The entry's answers are the certificate's subject and issuer; its expiry goes
 * where every kind's does (certExpiresAt: certWarnDays warns of it). What it judges is pure (evaluateTls).
 *
 * Its CPU is an https check's, the same fresh handshake (docs/benchmarks.md), and is OpenSSL's own work a
 * connection, which healthd cannot cut without weakening the check: the ClientHello's key share (19 % of the
 * busy time, profiled), the server's answer and chain (parsing and verifying the certificate), reading the
 * certificate out for the entry (9 %), making and closing the socket (about 15 %). What was healthd's own is
 * gone: a secure context made a connection (now one a lowest version, connect.ts), the certificate read
 * twice, a plain socket under the TLS one when there is no STARTTLS. No session resumption: it saved the
 * client nothing measurable on OpenSSL 3.0 (loading a session parses its certificate again) and would show a
 * certificate from an earlier handshake.
 */
import { connect as netConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from "node:tls";
import { systemClock } from "../platform/clock.ts";
import type { Outcome, TlsCheck } from "../domain/model.ts";
import { expiryOf, secureContext } from "./connect.ts";
import { certCondition, firstHolding, latencyCondition, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { matchesHere } from "./matching.ts";
import { startTls } from "./starttls.ts";
import { Deadline, timedOut } from "./deadline.ts";

export type TlsRequest = Pick<TlsCheck, "host" | "port" | "starttls" | "servername" | "verifyTls" | "minVersion" | "expect" | "timeoutMs">;

/** What a TLS check showed, as the evaluator needs it. */
export interface TlsObservation {
  readonly latencyMs: number;
  readonly certValidTo: number | null;
  readonly checkedAt: number;
}

export async function runTlsCheck(check: TlsRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const where = `${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
  let stage = "connecting";
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  // The outermost socket: the TLS one; with STARTTLS the plain one, then the TLS one over it, which owns it
  // (destroying the plain one under a TLS socket crashes the process at its exit).
  let socket: Socket | undefined;
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const servername = check.servername ?? (isIP(check.host) ? undefined : check.host);
    const tls = { servername, rejectUnauthorized: check.verifyTls, secureContext: secureContext(check.minVersion) };
    const exchange = async (): Promise<TLSSocket> => {
      if (!check.starttls) {
        // Without STARTTLS, one TLS socket makes its own TCP connection (one socket object fewer than a plain
        // one under it): its 'connect' is the TCP connection's, the handshake's stage begins there.
        const secure = (socket = tlsConnect({ host: check.host, port: check.port, ...tls }));
        secure.once("connect", () => (stage = "in the TLS handshake"));
        return opened(secure, "secureConnect");
      }
      const plain = await opened((socket = netConnect({ host: check.host, port: check.port })), "connect");
      stage = `asking for STARTTLS (${check.starttls})`;
      await startTls(plain, check.starttls, where);
      if (deadline.over) throw timedOut; // agreed too late: the socket is destroyed already
      stage = "in the TLS handshake";
      return opened((socket = tlsConnect({ socket: plain, ...tls })), "secureConnect");
    };
    const secure = await deadline.until(exchange());
    const latencyMs = round(clock.monotonic() - started);
    // Asked for once: each call decodes the certificate again.
    const peer = secure.getPeerCertificate();
    const certValidTo = expiryOf(peer);
    const answers = describe(peer);
    // No pattern among a tls check's conditions: nothing to run off the event loop.
    const verdict = evaluateTls(check.expect, { latencyMs, certValidTo, checkedAt });
    const cert = certValidTo === null ? {} : { certExpiresAt: certValidTo };
    return verdict.ok
      ? { ok: true, status: null, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, answers, ...cert }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error }), latencyMs, answers, ...cert };
  } catch (error) {
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

/** The certificate's subject and issuer as people read them (CN=mail.example.org, O=Example). */
function describe(cert: PeerCertificate | undefined): string[] {
  const name = (fields: object | undefined) =>
    Object.entries(fields ?? {})
      .map(([key, value]) => `${key}=${[value].flat().join("+")}`)
      .join(", ");
  return cert && Object.keys(cert).length > 0 ? [`subject: ${name(cert.subject)}`, `issuer: ${name(cert.issuer)}`] : [];
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
