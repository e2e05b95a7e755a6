/**
 * WebSocket and gRPC checks (issue 84): each controller against real servers made here on 127.0.0.1 (a ws
 * server of the `ws` package, a gRPC health server of @grpc/grpc-js with healthd's own serializers) and hostile
 * ones (a server that accepts and stalls, one that floods, one that speaks another protocol); then through the
 * daemon on both engines, the API's validation, the imports and the command line.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { WebSocketServer, type WebSocket } from "ws";
import { runGrpcCheck, type GrpcRequest } from "../src/checks/grpc.ts";
import { decodeRequest, encodeResponse, healthCheckMethod } from "../src/checks/grpc-health.ts";
import { runWebsocketCheck, type WebsocketRequest } from "../src/checks/websocket.ts";
import { refusedUrl } from "./support/targets.ts";

/** A WebSocket server on 127.0.0.1; `onConnection` speaks to each client. */
async function wsServer(t: TestContext, onConnection: (socket: WebSocket, headers: Record<string, string | string[] | undefined>) => void, more: { protocols?: boolean } = {}) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, ...(more.protocols ? { handleProtocols: (offered: Set<string>) => [...offered].at(-1) ?? false } : {}) });
  server.on("connection", (socket, request) => {
    socket.on("error", () => {});
    onConnection(socket, request.headers);
  });
  await once(server, "listening");
  t.after(() => {
    for (const client of server.clients) client.terminate();
    server.close();
  });
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A TCP server on 127.0.0.1 that does `greet` to each connection (stall, garbage, plain HTTP). */
async function tcpServer(t: TestContext, greet: (socket: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const server: NetServer = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    greet(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

/** A gRPC health server on 127.0.0.1 answering each service from `statuses` (absent: NOT_FOUND), with healthd's serializers. */
async function grpcServer(t: TestContext, statuses: Record<string, number>): Promise<string> {
  const server = new grpc.Server();
  server.addService(
    {
      Check: {
        path: healthCheckMethod, requestStream: false, responseStream: false,
        requestSerialize: (v: { service: string }) => Buffer.from(v.service), requestDeserialize: decodeRequest,
        responseSerialize: encodeResponse, responseDeserialize: (b: Buffer) => ({ status: b.length }),
      },
    },
    {
      Check: (call: grpc.ServerUnaryCall<{ service: string }, { status: number }>, callback: grpc.sendUnaryData<{ status: number }>) => {
        const status = statuses[call.request.service];
        if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: "unknown service" });
        else callback(null, { status });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  t.after(() => server.forceShutdown());
  return `127.0.0.1:${port}`;
}

const ws = (url: string, more: Partial<WebsocketRequest> = {}): WebsocketRequest => ({
  url, headers: {}, protocols: [], verifyTls: true, send: null, expect: [], timeoutMs: 2000, ...more,
});
const rpc = (target: string, more: Partial<GrpcRequest> = {}): GrpcRequest => ({
  target, tls: false, verifyTls: true, service: "", maxLatencyMs: null, timeoutMs: 2000, ...more,
});
const brief = (o: { ok: boolean; errorKind: string | null; error: string | null }) => [o.ok, o.errorKind, o.error];

test("websocket: the upgrade alone, or a message sent and the first answer judged, with headers and a subprotocol", async (t) => {
  const seen: Record<string, string | string[] | undefined>[] = [];
  const url = await wsServer(t, (socket, headers) => {
    seen.push(headers);
    socket.on("message", (data) => socket.send(`echo: ${String(data)}`));
  }, { protocols: true });
  const upgrade = await runWebsocketCheck(ws(`${url}/live`, { headers: { Authorization: "Bearer x" }, protocols: ["v1.healthd"] }));
  assert.deepEqual([...brief(upgrade), upgrade.answers], [true, null, null, undefined], "nothing sent, nothing looked at: the upgrade is the check");
  assert.equal(seen[0]!.authorization, "Bearer x");
  assert.equal(seen[0]!["sec-websocket-protocol"], "v1.healthd");
  assert.match(String(seen[0]!["user-agent"]), /^healthd\//);

  const echo = await runWebsocketCheck(ws(url, { send: "ping\\n", expect: [{ contains: "pong" }, { matches: "^echo: p.ng\\n$", maxLatencyMs: 1000 }] }));
  assert.deepEqual([...brief(echo), echo.matched, echo.answers], [true, null, null, 1, ["echo: ping\n"]]);
  const wrong = await runWebsocketCheck(ws(url, { send: "status", expect: [{ contains: "ok" }] }));
  assert.deepEqual(brief(wrong), [false, "answer", 'the first message "echo: status" does not contain "ok"']);
});

test("websocket: a refused upgrade is its HTTP status; no server, garbage, a stall, a flood and a close each say what went wrong", async (t) => {
  const http = createHttpServer((_req, res) => res.writeHead(403).end("no"));
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  t.after(() => http.close());
  const refusedUpgrade = await runWebsocketCheck(ws(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/`));
  assert.deepEqual([...brief(refusedUpgrade), refusedUpgrade.status], [false, "status", "the WebSocket upgrade was answered 403 Forbidden (not 101 Switching Protocols)", 403]);

  const closed = new URL(await refusedUrl()).port;
  const refused = await runWebsocketCheck(ws(`ws://127.0.0.1:${closed}/`));
  assert.deepEqual(brief(refused), [false, "connect", `connection refused by 127.0.0.1:${closed}`]);

  const garbage = await tcpServer(t, (socket) => socket.end("SSH-2.0-OpenSSH_9.6\r\n"));
  const wrongProtocol = await runWebsocketCheck(ws(`ws://127.0.0.1:${garbage}/`));
  assert.equal(wrongProtocol.errorKind, "protocol", String(wrongProtocol.error));
  assert.match(wrongProtocol.error!, /did not answer the WebSocket upgrade in HTTP \(HPE_/);

  const stall = await tcpServer(t, () => {});
  const stalled = await runWebsocketCheck(ws(`ws://127.0.0.1:${stall}/`, { timeoutMs: 300 }));
  assert.deepEqual(brief(stalled), [false, "timeout", `no WebSocket answer from 127.0.0.1:${stall} within 300 ms (timed out connecting)`]);
  const silent = await wsServer(t, () => {});
  const quiet = await runWebsocketCheck(ws(silent, { send: "hello", timeoutMs: 300 }));
  assert.deepEqual([quiet.errorKind, quiet.error], ["timeout", `no WebSocket answer from ${new URL(silent).host} within 300 ms (timed out waiting for the first message)`]);

  // A flood: the first message is judged, the rest never read; one too large fails as size.
  const flood = await wsServer(t, (socket) => {
    for (let i = 0; i < 200; i++) socket.send(`burst ${i} ${"x".repeat(1000)}`);
  });
  const first = await runWebsocketCheck(ws(flood, { expect: [{ matches: "^burst 0 " }] }));
  assert.deepEqual(brief(first), [true, null, null]);
  assert.equal(first.answers![0]!.length, 501, "the entry keeps the first 500 characters, and an ellipsis");
  const huge = await wsServer(t, (socket) => socket.send(Buffer.alloc(1024 * 1024, 120)));
  const tooLarge = await runWebsocketCheck(ws(huge, { expect: [{ contains: "x" }] }));
  assert.deepEqual([tooLarge.errorKind, tooLarge.error], ["size", `the first message from ${new URL(huge).host} is over 65536 bytes, the most a check reads`]);

  const goodbye = await wsServer(t, (socket) => socket.close(1008, "go away"));
  const shut = await runWebsocketCheck(ws(goodbye, { send: "hi" }));
  assert.deepEqual([shut.errorKind, shut.error], ["connect", `${new URL(goodbye).host} closed the WebSocket (code 1008: "go away") while waiting for the first message`]);
});

test("grpc: SERVING passes; another status, an unknown service, no health service and no server each fail by name", async (t) => {
  const target = await grpcServer(t, { "": 1, "shop.Cart": 2, "shop.Old": 0 });
  const serving = await runGrpcCheck(rpc(target));
  assert.deepEqual([...brief(serving), serving.answers], [true, null, null, ["SERVING"]]);
  const notServing = await runGrpcCheck(rpc(target, { service: "shop.Cart" }));
  assert.deepEqual([...brief(notServing), notServing.answers], [false, "answer", 'service "shop.Cart" is NOT_SERVING, not SERVING', ["NOT_SERVING"]]);
  const unknown = await runGrpcCheck(rpc(target, { service: "shop.Old" }));
  assert.equal(unknown.error, 'service "shop.Old" is UNKNOWN, not SERVING');
  const missing = await runGrpcCheck(rpc(target, { service: "nope" }));
  assert.deepEqual(brief(missing), [false, "answer", `${target} knows no service "nope" (NOT_FOUND: unknown service)`]);

  const bare = new grpc.Server();
  const barePort = await new Promise<number>((resolve, reject) => bare.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  t.after(() => bare.forceShutdown());
  const unimplemented = await runGrpcCheck(rpc(`127.0.0.1:${barePort}`));
  assert.equal(unimplemented.errorKind, "status");
  assert.match(unimplemented.error!, /has no grpc\.health\.v1\.Health service \(UNIMPLEMENTED: /);

  const closed = new URL(await refusedUrl()).port;
  const refused = await runGrpcCheck(rpc(`127.0.0.1:${closed}`));
  assert.equal(refused.errorKind, "connect", String(refused.error));
  assert.match(refused.error!, new RegExp(`^connection refused by 127\\.0\\.0\\.1:${closed} \\(UNAVAILABLE: `));
});

test("grpc: a server that stalls is a timeout; plain HTTP, garbage and TLS it does not speak each fail without waiting for it", async (t) => {
  const stall = await tcpServer(t, () => {});
  const stalled = await runGrpcCheck(rpc(`127.0.0.1:${stall}`, { timeoutMs: 400 }));
  assert.equal(stalled.errorKind, "timeout", String(stalled.error));

  const http = await tcpServer(t, (socket) => socket.once("data", () => socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")));
  const plain = await runGrpcCheck(rpc(`127.0.0.1:${http}`, { timeoutMs: 5000 }));
  assert.equal(plain.errorKind, "protocol", String(plain.error));
  assert.match(plain.error!, new RegExp(`^127\\.0\\.0\\.1:${http} does not speak gRPC over HTTP/2 \\(UNAVAILABLE: No connection established\\. Last error: Protocol error\\)$`));
  const garbage = await tcpServer(t, (socket) => socket.end(Buffer.alloc(4096, 0xff)));
  const noise = await runGrpcCheck(rpc(`127.0.0.1:${garbage}`, { timeoutMs: 5000 }));
  assert.equal(noise.errorKind, "protocol", String(noise.error));
  const target = await grpcServer(t, { "": 1 });
  const tls = await runGrpcCheck(rpc(target, { tls: true, timeoutMs: 5000 }));
  assert.deepEqual(brief(tls), [false, "tls", `TLS with ${target} failed: wrong version number (UNAVAILABLE)`]);
});
