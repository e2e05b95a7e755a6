/**
 * The kinds bench's targets, in a process of their own: an HTTP server answering 200, a TCP server that greets
 * with an SMTP-like banner, and a DNS server over UDP answering one A record; each counts what it received.
 * The parent asks {count: kind} for the count since it last asked. Exits when its parent goes away.
 */
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import dnsPacket from "dns-packet";

const counts = { http: 0, tcp: 0, dns: 0 };
const body = Buffer.from('{"status":"up"}');
const http = createHttpServer({ keepAliveTimeout: 1000 }, (_req, res) => {
  counts.http++;
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body);
});
const banner = Buffer.from("220 bench ESMTP ready\r\n");
const tcp = createTcpServer((socket) => {
  counts.tcp++;
  socket.on("error", () => {});
  socket.end(banner);
});
const dns = createSocket("udp4");
dns.on("message", (message, from) => {
  counts.dns++;
  const query = dnsPacket.decode(message);
  const question = query.questions![0]!;
  const answer = dnsPacket.encode({
    type: "response", id: query.id, flags: dnsPacket.RECURSION_DESIRED, questions: query.questions,
    answers: [{ type: "A", name: question.name, ttl: 60, data: "192.0.2.10" }],
  });
  dns.send(answer, from.port, from.address);
});
http.listen(0, "127.0.0.1");
tcp.listen(0, "127.0.0.1");
dns.bind(0, "127.0.0.1");
await Promise.all([once(http, "listening"), once(tcp, "listening"), once(dns, "listening")]);
process.send?.({ http: (http.address() as AddressInfo).port, tcp: (tcp.address() as AddressInfo).port, dns: dns.address().port });
process.on("message", (message: { count: keyof typeof counts }) => {
  process.send?.({ count: counts[message.count] });
  counts[message.count] = 0;
});
process.on("disconnect", () => process.exit(0));
