/**
 * The hostile targets of the tests (test/support/targets.ts), served from their own process for
 * bench:hostile, plus a TCP port that answers plain text to TLS clients, two banners that never end (one
 * endless, one a byte at a time), and three DNS servers: one silent, one answering garbage, one truncating
 * every UDP answer with a TCP port that accepts and says nothing.
 */
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { once } from "node:events";
import { createServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server } from "node:net";
import dnsPacket from "dns-packet";
import { routes } from "../test/support/targets.ts";

const http = createServer((req, res) => {
  const path = (req.url ?? "/").split("?")[0]!;
  const hops = /^\/hops\/(\d+)$/.exec(path);
  if (hops) {
    res.writeHead(302, { location: `/hops/${Number(hops[1]) + 1}` });
    res.end();
    return;
  }
  (routes[path] ?? ((_q, r) => ((r.statusCode = 404), r.end())))(req, res);
});
const tcp = (onSocket: (socket: import("node:net").Socket) => void): Server =>
  createNetServer((socket) => {
    socket.on("error", () => {});
    onSocket(socket);
  });
const notTls = tcp((socket) => socket.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
const chunk = Buffer.alloc(16 * 1024, "x");
const endlessBanner = tcp((socket) => {
  const write = () => {
    while (!socket.destroyed && socket.write(chunk));
  };
  socket.on("drain", write);
  write();
});
const dribbleBanner = tcp((socket) => {
  const timer = setInterval(() => socket.write("2"), 100);
  socket.on("close", () => clearInterval(timer));
});
const udp = (answer: (message: Buffer) => Buffer | undefined): UdpSocket => {
  const socket = createSocket("udp4");
  socket.on("message", (message, from) => {
    const reply = answer(message);
    if (reply) socket.send(reply, from.port, from.address);
  });
  return socket;
};
const dnsSilent = udp(() => undefined);
const dnsGarbage = udp(() => Buffer.from("\u0000\u0001 definitely not DNS"));
const dnsTruncated = udp((message) => {
  const query = dnsPacket.decode(message);
  return dnsPacket.encode({ type: "response", id: query.id, flags: dnsPacket.TRUNCATED_RESPONSE, questions: query.questions, answers: [] });
});
const truncatedTcp = tcp(() => {}); // accepts, never answers

for (const server of [http, notTls, endlessBanner, dribbleBanner]) server.listen(0, "127.0.0.1");
await Promise.all([http, notTls, endlessBanner, dribbleBanner].map((s) => once(s, "listening")));
for (const socket of [dnsSilent, dnsGarbage]) socket.bind(0, "127.0.0.1");
await Promise.all([dnsSilent, dnsGarbage].map((s) => once(s, "listening")));
// The truncating server's TCP side listens on the port its UDP side has.
truncatedTcp.listen(0, "127.0.0.1");
await once(truncatedTcp, "listening");
dnsTruncated.bind((truncatedTcp.address() as AddressInfo).port, "127.0.0.1");
await once(dnsTruncated, "listening");
const port = (s: Server) => (s.address() as AddressInfo).port;
process.send?.({
  http: port(http),
  notTls: port(notTls),
  endlessBanner: port(endlessBanner),
  dribbleBanner: port(dribbleBanner),
  dnsSilent: dnsSilent.address().port,
  dnsGarbage: dnsGarbage.address().port,
  dnsTruncated: dnsTruncated.address().port,
});
process.on("disconnect", () => process.exit(0));
