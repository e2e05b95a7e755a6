/**
 * WebSocket and gRPC checks (issue 84): each controller against real servers made here on 127.0.0.1 (a ws
 * server of the `ws` package, a gRPC health server of @grpc/grpc-js with healthd's own serializers) and hostile
 * ones (a server that accepts and stalls, one that floods, one that speaks another protocol), over TLS; then through the
 * daemon on both engines, the API's validation, the imports and the command line.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { constants, createServer as createHttp2Server, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { WebSocketServer, type WebSocket } from "ws";
import { runGrpcCheck, type GrpcRequest } from "../src/checks/grpc.ts";
import { decodeRequest, encodeResponse, healthCheckMethod } from "../src/checks/grpc-health.ts";
import { runWebsocketCheck, type WebsocketRequest } from "../src/checks/websocket.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckDone } from "../src/daemon.ts";
import { runHealthd } from "./support/cli.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { selfSigned } from "./support/certs.ts";
import { createServer as createHttpsServer } from "node:https";
import { refusedUrl } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

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
  assert.equal(wrongProtocol.error, `127.0.0.1:${garbage} did not answer the WebSocket upgrade in HTTP (the status line is not HTTP/1.x: "SSH-2.0-OpenSSH_9.6")`);

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
  assert.match(refused.error!, new RegExp(`^connection refused by 127\\.0\\.0\\.1:${closed}$`));
});

test("grpc: a server that stalls is a timeout; plain HTTP, garbage and TLS it does not speak each fail without waiting for it", async (t) => {
  const stall = await tcpServer(t, () => {});
  const stalled = await runGrpcCheck(rpc(`127.0.0.1:${stall}`, { timeoutMs: 400 }));
  assert.equal(stalled.errorKind, "timeout", String(stalled.error));

  const http = await tcpServer(t, (socket) => socket.once("data", () => socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")));
  const plain = await runGrpcCheck(rpc(`127.0.0.1:${http}`, { timeoutMs: 5000 }));
  assert.equal(plain.errorKind, "protocol", String(plain.error));
  assert.match(plain.error!, new RegExp(`^127\\.0\\.0\\.1:${http} does not speak gRPC over HTTP/2 \\(Protocol error\\); if it serves gRPC over TLS, set tls: true$`));
  const garbage = await tcpServer(t, (socket) => socket.end(Buffer.alloc(4096, 0xff)));
  const noise = await runGrpcCheck(rpc(`127.0.0.1:${garbage}`, { timeoutMs: 5000 }));
  assert.equal(noise.errorKind, "protocol", String(noise.error));
  const target = await grpcServer(t, { "": 1 });
  const tls = await runGrpcCheck(rpc(target, { tls: true, timeoutMs: 5000 }));
  assert.deepEqual(brief(tls), [false, "tls", `TLS with ${target} failed: wrong version number (ERR_SSL_WRONG_VERSION_NUMBER)`]);
});

test("over TLS: wss:// and a grpcs target with a self-signed certificate fail as tls, and pass with verifyTls false", async (t) => {
  const cert = selfSigned(tempDir(t), 30);
  const https = createHttpsServer(cert);
  const secure = new WebSocketServer({ server: https });
  secure.on("connection", (socket) => socket.on("message", () => socket.send("pong")));
  https.listen(0, "127.0.0.1");
  await once(https, "listening");
  t.after(() => {
    for (const client of secure.clients) client.terminate();
    https.close();
  });
  const wss = `wss://127.0.0.1:${(https.address() as AddressInfo).port}/`;
  const refused = await runWebsocketCheck(ws(wss, { send: "ping" }));
  assert.equal(refused.errorKind, "tls", String(refused.error));
  assert.match(refused.error!, /^TLS with 127\.0\.0\.1:\d+ failed: self-signed certificate \(DEPTH_ZERO_SELF_SIGNED_CERT\)$/);
  const trusted = await runWebsocketCheck(ws(wss, { send: "ping", verifyTls: false, expect: [{ contains: "pong" }] }));
  assert.deepEqual(brief(trusted), [true, null, null]);

  const server = new grpc.Server();
  server.addService(
    { Check: { path: healthCheckMethod, requestStream: false, responseStream: false, requestSerialize: () => Buffer.alloc(0), requestDeserialize: decodeRequest, responseSerialize: encodeResponse, responseDeserialize: () => ({ status: 1 }) } },
    { Check: (_call: unknown, callback: grpc.sendUnaryData<{ status: number }>) => callback(null, { status: 1 }) },
  );
  const credentials = grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(cert.key), cert_chain: Buffer.from(cert.cert) }]);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", credentials, (e, p) => (e ? reject(e) : resolve(p))));
  t.after(() => server.forceShutdown());
  const untrusted = await runGrpcCheck(rpc(`localhost:${port}`, { tls: true }));
  assert.equal(untrusted.errorKind, "tls", String(untrusted.error));
  assert.match(untrusted.error!, /^TLS with localhost:\d+ failed: self-signed certificate \(DEPTH_ZERO_SELF_SIGNED_CERT\)$/);
  const passed = await runGrpcCheck(rpc(`localhost:${port}`, { tls: true, verifyTls: false }));
  assert.deepEqual([...brief(passed), passed.answers], [true, null, null, ["SERVING"]]);
});

/** An HTTP/2 server on `host` (node:http2) that hands each call's headers and HealthCheckRequest to `answer`: a gRPC server with faults. */
async function h2Server(t: TestContext, host: string, answer: (stream: ServerHttp2Stream, service: string, headers: IncomingHttpHeaders) => void) {
  const server = createHttp2Server();
  const sessions: ServerHttp2Session[] = [];
  const closed: Promise<unknown>[] = [];
  server.on("session", (session) => {
    sessions.push(session);
    closed.push(once(session, "close"));
    session.on("error", () => {});
  });
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => answer(stream, decodeRequest(Buffer.concat(chunks).subarray(5)).service, headers));
  });
  server.listen(0, host);
  await once(server, "listening");
  t.after(() => {
    for (const session of sessions) session.destroy();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  return { target: host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`, closed };
}

test("grpc over node:http2: headers, Trailers-Only, trailers, resets and bodies each judged; a stalling or flooding server holds nothing", async (t) => {
  const message = (bytes: Buffer, flag = 0) => {
    const prefix = Buffer.from([flag, 0, 0, 0, 0]);
    prefix.writeUInt32BE(bytes.length, 1);
    return Buffer.concat([prefix, bytes]);
  };
  const grpcHeaders = { ":status": 200, "content-type": "application/grpc+proto" };
  const answerWith = (stream: ServerHttp2Stream, body: Buffer, trailers: Record<string, string>) => {
    stream.respond(grpcHeaders, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers(trailers));
    stream.end(body);
  };
  const heard: IncomingHttpHeaders[] = [];
  const { target, closed } = await h2Server(t, "127.0.0.1", (stream, service, headers) => {
    heard.push(headers);
    if (service === "serving") answerWith(stream, message(encodeResponse({ status: 1 })), { "grpc-status": "0" });
    else if (service === "gone") stream.respond({ ...grpcHeaders, "grpc-status": "5", "grpc-message": "no%20such%20service%3A%20caf%C3%A9" }, { endStream: true });
    else if (service === "late") stream.respond({ ...grpcHeaders, "grpc-status": "4" }, { endStream: true });
    else if (service === "web") stream.respond({ ":status": 404, "content-type": "text/html" }), stream.end("<h1>Not Found</h1>");
    else if (service === "huge") stream.respond(grpcHeaders), stream.write(Buffer.from([0, 0, 1, 0, 0])), stream.write(Buffer.alloc(16_384));
    else if (service === "flood") {
      stream.respond(grpcHeaders);
      const more = () => { while (!stream.destroyed && stream.write(message(encodeResponse({ status: 1 })))); };
      stream.on("drain", more), more();
    } else if (service === "zipped") answerWith(stream, message(encodeResponse({ status: 1 }), 1), { "grpc-status": "0" });
    else if (service === "garbled") answerWith(stream, message(Buffer.from([0x0f])), { "grpc-status": "0" });
    else if (service === "empty") answerWith(stream, Buffer.alloc(0), { "grpc-status": "0" });
    else if (service === "refused") stream.close(constants.NGHTTP2_REFUSED_STREAM);
    else if (service === "hang-up") stream.respond(grpcHeaders), stream.session?.destroy();
    else if (service === "stall") stream.respond(grpcHeaders);
  });
  const ask = (service: string, more: Partial<GrpcRequest> = {}) => runGrpcCheck(rpc(target, { service, ...more }), { userAgent: "healthd-test/1" });

  const serving = await ask("serving");
  assert.deepEqual([...brief(serving), serving.answers], [true, null, null, ["SERVING"]]);
  assert.deepEqual(Object.fromEntries([":method", ":path", ":scheme", "content-type", "te", "user-agent", "grpc-timeout"].map((k) => [k, heard[0]![k]])), {
    ":method": "POST", ":path": healthCheckMethod, ":scheme": "http", "content-type": "application/grpc", te: "trailers", "user-agent": "healthd-test/1", "grpc-timeout": "2000m",
  });
  assert.deepEqual(brief(await ask("gone")), [false, "answer", `${target} knows no service "gone" (NOT_FOUND: no such service: café)`]);
  assert.deepEqual(brief(await ask("late")), [false, "timeout", `no gRPC health answer from ${target} within 2000 ms (DEADLINE_EXCEEDED)`]);
  assert.deepEqual(brief(await ask("web")), [false, "protocol", `${target} answered in HTTP/2 but not as a gRPC server (HTTP status 404, content-type text/html)`]);
  assert.deepEqual(brief(await ask("huge")), [false, "size", `${target} answered with more than 4096 bytes (a message of 65536 bytes), which is no health answer`]);
  const flood = await ask("flood");
  assert.equal(flood.errorKind, "size", String(flood.error));
  assert.match(flood.error!, /answered with more than 4096 bytes \(\d+ bytes\), which is no health answer$/);
  assert.deepEqual(brief(await ask("zipped")), [false, "protocol", `${target} answered Health/Check with a compressed message (flag 1), which healthd did not offer to read`]);
  assert.deepEqual(brief(await ask("garbled")), [false, "protocol", `${target} answered Health/Check with no HealthCheckResponse (a message that is not one: wire type 7, which the message has none of)`]);
  assert.deepEqual(brief(await ask("empty")), [false, "protocol", `${target} answered Health/Check with no HealthCheckResponse (an OK status and no message)`]);
  assert.deepEqual(brief(await ask("refused")), [false, "status", `${target} reset the Health/Check call (RST_STREAM REFUSED_STREAM) before answering it`]);
  assert.deepEqual(brief(await ask("hang-up")), [false, "connect", `connection to ${target} was closed by the server while calling Health/Check`]);
  const stalled = await ask("stall", { timeoutMs: 300 });
  assert.deepEqual(brief(stalled), [false, "timeout", `no gRPC health answer from ${target} within 300 ms`]);
  // Every session the checks opened is closed by healthd's side, the stalled and the flooded ones too.
  await Promise.all(closed);

  const v6 = await h2Server(t, "::1", (stream) => answerWith(stream, message(encodeResponse({ status: 1 })), { "grpc-status": "0" }));
  assert.deepEqual(brief(await runGrpcCheck(rpc(v6.target))), [true, null, null]);
});

test("the API refuses what a websocket or grpc check cannot be, naming the field", async (t) => {
  const d = await testDaemon(t);
  await assertChecksRefused(d, [
    [{ type: "websocket", url: "https://example.org/socket" }, "/services/0/check/url", /must use ws or wss \(got https\); an http\(s\) URL is an http check/],
    [{ type: "websocket", url: "ws://user:pw@example.org/" }, "/services/0/check/url", /must not carry credentials/],
    [{ type: "websocket", url: "ws://example.org/", headers: { "Sec-WebSocket-Protocol": "x" } }, "/services/0/check/headers", /must not set Sec-WebSocket-\* headers .*give subprotocols in protocols/],
    [{ type: "websocket", url: "ws://example.org/", headers: { upgrade: "x" } }, "/services/0/check/headers/upgrade", /is set by healthd itself/],
    [{ type: "websocket", url: "ws://example.org/", protocols: ["a b"] }, "/services/0/check/protocols/0", /must be a subprotocol name/],
    [{ type: "websocket", url: "ws://example.org/", expect: [{ status: 101 }] }, "/services/0/check/expect/0", /needs at least one condition \(contains, matches, maxLatencyMs\)/],
    [{ type: "websocket", url: "ws://example.org/", expect: [{ matches: "(a)\\1" }] }, "/services/0/check/expect/0/matches", /backreference/],
    [{ type: "grpc", target: "grpc://example.org:443" }, "/services/0/check/target", /must be host:port .*no scheme: set tls/],
    [{ type: "grpc", target: "example.org" }, "/services/0/check/target", /must be host:port/],
    [{ type: "grpc", target: "example.org:70000" }, "/services/0/check/target", /must be host:port/],
    [{ type: "grpc", target: "example.org:443", verifyTls: false }, "/services/0/check/verifyTls", /needs tls: true/],
    [{ type: "grpc", target: "example.org:443", url: "http://x/" }, "/services/0/check/url", /is a field of http, websocket, postgres, mysql and redis checks, not of grpc ones/],
  ]);
});

for (const engine of engines) {
  test(`${engine}: websocket and grpc services are checked, stored with their answers, shown and exported as written`, async (t) => {
    const wsUrl = await wsServer(t, (socket) => socket.on("message", (data) => socket.send(`echo: ${String(data)}`)));
    const target = await grpcServer(t, { "": 1, "shop.Cart": 2 });
    const d = await testDaemon(t, { engine });
    const done = (id: string) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id).then(([r]) => r);
    const waits = ["socket", "health", "cart"].map(done);
    const services = [
      { id: "socket", check: { type: "websocket", url: `${wsUrl}/feed?x=1`, headers: { "x-api-key": "k" }, send: "status", expect: [{ contains: "echo: status" }] } },
      { id: "health", check: { type: "grpc", target } },
      { id: "cart", check: { type: "grpc", target, service: "shop.Cart", notifyThreshold: 1 } },
    ];
    const put = await d.api("PUT", "/services/edge", { services });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const [socket, health, cart] = await Promise.all(waits);
    assert.deepEqual([socket!.entry.type, socket!.entry.ok, socket!.entry.answers], ["websocket", true, ["echo: status"]]);
    assert.deepEqual([health!.entry.type, health!.entry.ok, health!.entry.answers], ["grpc", true, ["SERVING"]]);
    assert.deepEqual([cart!.entry.ok, cart!.entry.errorKind, cart!.entry.error, cart!.entry.answers], [false, "answer", 'service "shop.Cart" is NOT_SERVING, not SERVING', ["NOT_SERVING"]]);

    const state = await d.api("GET", "/services/edge/cart");
    assert.equal(state.body.state.lastEntry.errorKind, "answer");
    const metrics = (await d.api("GET", "/metrics")).body as string;
    assert.match(metrics, /^healthd_service_up\{server="edge",service="socket",type="websocket"\} 1$/m);
    assert.match(metrics, /^healthd_service_up\{server="edge",service="cart",type="grpc"\} 0$/m);

    const stored = await d.api("GET", "/services/edge");
    const written = Object.fromEntries(stored.body.services.map((x: { id: string; check: Record<string, unknown> }) => [x.id, x.check]));
    const pick = (c: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, c[k]]));
    assert.deepEqual(pick(written.socket, ["type", "url", "headers", "protocols", "verifyTls", "send", "expect"]), {
      type: "websocket", url: `${wsUrl}/feed?x=1`, headers: { "x-api-key": "k" }, protocols: [], verifyTls: true, send: "status", expect: [{ contains: "echo: status" }],
    });
    assert.deepEqual(pick(written.cart, ["type", "target", "tls", "verifyTls", "service", "maxLatencyMs"]), { type: "grpc", target, tls: false, verifyTls: true, service: "shop.Cart", maxLatencyMs: null });
    const again = await d.api("PUT", "/services/edge", { services: stored.body.services.map((x: { id: string; check: unknown }) => ({ id: x.id, check: x.check })) });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.services.map((x: { check: unknown }) => x.check), stored.body.services.map((x: { check: unknown }) => x.check));
  });
}

test("the command line: Gatus's ws and grpc endpoints and Kuma's grpc-keyword and websocket-upgrade monitors imported, applied and checked; ad-hoc --websocket and --grpc", async (t) => {
  const wsUrl = await wsServer(t, (socket) => socket.on("message", (data) => socket.send(String(data) === "" ? "hello" : `echo: ${String(data)}`)));
  const target = await grpcServer(t, { "": 1, "shop.Cart": 1 });
  const dir = tempDir(t);
  const gatus = join(dir, "gatus.yaml");
  writeFileSync(
    gatus,
    `endpoints:\n` +
      `  - name: feed\n    url: "${wsUrl}/"\n    body: status\n    conditions: ["[CONNECTED] == true", "[BODY] == pat(*echo: stat*)", "[RESPONSE_TIME] < 500"]\n` +
      `  - name: greet\n    url: "${wsUrl}/"\n    conditions: ["[BODY] == hello"]\n` +
      `  - name: rpc\n    url: "grpc://${target}"\n    conditions: ["[CONNECTED] == true", "[BODY].status == SERVING"]\n` +
      `  - name: loose\n    url: "grpc://${target}"\n    conditions: ["[CONNECTED] == true"]\n`,
  );
  const db = join(dir, "net.db");
  const fromGatus = await runHealthd(["import", "--from", "gatus", gatus, "--db", db, "--apply"]);
  assert.equal(fromGatus.code, 0, fromGatus.stderr);
  assert.match(fromGatus.stderr, /loose.*Gatus passed it whatever status it answered \(no \[BODY\]\.status == SERVING\); healthd's grpc check passes on SERVING only/);

  const kuma = join(dir, "kuma.db");
  const health = 'syntax = "proto3";\npackage grpc.health.v1;\nservice Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }';
  kumaDatabase(kuma, [
    { name: "Cart", type: "grpc-keyword", grpc_url: target, grpc_protobuf: health, grpc_service_name: "Health", grpc_method: "check", grpc_body: '{"service": "shop.Cart"}', keyword: "SERVING", interval: 60 },
    { name: "Orders", type: "grpc-keyword", grpc_url: target, grpc_protobuf: "package shop;", grpc_service_name: "Orders", grpc_method: "list", grpc_body: "{}", keyword: "id", interval: 60 },
    { name: "Live", type: "websocket-upgrade", url: `${wsUrl}/live`, accepted_statuscodes_json: '["1000"]', ws_subprotocol: "", headers: '{"X-Team": "ops"}', interval: 60 },
  ]);
  const fromKuma = await runHealthd(["import", "--from", "uptime-kuma", kuma, "--db", db, "--apply", "--server", "kuma"]);
  assert.equal(fromKuma.code, 0, fromKuma.stderr);
  assert.match(fromKuma.stderr, /Orders.*it calls Orders\/list with a protobuf of its own; healthd's grpc check asks the standard health service only \(grpc\.health\.v1\.Health\/Check\); not carried over/);
  assert.match(fromKuma.stderr, /Cart.*Kuma found its keyword "SERVING" in NOT_SERVING too; healthd passes on SERVING only/);

  const exported = await runHealthd(["export", "--db", db]);
  assert.match(exported.stdout, /type: websocket/);
  assert.match(exported.stdout, /contains: "echo: stat"/);
  assert.match(exported.stdout, /service: shop\.Cart/);
  const checked = await runHealthd(["check", "--db", db]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  const lines = checked.stdout.trim().split("\n").sort();
  assert.equal(lines.length, 6, checked.stdout);
  assert.ok(lines.some((l) => /\/cart +\d+\.\d ms {2}SERVING$/.test(l)), checked.stdout);
  assert.ok(lines.some((l) => /\/feed +\d+\.\d ms {2}open {2}echo: status$/.test(l)), checked.stdout);
  assert.ok(lines.some((l) => /\/greet +\d+\.\d ms {2}open {2}hello$/.test(l)), checked.stdout);

  const adHocGrpc = await runHealthd(["check", "--grpc", target, "--service", "shop.Cart", "--json"]);
  assert.equal(adHocGrpc.code, 0, adHocGrpc.stderr);
  assert.deepEqual(JSON.parse(adHocGrpc.stdout), { ...JSON.parse(adHocGrpc.stdout), type: "grpc", url: `grpc://${target}/shop.Cart`, ok: true, answers: ["SERVING"] });
  const adHocWs = await runHealthd(["check", "--websocket", wsUrl, "--send", "ping", "--expect", '{"contains": "pong"}']);
  assert.equal(adHocWs.code, 1);
  assert.match(adHocWs.stdout, /^FAIL ws:\/\/127\.0\.0\.1:\d+ +\d+\.\d ms {2}answer: the first message "echo: ping" does not contain "pong" {2}echo: ping\n$/);
  const bad = await runHealthd(["check", "--grpc", "https://x"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--grpc: must be host:port/);
});
