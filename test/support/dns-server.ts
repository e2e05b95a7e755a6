/**
 * A DNS server on 127.0.0.1 for the tests, over UDP and TCP on the same port, answering from a table. A name's
 * entry may answer with a code (NXDOMAIN, SERVFAIL, ...), truncate over UDP (the whole answer only over TCP),
 * say nothing, or send bytes that are not DNS. Built with dns-packet, as healthd's client is; the tests assert
 * what reaches healthd, so a shared bug in the library would still show as a wrong answer.
 */
import { createSocket, type RemoteInfo } from "node:dgram";
import { once } from "node:events";
import { createServer, type Socket } from "node:net";
import type { TestContext } from "node:test";
import dnsPacket, { type Answer } from "dns-packet";

export interface Zone {
  readonly answers?: readonly Answer[];
  readonly rcode?: string;
  /** Over UDP: the header with the truncated flag and no records; the answer comes over TCP. */
  readonly truncate?: boolean;
  readonly silent?: boolean;
  readonly garbage?: boolean;
}

export interface DnsServer {
  /** host:port, as a check's `server` names it. */
  readonly address: string;
  readonly port: number;
  /** Questions asked, as "udp A example.test". */
  readonly asked: string[];
}

export async function dnsServer(t: TestContext, zones: Record<string, Zone>): Promise<DnsServer> {
  const asked: string[] = [];
  const tcp = createServer((socket: Socket) => {
    let received = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
      const reply = answer(received.subarray(2, 2 + received.readUInt16BE(0)), "tcp");
      received = Buffer.alloc(0);
      if (reply) socket.end(Buffer.concat([Buffer.from([reply.length >> 8, reply.length & 0xff]), reply]));
    });
    socket.on("error", () => {});
  });
  tcp.listen(0, "127.0.0.1");
  await once(tcp, "listening");
  const port = (tcp.address() as { port: number }).port;
  const udp = createSocket("udp4");
  udp.on("message", (message: Buffer, from: RemoteInfo) => {
    const reply = answer(message, "udp");
    if (reply) udp.send(reply, from.port, from.address);
  });
  udp.bind(port, "127.0.0.1");
  await once(udp, "listening");
  t.after(() => {
    tcp.close();
    udp.close();
  });

  function answer(message: Buffer, over: "udp" | "tcp"): Buffer | undefined {
    const query = dnsPacket.decode(message);
    const question = query.questions![0]!;
    asked.push(`${over} ${question.type} ${question.name}`);
    const zone = zones[question.name] ?? { rcode: "NXDOMAIN" };
    if (zone.silent) return undefined;
    if (zone.garbage) return Buffer.from("this is not a DNS message at all");
    const truncated = zone.truncate && over === "udp";
    const rcode = zone.rcode ?? "NOERROR";
    return dnsPacket.encode({
      type: "response",
      id: query.id,
      flags: dnsPacket.RECURSION_DESIRED | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | rcodeNumber(rcode),
      questions: query.questions,
      answers: truncated ? [] : (zone.answers ?? []).map((a) => ({ ...a, name: a.name ?? question.name })) as Answer[],
    });
  }
  return { address: `127.0.0.1:${port}`, port, asked };
}

const codes = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"];
const rcodeNumber = (name: string) => codes.indexOf(name);
