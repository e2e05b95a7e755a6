/**
 * A UDP check: resolve the host, send one datagram from a socket connected to the port (so that the system
 * tells of an ICMP port unreachable), take the first datagram that comes back, and judge it. One deadline,
 * `timeoutMs`, covers it all; the socket is closed at once after the first answer, so a target that floods
 * costs one datagram. What it judges is pure (evaluateUdp).
 */
import { createSocket } from "node:dgram";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { systemClock } from "../platform/clock.ts";
import type { Outcome, UdpCheck } from "../domain/model.ts";
import { datagramBytes } from "../domain/schema/udp.ts";
import { firstHolding, latencyCondition, quote, textConditions, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { judged, type Matches } from "./matching.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { unescape } from "./tcp.ts";

export type UdpRequest = Pick<UdpCheck, "host" | "port" | "send" | "sendHex" | "expect" | "timeoutMs">;

/** What a UDP exchange showed, as the evaluator needs it. */
export interface UdpObservation {
  /** The answer's first bytes (up to 1,400). */
  readonly answer: Buffer;
  /** The same, as text (invalid UTF-8 as U+FFFD). */
  readonly text: string;
  /** From sending to the answer. */
  readonly latencyMs: number;
}

export async function runUdpCheck(check: UdpRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const where = `${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
  let stage = "resolving the host";
  let close = () => {};
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const exchange = async (): Promise<UdpObservation> => {
      const address = isIP(check.host) ? { address: check.host, family: isIP(check.host) } : await lookup(check.host);
      if (deadline.over) throw timedOut; // resolved too late: a socket made now would never be closed
      stage = "waiting for an answer";
      const socket = createSocket(address.family === 6 ? "udp6" : "udp4");
      close = () => socket.close();
      return new Promise<UdpObservation>((resolve, reject) => {
        let sentAt = 0;
        socket.on("error", reject);
        socket.once("message", (message: Buffer) => {
          const answer = Buffer.from(message.subarray(0, datagramBytes)); // a copy: the socket is closed next
          close(); // what else the target sends is not read
          resolve({ answer, text: answer.toString("utf8"), latencyMs: round(clock.monotonic() - sentAt) });
        });
        socket.connect(check.port, address.address, () => {
          sentAt = clock.monotonic();
          socket.send(payloadOf(check), (error) => error && reject(error));
        });
      });
    };
    const seen = await deadline.until(exchange());
    const verdict = await judged((matches) => evaluateUdp(check.expect, seen, matches));
    return verdict.ok
      ? { ok: true, status: null, latencyMs: seen.latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error }), latencyMs: seen.latencyMs };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no answer from ${where} within ${check.timeoutMs} ms (timed out ${stage})`));
    // A connected UDP socket hears of an ICMP port unreachable as ECONNREFUSED on its next send or receive.
    if ((error as { code?: string }).code === "ECONNREFUSED") return fail(new CheckFailure("connect", `${where} answered that the port is closed (ICMP port unreachable)`));
    return fail(classify(error, check.host, where, stage));
  } finally {
    deadline.clear();
    try {
      close();
    } catch {
      // closed already (an error closed it)
    }
  }
}

/** The datagram to send: `send` with its escapes read, or `sendHex`'s bytes. */
export function payloadOf(check: Pick<UdpCheck, "send" | "sendHex">): Buffer {
  return check.sendHex !== null ? Buffer.from(check.sendHex, "hex") : Buffer.from(unescape(check.send ?? ""), "utf8");
}

/** Which alternative held, or why none did: pure. No alternatives: any answer was enough. */
export function evaluateUdp(expect: UdpRequest["expect"], seen: UdpObservation, matches: Matches): Verdict {
  if (expect.length === 0) return { ok: true, matched: 0 };
  return firstHolding(expect, conditionsOf, seen, matches);
}

const built = new WeakMap<object, Condition<UdpObservation>[]>();
function conditionsOf(a: UdpRequest["expect"][number]): Condition<UdpObservation>[] {
  let list = built.get(a);
  if (list) return list;
  list = textConditions<UdpObservation>(a, (seen) => seen.text, (seen) => `the answer ${quote(seen.text)}`);
  if (a.hex !== undefined) {
    const bytes = Buffer.from(a.hex, "hex");
    const hex = a.hex.toLowerCase();
    list.push((seen) =>
      seen.answer.includes(bytes) ? null : { kind: "answer", message: `the answer (hex ${seen.answer.subarray(0, 64).toString("hex")}) does not hold the bytes ${hex}` },
    );
  }
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  built.set(a, list);
  return list;
}
