/**
 * A DNS check: one question asked of a server over UDP (and again over TCP when the answer comes truncated),
 * its answer code and records judged by the check's alternatives. dns-packet reads and writes the wire format;
 * node:dns cannot say an answer's code nor ask a server on another port. What it judges is pure (evaluateDns).
 */
import { randomInt } from "node:crypto";
import { createSocket } from "node:dgram";
import { getServers } from "node:dns";
import { isIP } from "node:net";
import dnsPacket, { type Answer, type DecodedPacket } from "dns-packet";
import { systemClock } from "../platform/clock.ts";
import type { DnsCheck, Outcome } from "../domain/model.ts";
import { parseServer } from "../domain/schema/dns.ts";
import { connect } from "./connect.ts";
import { cannotRun, firstHolding, latencyCondition, quote, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { compilePattern } from "../domain/pattern.ts";
import { judged, type Matches } from "./matching.ts";
import { Deadline, timedOut } from "./deadline.ts";

export type DnsRequest = Pick<DnsCheck, "name" | "recordType" | "server" | "expect" | "timeoutMs">;

/** What a DNS server answered, as the evaluator needs it. */
export interface DnsObservation {
  readonly rcode: string;
  /** The records of the type asked, as text (an MX as "10 mail.example.org", a TXT's strings joined). */
  readonly answers: readonly string[];
  readonly latencyMs: number;
}

/** A decoded reply; dns-packet's types leave out the answer code it reads. */
type Reply = DecodedPacket & { readonly rcode: string };

/** Answers kept in an entry: enough for any real record set, bounded against a hostile server. */
const maxAnswers = 100;

export async function runDnsCheck(check: DnsRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const server = check.server === null ? systemServer() : parseServer(check.server);
  const where = server ? `${server.host.includes(":") ? `[${server.host}]` : server.host}:${server.port}` : "the system's resolver";
  let stage = "asking over UDP";
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  if (!server) return fail(new CheckFailure("dns", "the system has no DNS server (no nameserver line in /etc/resolv.conf); give the check a server"));
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  try {
    const id = randomInt(0, 65536);
    const query = { type: "query" as const, id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: check.recordType, name: check.name, class: "IN" as const }] };
    let answer = await askUdp(server, dnsPacket.encode(query), id, deadline);
    if (answer === "truncated") {
      stage = "asking over TCP (the UDP answer was truncated)";
      answer = await askTcp(server, dnsPacket.streamEncode(query), id, deadline);
    }
    const latencyMs = round(clock.monotonic() - started);
    const answers = answer.answers!.filter((a) => a.type === check.recordType).slice(0, maxAnswers).map(recordText);
    const verdict = await judged((matches) => evaluateDns(check.expect, { rcode: answer.rcode, answers, latencyMs }, matches));
    return verdict.ok
      ? { ok: true, status: null, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, answers }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error }), latencyMs, answers };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no answer from ${where} within ${check.timeoutMs} ms (timed out ${stage}${deadline.lastProblem ? `; ${deadline.lastProblem}` : ""})`));
    return fail(classify(error, server.host, where, stage));
  } finally {
    deadline.clear();
  }
}

type Server = { host: string; port: number };

function systemServer(): Server | null {
  const first = getServers()[0];
  return first === undefined ? null : parseServer(first);
}

/**
 * Ask over UDP; answers the decoded reply, or "truncated". A reply that is not the answer to this question (not
 * DNS, another id, a query) is ignored, as resolvers do, and told if nothing better comes before the deadline.
 */
async function askUdp(server: Server, message: Buffer, id: number, deadline: Deadline): Promise<Reply | "truncated"> {
  const socket = createSocket(isIP(server.host) === 6 ? "udp6" : "udp4");
  try {
    return await deadline.until(
      new Promise<Reply | "truncated">((resolve, reject) => {
        socket.on("error", reject);
        socket.on("message", (reply: Buffer) => {
          const read = readReply(reply, id);
          if (typeof read === "string" && read !== "truncated") deadline.lastProblem = read;
          else resolve(read);
        });
        socket.send(message, server.port, server.host, (error) => error && reject(error));
      }),
    );
  } finally {
    socket.close();
  }
}

/** Ask over TCP (two bytes of length before each message). */
async function askTcp(server: Server, message: Buffer, id: number, deadline: Deadline): Promise<Reply> {
  let take = (_view: Buffer): void => {};
  const socket = connect({ host: server.host, port: server.port, tls: false, verifyTls: false }, () => take);
  try {
    return await deadline.until(
      new Promise<Reply>((resolve, reject) => {
        let received = Buffer.alloc(0);
        socket.on("error", reject);
        socket.on("connect", () => socket.write(message));
        take = (view) => {
          received = Buffer.concat([received, view]); // a copy: the view is of a buffer the next read overwrites
          if (received.length > 65_537) return reject(new CheckFailure("answer", `${server.host} sent more over TCP than a DNS message can hold`));
          if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
          const read = readReply(received.subarray(2, 2 + received.readUInt16BE(0)), id);
          if (typeof read === "string") reject(new CheckFailure("answer", read === "truncated" ? "the answer over TCP was truncated too" : read));
          else resolve(read);
        };
        socket.on("end", () => reject(new CheckFailure("answer", "the server closed the TCP connection without a whole answer")));
      }),
    );
  } finally {
    socket.destroy();
  }
}

/** A reply to query `id`, "truncated", or what is wrong with it. */
function readReply(reply: Buffer, id: number): Reply | string {
  if (reply.length < 12) return `a reply of ${reply.length} bytes is not a DNS message`;
  if (reply.readUInt16BE(0) !== id) return "a reply answered another question (its id differs)";
  if ((reply[2]! & 0x80) === 0) return "a reply was a query, not an answer";
  if ((reply[2]! & 0x02) !== 0) return "truncated";
  try {
    const packet = dnsPacket.decode(reply) as Reply;
    packet.answers ??= [];
    return packet;
  } catch (error) {
    return `a reply could not be read as DNS (${(error as Error).message})`;
  }
}

/** A record as text, as dig shows its data. */
export function recordText(answer: Answer): string {
  const data = (answer as { data: unknown }).data;
  switch (answer.type) {
    case "MX":
      return `${answer.data.preference} ${answer.data.exchange}`;
    case "SRV":
      return `${answer.data.priority ?? 0} ${answer.data.weight ?? 0} ${answer.data.port} ${answer.data.target}`;
    case "SOA": {
      const s = answer.data;
      return `${s.mname} ${s.rname} ${s.serial} ${s.refresh} ${s.retry} ${s.expire} ${s.minimum}`;
    }
    case "CAA":
      return `${answer.data.flags ?? 0} ${answer.data.tag} "${answer.data.value}"`;
    case "TXT":
      return [data].flat().map((part) => (Buffer.isBuffer(part) ? part.toString("utf8") : String(part))).join("");
    default:
      return Buffer.isBuffer(data) ? data.toString("hex") : String(data);
  }
}

/** Which alternative held, or why none did: pure. */
export function evaluateDns(expect: DnsRequest["expect"], seen: DnsObservation, matches: Matches): Verdict {
  return firstHolding(expect, conditionsOf, seen, matches);
}

/** Names compare as DNS does: case aside, with or without the root's dot. */
const same = (a: string, b: string) => a.toLowerCase().replace(/\.$/, "") === b.toLowerCase().replace(/\.$/, "");
const listed = (answers: readonly string[]) => (answers.length === 0 ? "no answers" : `answers ${answers.map((a) => quote(a)).join(", ")}`);

const built = new WeakMap<object, Condition<DnsObservation>[]>();
function conditionsOf(a: DnsRequest["expect"][number]): Condition<DnsObservation>[] {
  let list = built.get(a);
  if (list) return list;
  list = [];
  if (a.rcode !== undefined) {
    const rcode = a.rcode;
    list.push((seen) => (seen.rcode === rcode ? null : { kind: "answer", message: `answer code ${seen.rcode}, expected ${rcode}` }));
  }
  if (a.minAnswers !== undefined) {
    const min = a.minAnswers;
    list.push((seen) => (seen.answers.length >= min ? null : { kind: "answer", message: `${seen.answers.length} answers, expected at least ${min}` }));
  }
  const wanted = a.answers;
  if (wanted?.includes !== undefined) {
    const value = wanted.includes;
    list.push((seen) => (seen.answers.some((x) => same(x, value)) ? null : { kind: "answer", message: `${listed(seen.answers)}; expected one to be ${quote(value)}` }));
  } else if (wanted?.equals !== undefined) {
    const set = wanted.equals;
    list.push((seen) =>
      set.every((v) => seen.answers.some((x) => same(x, v))) && seen.answers.every((x) => set.some((v) => same(x, v)))
        ? null
        : { kind: "answer", message: `${listed(seen.answers)}; expected exactly ${set.map((v) => quote(v)).join(", ")}` },
    );
  } else if (wanted?.matches !== undefined) {
    const source = wanted.matches;
    const compiled = compilePattern(source);
    list.push((seen, matches) => {
      if (!compiled.ok) return { kind: "answer", message: cannotRun(compiled) };
      if (seen.answers.length === 0) return { kind: "answer", message: `no answers to match /${source}/` };
      for (const x of seen.answers) {
        if (!matches.test(compiled, x)) return { kind: "answer", message: `the answer ${quote(x)} does not match /${source}/` };
      }
      return null;
    });
  }
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  built.set(a, list);
  return list;
}
