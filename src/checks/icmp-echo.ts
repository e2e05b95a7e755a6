/**
 * The pure parts of an icmp check, whichever way its echoes go (one shared ICMP socket, icmp-socket.ts, or the
 * system's ping, icmp-process.ts): the echo request as written on the socket and the reply as read from it,
 * the table of sequence numbers in flight, and the judgment of what came back. No socket, clock or process.
 */
import type { IcmpCheck, Outcome } from "../domain/model.ts";
import { printable, round } from "./failure.ts";

export type IcmpRequest = Pick<IcmpCheck, "host" | "count" | "maxLossPercent" | "maxLatencyMs" | "timeoutMs">;

/** What came back of a check's echoes, and their round trips when any did (ms). */
export interface PingReport {
  readonly sent: number;
  readonly received: number;
  readonly rtt: { readonly min: number; readonly avg: number; readonly max: number } | null;
}

export type Family = 4 | 6;

/** An echo on the wire: the 8-byte ICMP header, then the token (8 bytes), then zeros up to ping's 56 bytes of data. */
export const echoBytes = 64;
const headerBytes = 8;

/** ICMP's echo request and reply types, and ICMPv6's. */
const requestType = { 4: 8, 6: 128 } as const;
const replyType = { 4: 0, 6: 129 } as const;

/**
 * An echo request as an ICMP datagram socket takes it: the kernel writes the identifier (the socket's own) and
 * the checksum, so both go as zero. `token` is two 32-bit halves, told back in the reply's data.
 */
export function echoRequest(family: Family, seq: number, token: readonly [number, number]): Buffer {
  const packet = Buffer.alloc(echoBytes);
  packet[0] = requestType[family];
  packet.writeUInt16BE(seq, 6);
  packet.writeUInt32BE(token[0], headerBytes);
  packet.writeUInt32BE(token[1], headerBytes + 4);
  return packet;
}

/**
 * A reply's sequence number and token, as the socket hands it (the ICMP header first, no IP header), or null
 * for anything else a target may send: a short datagram, another type. Constant work, whatever arrives.
 */
export function readEchoReply(family: Family, datagram: Buffer): { seq: number; token: [number, number] } | null {
  if (datagram.length < headerBytes + 8 || datagram[0] !== replyType[family] || datagram[1] !== 0) return null;
  return { seq: datagram.readUInt16BE(6), token: [datagram.readUInt32BE(headerBytes), datagram.readUInt32BE(headerBytes + 4)] };
}

/**
 * The echoes in flight on one socket, by their 16-bit sequence number: each new one takes the next number
 * free, wrapping, so no two in flight ever share one; a number is free again once its echo is answered or its
 * check is over. Full (null) only with 65,536 in flight.
 */
export class Sequences<T> {
  readonly #flying = new Map<number, T>();
  #next = 0;

  add(value: T): number | null {
    for (let tries = 0; tries < 0x10000; tries++) {
      const seq = this.#next;
      this.#next = (this.#next + 1) & 0xffff;
      if (this.#flying.has(seq)) continue;
      this.#flying.set(seq, value);
      return seq;
    }
    return null;
  }

  get(seq: number): T | undefined {
    return this.#flying.get(seq);
  }

  delete(seq: number): void {
    this.#flying.delete(seq);
  }

  get size(): number {
    return this.#flying.size;
  }
}

/** The report of `sent` echoes and the round trips of those that came back (ms), to the µs as ping prints them. */
export function reportOf(sent: number, rtts: readonly number[]): PingReport {
  if (rtts.length === 0) return { sent, received: 0, rtt: null };
  const us = (ms: number) => Math.round(ms * 1000) / 1000;
  return { sent, received: rtts.length, rtt: { min: us(Math.min(...rtts)), avg: us(rtts.reduce((a, b) => a + b, 0) / rtts.length), max: us(Math.max(...rtts)) } };
}

/**
 * An icmp check's result from its report: none back is a timeout, more lost than `maxLossPercent` is loss, a
 * slower average than `maxLatencyMs` is latency. The entry's answers carry the loss and the round trips; its
 * latency is the average round trip, or `elapsedMs` when none came back.
 */
export function judgeEchoes(check: IcmpRequest, report: PingReport, elapsedMs: number, checkedAt: number): Outcome {
  const loss = report.sent === 0 ? 100 : round(((report.sent - report.received) * 100) / report.sent);
  const answers = [`sent ${report.sent}, received ${report.received}, loss ${loss}%`, ...(report.rtt ? [`rtt min/avg/max ${report.rtt.min}/${report.rtt.avg}/${report.rtt.max} ms`] : [])];
  const latencyMs = report.rtt ? report.rtt.avg : round(elapsedMs);
  const fail = (errorKind: "timeout" | "loss" | "latency", message: string): Outcome => ({
    ok: false, status: null, latencyMs, matched: null, errorKind, error: printable(message), checkedAt, answers,
  });
  if (report.received === 0) return fail("timeout", `no echo from ${check.host} came back (${report.sent} sent)`);
  if (loss > check.maxLossPercent) return fail("loss", `${loss}% of the echoes to ${check.host} were lost, more than the ${check.maxLossPercent}% allowed`);
  if (check.maxLatencyMs !== null && latencyMs > check.maxLatencyMs) {
    return fail("latency", `the echoes took ${latencyMs} ms on average, more than the ${check.maxLatencyMs} ms allowed`);
  }
  return { ok: true, status: null, latencyMs, matched: 0, errorKind: null, error: null, checkedAt, answers };
}
