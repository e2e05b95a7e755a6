/**
 * The benchmarks' target: a plain node:http server on 127.0.0.1 in its own process (so it does not share
 * an event loop with what is measured). Prints its port, answers every request with 200 and a short body,
 * and exits when its parent goes away.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const body = Buffer.from('{"status":"up"}');
const server = createServer({ keepAliveTimeout: 1000 }, (_req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
process.on("disconnect", () => process.exit(0));
