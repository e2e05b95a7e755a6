/**
 * The websocket check's own upgrade (answer.ts's reader on connect.ts's connection, ws's Receiver and Sender for
 * the frames) against servers written here by hand on 127.0.0.1: each answers the Upgrade request with bytes
 * of its choosing, so that what ws's server would never send (a wrong accept key, a 101 without Upgrade, a
 * frame announcing 2^40 bytes, a 101 cut in pieces or sharing a read with the first frame) is sent.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createHash } from "node:crypto";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { runWebsocketCheck, type WebsocketRequest } from "../src/checks/websocket.ts";

/** The Upgrade request as the server read it, and the frames the client sent after it (unmasked). */
interface Upgrade {
  readonly line: string;
  readonly headers: Record<string, string>;
  /** The Sec-WebSocket-Accept that answers the request's key. */
  readonly accept: string;
  readonly socket: Socket;
  /** Resolves with the client's next frame. */
  frame(): Promise<ClientFrame>;
}
interface ClientFrame {
  readonly opcode: number;
  readonly masked: boolean;
  readonly payload: Buffer;
}

/**
 * A TCP server on 127.0.0.1 that reads each Upgrade request's head and hands it to `answer`, which writes what
 * it likes on the socket; `connections` counts them. Client frames (small ones, as a check sends) are parsed.
 */
async function upgradeServer(t: TestContext, answer: (upgrade: Upgrade) => unknown): Promise<{ url: string; connections: () => number }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    let received = Buffer.alloc(0);
    let upgrade: Upgrade | undefined;
    const frames: ClientFrame[] = [];
    const waiting: ((frame: ClientFrame) => void)[] = [];
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (!upgrade) {
        const end = received.indexOf("\r\n\r\n");
        if (end < 0) return;
        const [line, ...fields] = received.subarray(0, end).toString("latin1").split("\r\n");
        const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(":")).toLowerCase(), f.slice(f.indexOf(":") + 1).trim()]));
        received = received.subarray(end + 4);
        const accept = createHash("sha1").update(`${headers["sec-websocket-key"]}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
        const frame = () => new Promise<ClientFrame>((resolve) => (frames.length > 0 ? resolve(frames.shift()!) : waiting.push(resolve)));
        upgrade = { line: line!, headers, accept, socket, frame };
        void answer(upgrade);
      }
      // Client frames: FIN and opcode, the mask bit and a length under 126, the mask, the payload.
      while (received.length >= 6 && received.length >= 6 + (received[1]! & 0x7f)) {
        const length = received[1]! & 0x7f;
        const mask = received.subarray(2, 6);
        const payload = Buffer.from(received.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4]!));
        const frame = { opcode: received[0]! & 0x0f, masked: (received[1]! & 0x80) !== 0, payload };
        received = received.subarray(6 + length);
        const next = waiting.shift();
        if (next) next(frame);
        else frames.push(frame);
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => sockets.size };
}

/** A server frame (unmasked): FIN set unless `more`, the opcode, a length in 7, 16 or 64 bits. */
function frame(opcode: number, payload: Buffer | string, more = false): Buffer {
  const data = Buffer.from(payload);
  const first = (more ? 0 : 0x80) | opcode;
  if (data.length < 126) return Buffer.concat([Buffer.from([first, data.length]), data]);
  const head = Buffer.alloc(4);
  head.writeUInt8(first, 0);
  head.writeUInt8(126, 1);
  head.writeUInt16BE(data.length, 2);
  return Buffer.concat([head, data]);
}

const switching = (accept: string, more = "") => `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n${more}\r\n`;

const check = (url: string, more: Partial<WebsocketRequest> = {}): WebsocketRequest => ({
  url, headers: {}, protocols: [], verifyTls: true, send: null, expect: [{ contains: "" }], timeoutMs: 5000, ...more,
});
const brief = (o: { ok: boolean; errorKind: string | null; error: string | null; answers?: readonly string[] }) => [o.ok, o.errorKind, o.error, o.answers];

/** Two turns of the event loop: the client (in this process) reads what was written before the next piece is. */
const turn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

test("the upgrade request: path and query, host, the handshake's headers, the check's, no extension offered; the message sent masked", async (t) => {
  let seen: Upgrade | undefined;
  let sent: ClientFrame | undefined;
  const { url } = await upgradeServer(t, async (upgrade) => {
    seen = upgrade;
    upgrade.socket.write(switching(upgrade.accept, "Sec-WebSocket-Protocol: v2\r\n"));
    sent = await upgrade.frame();
    upgrade.socket.write(frame(1, `echo: ${sent.payload.toString("utf8")}`));
  });
  const result = await runWebsocketCheck(check(`${url}/feed?x=1`, { headers: { "X-Api-Key": "k" }, protocols: ["v1", "v2"], send: "ping\\t1" }));
  assert.deepEqual(brief(result), [true, null, null, ["echo: ping\t1"]]);
  assert.equal(seen!.line, "GET /feed?x=1 HTTP/1.1");
  const { headers } = seen!;
  assert.equal(headers.host, new URL(url).host);
  assert.deepEqual([headers.upgrade, headers.connection, headers["sec-websocket-version"], headers["sec-websocket-protocol"], headers["x-api-key"]], ["websocket", "Upgrade", "13", "v1, v2", "k"]);
  assert.equal(Buffer.from(headers["sec-websocket-key"]!, "base64").length, 16, "the key is 16 random bytes (RFC 6455 4.1)");
  assert.match(headers["user-agent"]!, /^healthd\//);
  assert.equal(headers["sec-websocket-extensions"], undefined, "compression is not offered");
  assert.deepEqual([sent!.opcode, sent!.masked], [1, true], "a text frame, masked as a client's must be");
});

test("a 101 cut in pieces, and a 101 that shares its read with the first frame, each open the WebSocket and give the message", async (t) => {
  const split = await upgradeServer(t, async ({ socket, accept }) => {
    socket.setNoDelay(true);
    const bytes = Buffer.concat([Buffer.from(switching(accept), "latin1"), frame(1, "hello in pieces")]);
    for (let at = 0; at < bytes.length; at += 7) {
      socket.write(bytes.subarray(at, at + 7));
      await turn();
    }
  });
  assert.deepEqual(brief(await runWebsocketCheck(check(split.url))), [true, null, null, ["hello in pieces"]]);

  const together = await upgradeServer(t, ({ socket, accept }) => {
    socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), frame(1, "hello at once"), frame(1, "and a second")]));
  });
  assert.deepEqual(brief(await runWebsocketCheck(check(together.url))), [true, null, null, ["hello at once"]]);
  // Without a message awaited, the 101 is the check; the frame after it is not read.
  assert.deepEqual(brief(await runWebsocketCheck(check(together.url, { expect: [] }))), [true, null, null, undefined]);
});

test("a 101 that is no WebSocket's is refused as protocol: a wrong accept key, no Upgrade, no Connection, a subprotocol not offered, an extension", async (t) => {
  const answering = async (head: (accept: string) => string) => (await upgradeServer(t, ({ socket, accept }) => socket.write(Buffer.concat([Buffer.from(head(accept), "latin1"), frame(1, "hi")])))).url;
  const refusal = async (url: string, more: Partial<WebsocketRequest> = {}) => {
    const result = await runWebsocketCheck(check(url, more));
    assert.equal(result.errorKind, "protocol", String(result.error));
    return result.error!.replace(/^127\.0\.0\.1:\d+ answered the upgrade \(101\), not as a WebSocket server does: /, "");
  };
  const wrongKey = await answering(() => switching("dGhlIHNhbXBsZSBub25jZQ=="));
  assert.equal(await refusal(wrongKey), 'its Sec-WebSocket-Accept "dGhlIHNhbXBsZSBub25jZQ==" does not answer the key sent (a proxy in between, or not a WebSocket server)');
  const noKey = await answering(() => "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
  assert.match(await refusal(noKey), /^its Sec-WebSocket-Accept absent does not answer the key sent/);
  const noUpgrade = await answering((accept) => `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  assert.equal(await refusal(noUpgrade), "its Upgrade header is absent, not websocket");
  const otherUpgrade = await answering((accept) => `HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  assert.equal(await refusal(otherUpgrade), 'its Upgrade header is "h2c", not websocket');
  const noConnection = await answering((accept) => `HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  assert.equal(await refusal(noConnection), "its Connection header is absent, without upgrade");

  const chose = await answering((accept) => switching(accept, "Sec-WebSocket-Protocol: v9\r\n"));
  assert.equal(await refusal(chose, { protocols: ["v1", "v2"] }), 'it chose subprotocol "v9", not one of those offered (v1, v2)');
  assert.equal(await refusal(chose), 'it chose subprotocol "v9", and the check offered none; list it in protocols');
  const choseNone = await answering((accept) => switching(accept));
  assert.equal(await refusal(choseNone, { protocols: ["v1"] }), "it chose none of the subprotocols offered (v1); offer one it speaks, or none");
  const deflate = await answering((accept) => switching(accept, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
  assert.equal(await refusal(deflate), 'it turned on extensions the check did not offer ("permessage-deflate")');
});

test("another answer than 101 is its status (a redirect not followed, a 200), not HTTP is protocol, a close before the 101 is connect", async (t) => {
  const redirect = await upgradeServer(t, ({ socket }) => socket.end("HTTP/1.1 302 Found\r\nLocation: ws://127.0.0.1:9/elsewhere\r\nContent-Length: 0\r\n\r\n"));
  const moved = await runWebsocketCheck(check(redirect.url));
  assert.deepEqual([...brief(moved), moved.status], [false, "status", "the WebSocket upgrade was answered 302 Found (not 101 Switching Protocols)", undefined, 302]);
  assert.equal(redirect.connections(), 1, "the redirect is not followed");
  const plain = await upgradeServer(t, ({ socket }) => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n{"));
  const ok200 = await runWebsocketCheck(check(plain.url));
  assert.deepEqual([...brief(ok200), ok200.status], [false, "status", "the WebSocket upgrade was answered 200 OK (not 101 Switching Protocols)", undefined, 200]);

  const bigHead = await upgradeServer(t, ({ socket, accept }) => socket.write(switching(accept, `X-Pad: ${"p".repeat(20_000)}\r\n`)));
  const big = await runWebsocketCheck(check(bigHead.url));
  assert.deepEqual(brief(big), [false, "protocol", `${new URL(bigHead.url).host} did not answer the WebSocket upgrade in HTTP (the response head is larger than 16384 bytes)`, undefined]);
  const cut = await upgradeServer(t, ({ socket }) => socket.end("HTTP/1.1 101 Switching Pro"));
  assert.deepEqual(brief(await runWebsocketCheck(check(cut.url))), [false, "connect", `connection to ${new URL(cut.url).host} was closed by the server while connecting`, undefined]);
});

test("frames: a length of 2^40 fails as size at its header; a ping is answered; fragments make one message; bad frames and a bare close each say so", async (t) => {
  const huge = await upgradeServer(t, ({ socket, accept }) => {
    const header = Buffer.from([0x82, 127, 0, 0, 0x01, 0, 0, 0, 0, 0]); // a binary frame of 2^40 bytes, none of them sent
    socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), header]));
  });
  const tooLarge = await runWebsocketCheck(check(huge.url, { timeoutMs: 60_000 }));
  assert.deepEqual(brief(tooLarge), [false, "size", `the first message from ${new URL(huge.url).host} is over 65536 bytes, the most a check reads`, undefined]);

  const pinging = await upgradeServer(t, async ({ socket, accept, frame: next }) => {
    socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), frame(9, "are you there")]));
    const pong = await next();
    socket.write(frame(1, `pong ${pong.opcode} ${pong.masked} ${pong.payload.toString("utf8")}`));
  });
  assert.deepEqual(brief(await runWebsocketCheck(check(pinging.url))), [true, null, null, ["pong 10 true are you there"]]);

  // A server that pings without end and reads nothing: the check stops answering at 100, before its pongs pile up.
  const flooding = await upgradeServer(t, ({ socket, accept }) => {
    socket.pause();
    socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), ...Array.from({ length: 101 }, () => frame(9, "x".repeat(125)))]));
  });
  assert.deepEqual(brief(await runWebsocketCheck(check(flooding.url, { timeoutMs: 60_000 }))), [
    false, "protocol", `${new URL(flooding.url).host} sent more than 100 pings before its first message, which no WebSocket server needs; the check stopped answering them`, undefined,
  ]);

  const fragments = await upgradeServer(t, ({ socket, accept }) => {
    socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), frame(1, "hel", true), frame(9, ""), frame(0, "lo", true), frame(0, " world")]));
  });
  assert.deepEqual(brief(await runWebsocketCheck(check(fragments.url))), [true, null, null, ["hello world"]]);
  const binary = await upgradeServer(t, ({ socket, accept }) => socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), frame(2, Buffer.from([0x6f, 0x6b, 0xff]))])));
  assert.deepEqual(brief(await runWebsocketCheck(check(binary.url))), [true, null, null, ["ok\ufffd"]], "a binary message is read as UTF-8");

  const broken = async (bytes: Buffer) => {
    const { url } = await upgradeServer(t, ({ socket, accept }) => socket.write(Buffer.concat([Buffer.from(switching(accept), "latin1"), bytes])));
    const result = await runWebsocketCheck(check(url));
    assert.equal(result.errorKind, "protocol", String(result.error));
    return result.error!.replace(/^127\.0\.0\.1:\d+ broke the WebSocket protocol while waiting for the first message: /, "");
  };
  assert.equal(await broken(frame(1, Buffer.from([0xc3, 0x28]))), "Invalid WebSocket frame: invalid UTF-8 sequence");
  assert.equal(await broken(Buffer.from([0x81, 0x82, 1, 2, 3, 4, 0, 0])), "Invalid WebSocket frame: MASK must be clear");
  assert.equal(await broken(Buffer.from([0xc1, 0x00])), "Invalid WebSocket frame: RSV1 must be clear", "no compression was agreed");

  const bare = await upgradeServer(t, ({ socket, accept }) => socket.end(switching(accept)));
  assert.deepEqual(brief(await runWebsocketCheck(check(bare.url))), [false, "connect", `${new URL(bare.url).host} closed the WebSocket (code 1006) while waiting for the first message`, undefined]);
});
