/**
 * The grpc check's HTTP/2 (src/checks/grpc-call.ts) against a server written frame by frame here, on
 * 127.0.0.1: what node:http2 and grpc-js servers do not send on their own (test/kind-net.test.ts has those).
 * Huffman-coded and dynamic-table-indexed fields, a header block in CONTINUATIONs, padding and a priority, an
 * informational 1xx, the answer's DATA split in frames, SETTINGS and PING to answer; and what a server may do
 * wrong: a table size update over what healthd allows, a header block too large, GOAWAY before the answer.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { test, type TestContext } from "node:test";
import { runGrpcCheck, type GrpcRequest } from "../src/checks/grpc.ts";
import { decodeRequest, encodeResponse } from "../src/checks/grpc-health.ts";
import { ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, frame, FrameReader, GOAWAY, HEADERS, PADDED, PING, PRIORITY_FLAG, SETTINGS, settings, type Frame } from "../src/checks/h2-frames.ts";
import { HpackDecoder } from "../src/checks/hpack.ts";
import { huffmanEncode } from "../src/checks/hpack-huffman.ts";
import { selfSigned } from "./support/certs.ts";
import { tempDir } from "./support/temp.ts";

/** What the client sent: its frames (copied) and its request's headers and service. */
interface Heard {
  readonly frames: { type: number; flags: number; stream: number; payload: Buffer }[];
  readonly headers: Map<string, string>;
  service: string;
  /** The connection's end, as the server saw it. */
  readonly closed: Promise<unknown>;
}

/**
 * A server on 127.0.0.1 that reads the client's preface and frames, and once the request has ended (DATA with
 * END_STREAM) hands the socket to `answer`; it keeps reading what the client sends after (SETTINGS and PING ACKs).
 */
async function rawServer(t: TestContext, answer: (socket: Socket, heard: Heard) => void) {
  const heard: Heard[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    const one: Heard = { frames: [], headers: new Map(), service: "", closed: once(socket, "close") };
    heard.push(one);
    const reader = new FrameReader();
    const hpack = new HpackDecoder();
    let preface = 24;
    let body = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      if (preface > 0) {
        const skip = Math.min(preface, chunk.length);
        preface -= skip;
        chunk = chunk.subarray(skip);
      }
      reader.read(chunk, (f: Frame) => {
        one.frames.push({ ...f, payload: Buffer.from(f.payload) });
        if (f.type === HEADERS) hpack.decode(f.payload, (name, value) => one.headers.set(name, value));
        if (f.type === DATA) body = Buffer.concat([body, f.payload]);
        if (f.type === DATA && f.flags & END_STREAM) {
          one.service = decodeRequest(body.subarray(5)).service;
          answer(socket, one);
        }
      });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { target: `127.0.0.1:${(server.address() as AddressInfo).port}`, heard };
}

const rpc = (target: string, more: Partial<GrpcRequest> = {}): GrpcRequest => ({ target, tls: false, verifyTls: true, service: "", maxLatencyMs: null, timeoutMs: 2000, ...more });
const brief = (o: { ok: boolean; errorKind: string | null; error: string | null }) => [o.ok, o.errorKind, o.error];

/** A string literal, Huffman-coded (RFC 7541 5.2). */
const huffman = (text: string) => {
  const coded = huffmanEncode(text);
  assert.ok(coded.length < 127);
  return Buffer.concat([Buffer.from([0x80 | coded.length]), coded]);
};
/** Literal with incremental indexing, new name (6.2.1): the entry goes into the dynamic table. */
const indexedLiteral = (name: string, value: string) => Buffer.concat([Buffer.from([0x40]), huffman(name), huffman(value)]);
const message = (status: number) => {
  const bytes = encodeResponse({ status });
  return Buffer.concat([Buffer.from([0, 0, 0, 0, bytes.length]), bytes]);
};
const serverSettings = frame(SETTINGS, 0, 0, settings([[0x5, 65_536], [0x1, 8192], [0x4, 1 << 20]]));

test("grpc over HTTP/2 written here: Huffman, dynamic-table indexes, CONTINUATION, padding, 1xx, split DATA, SETTINGS and PING answered", async (t) => {
  const pingData = Buffer.from("healthd!");
  const { target, heard } = await rawServer(t, (socket, { service }) => {
    // 103 Early Hints: ignored by the client, but its fields enter the dynamic table: 62 content-type, 63 x-served-by.
    const early = Buffer.concat([Buffer.from([0x48]), huffman("103"), indexedLiteral("x-served-by", "raw-h2"), indexedLiteral("content-type", "application/grpc+proto")]);
    // The answer's headers in three pieces, HEADERS (padded, with a priority) and two CONTINUATIONs: :status 200
    // by static index, content-type by dynamic index (62, the newest), a Huffman literal that enters the table.
    const block = Buffer.concat([Buffer.from([0x88, 0xbe]), indexedLiteral("grpc-accept-encoding", "identity")]);
    const padded = Buffer.concat([Buffer.from([3]), Buffer.from([0, 0, 0, 0, 16]), block.subarray(0, 2), Buffer.alloc(3)]);
    const status = service === "cart" ? 2 : 1;
    const body = message(status);
    socket.write(Buffer.concat([
      serverSettings,
      frame(PING, 0, 0, pingData),
      frame(HEADERS, END_HEADERS, 1, early),
      frame(HEADERS, PADDED | PRIORITY_FLAG, 1, padded),
      frame(CONTINUATION, 0, 1, block.subarray(2, 5)),
      frame(CONTINUATION, END_HEADERS, 1, block.subarray(5)),
      frame(DATA, 0, 1, body.subarray(0, 3)),
      frame(DATA, PADDED, 1, Buffer.concat([Buffer.from([4]), body.subarray(3, 5), Buffer.alloc(4)])),
      frame(DATA, 0, 1, body.subarray(5)),
      // Trailers: grpc-status by a Huffman literal, then the oldest entry of the table by index (65: x-served-by).
      frame(HEADERS, END_HEADERS | END_STREAM, 1, Buffer.concat([indexedLiteral("grpc-status", "0"), Buffer.from([0xc1])])),
    ]));
  });
  const serving = await runGrpcCheck(rpc(target), { userAgent: "healthd-test/1" });
  assert.deepEqual([...brief(serving), serving.answers], [true, null, null, ["SERVING"]]);
  const cart = await runGrpcCheck(rpc(target, { service: "cart" }));
  assert.deepEqual([...brief(cart), cart.answers], [false, "answer", 'service "cart" is NOT_SERVING, not SERVING', ["NOT_SERVING"]]);

  // The request: one SETTINGS (no push), HEADERS of literal fields, DATA ending the stream; what it said.
  const first = heard[0]!;
  assert.deepEqual(first.frames.slice(0, 3).map((f) => [f.type, f.flags, f.stream]), [[SETTINGS, 0, 0], [HEADERS, END_HEADERS, 1], [DATA, END_STREAM, 1]]);
  assert.deepEqual(Object.fromEntries(first.headers), {
    ":method": "POST", ":scheme": "http", ":path": "/grpc.health.v1.Health/Check", ":authority": target, "content-type": "application/grpc",
    te: "trailers", "user-agent": "healthd-test/1", "grpc-timeout": "2000m",
  });
  assert.equal(heard[1]!.service, "cart");
  // What came after it, in the same connection, before healthd closed it: SETTINGS ACK and PING ACK.
  await first.closed;
  const replies = first.frames.slice(3).map((f) => [f.type, f.flags, f.payload.toString("latin1")]);
  assert.deepEqual(replies, [[SETTINGS, ACK, ""], [PING, ACK, "healthd!"]]);
});

test("a raw server's faults: a table size update over 4096, a header block over 16 KiB, GOAWAY before the answer, a frame over 16 KiB, a grpc-status in headers that go on", async (t) => {
  const headers = Buffer.concat([Buffer.from([0x88]), indexedLiteral("content-type", "application/grpc")]);
  const answer = [frame(HEADERS, END_HEADERS, 1, headers), frame(DATA, 0, 1, message(1)), frame(HEADERS, END_HEADERS | END_STREAM, 1, indexedLiteral("grpc-status", "0"))];
  const { target, heard } = await rawServer(t, (socket, { service }) => {
    const send = (...frames: Buffer[]) => socket.write(Buffer.concat([serverSettings, ...frames]));
    // 0x3f e1 3f: 31 + 0x61 + (0x3f << 7) = 8192.
    if (service === "table") send(frame(HEADERS, END_HEADERS, 1, Buffer.concat([Buffer.from([0x3f, 0xe1, 0x3f]), headers])));
    else if (service === "big") {
      const filler = indexedLiteral("x-filler", "f".repeat(100));
      send(frame(HEADERS, 0, 1, headers), ...Array.from({ length: 200 }, () => frame(CONTINUATION, 0, 1, filler)));
    } else if (service === "goaway") send(frame(GOAWAY, 0, 0, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])));
    else if (service === "calm") send(frame(GOAWAY, 0, 0, Buffer.from([0, 0, 0, 0, 0, 0, 0, 11])));
    else if (service === "graceful") send(frame(GOAWAY, 0, 0, Buffer.from([0, 0, 0, 1, 0, 0, 0, 0])), ...answer);
    else if (service === "wide") send(frame(HEADERS, END_HEADERS, 1, headers), frame(DATA, 0, 1, Buffer.alloc(16_385)));
    else if (service === "early") send(frame(DATA, 0, 1, message(1)));
    // A grpc-status among response headers that do not end the stream is no answer: a 503 page, then SERVING.
    else if (service === "liar") send(frame(HEADERS, END_HEADERS, 1, Buffer.concat([indexedLiteral(":status", "503"), indexedLiteral("content-type", "text/html"), indexedLiteral("grpc-status", "0")])), frame(DATA, END_STREAM, 1, message(1)));
    else if (service === "untold") send(frame(HEADERS, END_HEADERS, 1, Buffer.concat([headers, indexedLiteral("grpc-status", "0")])), frame(DATA, END_STREAM, 1, message(1)));
    else send(...answer);
  });
  const ask = async (service: string) => brief(await runGrpcCheck(rpc(target, { service })));
  const broken = (why: string) => [false, "protocol", `${target} does not speak gRPC over HTTP/2 (${why}); if it serves gRPC over TLS, set tls: true`];

  assert.deepEqual(await ask(""), [true, null, null]);
  assert.deepEqual(await ask("table"), broken("Compression error: a dynamic table size update to 8192, over the 4096 healthd allows"));
  assert.deepEqual(await ask("big"), [false, "size", `${target} answered with a header block of more than 16384 bytes, which is no health answer`]);
  assert.deepEqual(await ask("goaway"), [false, "connect", `${target} closed the connection (GOAWAY NO_ERROR) before answering Health/Check`]);
  assert.deepEqual(await ask("calm"), [false, "connect", `${target} closed the connection (GOAWAY ENHANCE_YOUR_CALM) before answering Health/Check`]);
  assert.deepEqual(await ask("graceful"), [true, null, null], "a GOAWAY that keeps stream 1 lets the answer come");
  assert.deepEqual(await ask("wide"), broken("Frame size error: a frame of 16385 bytes, over the 16384 allowed"));
  assert.deepEqual(await ask("early"), broken("Protocol error: DATA before the response headers"));
  assert.deepEqual(await ask("liar"), [false, "protocol", `${target} answered in HTTP/2 but not as a gRPC server (HTTP status 503, content-type text/html)`]);
  assert.deepEqual(await ask("untold"), [false, "protocol", `${target} ended the Health/Check call with no grpc-status; it is not a gRPC server`], "the status is the trailers'");
  // Every connection was closed, by healthd's side when the server did not.
  await Promise.all(heard.map((h) => h.closed));
});

test("over TLS, a server that does not agree to h2 by ALPN is told at once, before a byte of the call is sent", async (t) => {
  const received: Buffer[] = [];
  const server = createTlsServer(selfSigned(tempDir(t), 30), (socket) => {
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => received.push(chunk));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const refused = await runGrpcCheck(rpc(target, { tls: true, verifyTls: false }));
  assert.deepEqual(brief(refused), [false, "protocol", `${target} does not speak gRPC over HTTP/2 (its TLS agreed on no ALPN protocol, not h2)`]);
  assert.deepEqual(received, []);
});
