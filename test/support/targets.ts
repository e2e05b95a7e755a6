/**
 * Real HTTP targets on 127.0.0.1 for checks to run against, from the well-behaved to the hostile.
 * Each test starts its own on a free port and closes it (and every connection it holds) when it ends.
 */
import { EventEmitter } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import type { TestContext } from "node:test";
import { gzipSync } from "node:zlib";
import type { CheckRequest } from "../../src/checks/http.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Target {
  readonly url: string;
  readonly hits: Map<string, number>;
}

const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
const json = { status: "up", version: "1.2.3", load: 0.5, checks: [{ name: "db", ok: true }], "content-type": "x" };
// A body several times a connection's read buffer (64 KiB), every item different: one read overwriting another
// shows as JSON that does not parse or an item out of place.
const large = JSON.stringify({ items: Array.from({ length: 4000 }, (_, i) => ({ i, pad: `${i}`.padStart(60, "-") })), last: 3999 });

/** An HTTP check of `url` as the controller takes it: a GET expecting 2xx within 2 s, unless `more` says otherwise. */
export const httpCheck = (url: string, more: Partial<CheckRequest> = {}): CheckRequest => ({
  url,
  method: "GET",
  headers: {},
  body: null,
  timeoutMs: 2000,
  followRedirects: true,
  verifyTls: true,
  expect: [{ status: "2xx" }],
  ...more,
});

/** What the standard target answers, by path. */
export const routes: Record<string, Handler> = {
  "/ok": (_req, res) => res.end("Welcome to the homepage"),
  "/json": (_req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(json));
  },
  "/broken-json": (_req, res) => res.end('{"status": "up",'),
  // Not JSON, with control characters that V8's JSON.parse quotes in its error (PostgreSQL's text refuses NUL).
  "/nul-json": (_req, res) => res.end("x\u0000\u001b[31m\r\nnot JSON"),
  // Makes /^(a+)+$/ backtrack for longer than anyone would wait.
  "/evil-body": (_req, res) => res.end("a".repeat(40) + "!"),
  "/invalid-utf8": (_req, res) => res.end(Buffer.from([0x4f, 0x4b, 0x20, 0xff, 0xfe, 0x21])),
  "/empty": (_req, res) => res.end(),
  "/maintenance": (_req, res) => {
    res.writeHead(503, { "retry-after": "120" });
    res.end("down for maintenance");
  },
  "/teapot": (_req, res) => {
    res.statusCode = 418;
    res.end("I'm a teapot");
  },
  "/echo": (req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d));
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ method: req.method, headers: req.headers, body }));
    });
  },
  "/slow-headers": () => {
    /* never answers */
  },
  "/endless": (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    const chunk = Buffer.alloc(16 * 1024, "a");
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once("drain", pump);
    };
    pump();
  },
  // A gzip body that never ends and decompresses to nothing: a gzip header, then empty stored blocks.
  "/gzip-endless": (_req, res) => {
    res.writeHead(200, { "content-encoding": "gzip" });
    res.write(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]));
    const chunk = Buffer.concat(Array.from({ length: 3000 }, () => Buffer.from([0, 0, 0, 0xff, 0xff])));
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once("drain", pump);
    };
    pump();
  },
  "/dribble": (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    const timer = setInterval(() => res.write("."), 100);
    res.on("close", () => clearInterval(timer));
  },
  "/big": (_req, res) => res.end(Buffer.alloc(2 * 1024 * 1024, "b")),
  "/large": (_req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(large);
  },
  "/large-gzip": (_req, res) => {
    res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
    res.end(gzipSync(large));
  },
  "/gzip": (_req, res) => {
    res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
    res.end(gzipSync(JSON.stringify(json)));
  },
  "/gzip-bomb": (_req, res) => {
    res.writeHead(200, { "content-encoding": "gzip" });
    res.end(bomb);
  },
  "/bad-gzip": (_req, res) => {
    res.writeHead(200, { "content-encoding": "gzip" });
    res.end("this is not gzip at all");
  },
  "/slow-ok": (_req, res) => {
    const timer = setTimeout(() => res.end("ok, eventually"), 800);
    res.on("close", () => clearTimeout(timer));
  },
  // Thousands of headers: costly to parse unless cut off early.
  "/many-headers": (_req, res) => {
    for (let i = 0; i < 5000; i++) res.setHeader(`x-header-${i}`, "value");
    res.end("ok");
  },
  "/huge-header": (_req, res) => {
    res.setHeader("x-huge", "v".repeat(1024 * 1024));
    res.end("ok");
  },
  // Each hop's location is twice as long as the last.
  "/grow": (req, res) => redirect(res, `/grow?${"x".repeat(Math.max(64, (req.url ?? "").length * 2))}`),
  "/redirect-loop-a": (_req, res) => redirect(res, "/redirect-loop-b"),
  "/redirect-loop-b": (_req, res) => redirect(res, "/redirect-loop-a"),
  "/see-other": (_req, res) => redirect(res, "/echo", 303),
  "/reset": (_req, res) => {
    res.writeHead(200, { "content-length": "100" });
    res.write("partial");
    setImmediate(() => res.socket?.destroy());
  },
  "/http10": (_req, res) => {
    const socket = res.socket!;
    socket.write("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nold but fine");
    socket.end();
  },
  "/garbage": (_req, res) => {
    res.socket!.end("THIS IS NOT HTTP\r\n\r\n");
  },
};

function redirect(res: ServerResponse, location: string, status = 302): void {
  res.writeHead(status, { location });
  res.end();
}

/** `/hops/N` redirects N times before answering 200. */
function hops(req: IncomingMessage, res: ServerResponse): boolean {
  const m = /^\/hops\/(\d+)$/.exec(req.url ?? "");
  if (!m) return false;
  const n = Number(m[1]);
  if (n === 0) res.end("arrived");
  else redirect(res, `/hops/${n - 1}`);
  return true;
}

function handle(hits: Map<string, number>): Handler {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (hops(req, res)) return;
    const route = routes[path];
    if (route) route(req, res);
    else {
      res.statusCode = 404;
      res.end("no such route");
    }
  };
}

/** Listen on a free loopback port until the test ends (then drop every connection); answers the port. */
export async function serveOnLoopback(t: TestContext, server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

async function listen(t: TestContext, server: Server, scheme: string): Promise<Target & { server: Server }> {
  const hits = new Map<string, number>();
  server.on("request", handle(hits));
  const port = await serveOnLoopback(t, server);
  return { url: `${scheme}://127.0.0.1:${port}`, hits, server };
}

export function httpTarget(t: TestContext): Promise<Target & { server: Server }> {
  return listen(t, createHttpServer(), "http");
}

export function httpsTarget(t: TestContext, cert: { key: string; cert: string }): Promise<Target> {
  return listen(t, createHttpsServer(cert), "https");
}

/** A port on which nothing listens (bound, then closed). */
export async function refusedUrl(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/`;
}

/** An https URL on a plain TCP server that does `greet` to each connection: a TLS client gets no TLS. */
async function plainTcpUrl(t: TestContext, greet: (socket: Socket) => void): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    greet(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.close();
    for (const socket of sockets) socket.destroy();
  });
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** A TCP server that accepts and speaks something other than TLS to a TLS client. */
export const notTlsUrl = (t: TestContext) => plainTcpUrl(t, (socket) => socket.end("HTTP/1.1 400 Bad Request\r\n\r\n"));

/** A TCP server that accepts and never says a word: a TLS handshake with it never ends. */
export const silentTlsUrl = (t: TestContext) => plainTcpUrl(t, () => {});

/** A target whose answer the test switches between 200 and 500; it emits "hit" on every request. */
export async function switchableTarget(t: TestContext): Promise<{ url: string; setUp(up: boolean): void; events: EventEmitter; hits(): number }> {
  let up = false;
  let hits = 0;
  const events = new EventEmitter();
  const server = createHttpServer((_req, res) => {
    hits++;
    res.statusCode = up ? 200 : 500;
    res.end(up ? "fine" : "broken");
    events.emit("hit", up);
  });
  const port = await serveOnLoopback(t, server);
  return {
    url: `http://127.0.0.1:${port}/`,
    setUp: (value) => (up = value),
    events,
    hits: () => hits,
  };
}

export interface Hit {
  readonly path: string;
  readonly at: number;
  readonly userAgent: string;
}

/**
 * A target that records every request (path, time, User-Agent) and answers 500 when `fails(hit)` says so,
 * else 200. It emits "hit" with each one.
 */
export async function recordingTarget(t: TestContext): Promise<{ url: string; hits: Hit[]; events: EventEmitter; fails: (hit: Hit) => boolean }> {
  const events = new EventEmitter();
  const target = { url: "", hits: [] as Hit[], events, fails: (_hit: Hit) => false };
  const server = createHttpServer((req, res) => {
    const hit = { path: req.url ?? "/", at: Date.now(), userAgent: req.headers["user-agent"] ?? "" };
    target.hits.push(hit);
    res.statusCode = target.fails(hit) ? 500 : 200;
    res.end();
    events.emit("hit", hit);
  });
  target.url = `http://127.0.0.1:${await serveOnLoopback(t, server)}`;
  return target;
}

/**
 * A TCP server that speaks HTTP/1.1 by hand, for answers node:http will not write (chunk extensions, trailers,
 * interim heads, broken framing): each connection's request (head and body, as sent) is recorded, then
 * `answer(request)` is written as given, piece by piece, and the connection ended.
 */
export async function rawTarget(t: TestContext, answer: (request: string) => readonly (string | Buffer)[]): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      const headEnd = received.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received)?.[1] ?? 0);
      if (received.length < headEnd + 4 + length) return;
      requests.push(received);
      received = "";
      for (const piece of answer(requests.at(-1)!)) socket.write(piece);
      socket.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.close();
    for (const socket of sockets) socket.destroy();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}
