/**
 * The hostile targets of the tests (test/support/targets.ts), served from their own process for
 * bench:hostile, plus a TCP port that answers plain text to TLS clients.
 */
import { createServer } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
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
const notTls = createNetServer((socket) => {
  socket.on("error", () => {});
  socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
});
await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
await new Promise<void>((resolve) => notTls.listen(0, "127.0.0.1", resolve));
process.send?.({ http: (http.address() as AddressInfo).port, notTls: (notTls.address() as AddressInfo).port });
process.on("disconnect", () => process.exit(0));
