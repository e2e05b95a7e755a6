/**
 * The kinds bench's targets, in a process of their own: an HTTP server answering 200, a TCP server that greets
 * with an SMTP-like banner, a DNS server over UDP answering one A record, a UDP echo, a TLS server and an HTTPS one
 * (a certificate made here by openssl), a WebSocket server answering each message, and a gRPC health server
 * answering SERVING; each counts what it received (icmp's echoes are the kernel's: the bench counts those
 * from the daemon's metrics). The parent asks {count: kind} for the count since it last asked. Exits when its
 * parent goes away.
 */
import { execFileSync } from "node:child_process";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import dnsPacket from "dns-packet";
import { WebSocketServer } from "ws";
import { decodeRequest, encodeResponse, healthCheckMethod } from "../src/checks/grpc-health.ts";

const counts: Record<string, number> = { http: 0, https: 0, tcp: 0, dns: 0, udp: 0, tls: 0, websocket: 0, grpc: 0 };
const ports: Record<string, number> = {};

const body = Buffer.from('{"status":"up"}');
const http = createHttpServer({ keepAliveTimeout: 1000 }, (_req, res) => {
  counts.http!++;
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body);
});
const banner = Buffer.from("220 bench ESMTP ready\r\n");
const tcp = createTcpServer((socket) => {
  counts.tcp!++;
  socket.on("error", () => {});
  socket.end(banner);
});
const dns = createSocket("udp4");
dns.on("message", (message, from) => {
  counts.dns!++;
  const query = dnsPacket.decode(message);
  const question = query.questions![0]!;
  const answer = dnsPacket.encode({
    type: "response", id: query.id, flags: dnsPacket.RECURSION_DESIRED, questions: query.questions,
    answers: [{ type: "A", name: question.name, ttl: 60, data: "192.0.2.10" }],
  });
  dns.send(answer, from.port, from.address);
});
const udp = createSocket("udp4");
udp.on("message", (message, from) => {
  counts.udp!++;
  udp.send(Buffer.concat([Buffer.from("echo: "), message]), from.port, from.address);
});
const dir = mkdtempSync(join(tmpdir(), "healthd-bench-tls-"));
execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "30", "-subj", "/CN=localhost"], { stdio: "ignore" });
const keyAndCert = { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
// It waits for the client to speak or hang up, as an HTTPS server does: ending the connection in this handler
// would send no TLS 1.3 session tickets (Node sends them after the handler has run), which every real server
// sends, and a check's client reads.
const tls = createTlsServer(keyAndCert, (socket) => {
  socket.on("error", () => {});
  socket.resume();
});
// Counted as connections: a check hangs up once its handshake is done, before the server's side of it ends.
tls.on("connection", () => counts.tls!++);
tls.on("tlsClientError", () => {});
// The same server over TLS, for what a fresh TLS connection costs an http check (beside a tls check).
const https = createHttpsServer({ ...keyAndCert, keepAliveTimeout: 1000 }, (_req, res) => {
  counts.https!++;
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length }).end(body);
});
rmSync(dir, { recursive: true, force: true });
const websocket = new WebSocketServer({ host: "127.0.0.1", port: 0 });
websocket.on("connection", (socket) => {
  counts.websocket!++;
  socket.on("error", () => {});
  socket.on("message", () => socket.send("pong"));
});
const health = new grpc.Server();
health.addService(
  { Check: { path: healthCheckMethod, requestStream: false, responseStream: false, requestSerialize: () => Buffer.alloc(0), requestDeserialize: decodeRequest, responseSerialize: encodeResponse, responseDeserialize: () => ({ status: 1 }) } },
  { Check: (_call: unknown, callback: grpc.sendUnaryData<{ status: number }>) => (counts.grpc!++, callback(null, { status: 1 })) },
);

http.listen(0, "127.0.0.1");
tcp.listen(0, "127.0.0.1");
tls.listen(0, "127.0.0.1");
https.listen(0, "127.0.0.1");
dns.bind(0, "127.0.0.1");
udp.bind(0, "127.0.0.1");
await Promise.all([once(http, "listening"), once(tcp, "listening"), once(tls, "listening"), once(https, "listening"), once(dns, "listening"), once(udp, "listening"), once(websocket, "listening")]);
ports.grpc = await new Promise<number>((resolve, reject) => health.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
Object.assign(ports, {
  http: (http.address() as AddressInfo).port,
  tcp: (tcp.address() as AddressInfo).port,
  tls: (tls.address() as AddressInfo).port,
  https: (https.address() as AddressInfo).port,
  dns: dns.address().port,
  udp: udp.address().port,
  websocket: (websocket.address() as AddressInfo).port,
});
process.send?.(ports);
process.on("message", (message: { count: string }) => {
  process.send?.({ count: counts[message.count] ?? null });
  if (message.count in counts) counts[message.count] = 0;
});
process.on("disconnect", () => process.exit(0));
