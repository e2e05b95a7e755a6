/**
 * healthd's HTTP/1.1 answer reader: first on its own, fed each answer whole and one byte at a time (a server's
 * writes reach a check cut anywhere), then through runCheck against a TCP server that writes answers by hand.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AnswerReader, type Head, type HeadLimits } from "../src/checks/answer.ts";
import { runCheck } from "../src/checks/http.ts";
import { httpCheck as check, rawTarget } from "./support/targets.ts";

interface Read {
  readonly head?: Head;
  readonly body: string;
  readonly ended: boolean;
  readonly error?: string;
}

/** What the reader makes of `bytes`, pushed as `pieces`, then the connection's end if `close`. */
function read(pieces: Buffer[], options: { bodiless?: boolean; close?: boolean; limits?: HeadLimits; wanted?: boolean } = {}): Read {
  let head: Head | undefined;
  let body = "";
  let ended = false;
  const reader = new AnswerReader(
    {
      head: (h) => ((head = h), options.wanted ?? true),
      data: (chunk) => (body += chunk.toString("latin1")),
      end: () => (ended = true),
    },
    options.bodiless ?? false,
    options.limits,
  );
  try {
    for (const piece of pieces) reader.push(piece);
    if (options.close ?? true) reader.close();
  } catch (error) {
    return { ...(head ? { head: { ...head, headers: { ...head.headers } } } : {}), body, ended, error: `${(error as { code: string }).code}: ${(error as Error).message}` };
  }
  return { ...(head ? { head: { ...head, headers: { ...head.headers } } } : {}), body, ended };
}

/** Reads `text` whole and byte by byte, asserts both read the same, and returns what they read. */
function readBoth(text: string, options: Parameters<typeof read>[1] = {}): Read {
  const bytes = Buffer.from(text, "latin1");
  const whole = read([bytes], options);
  const byByte = read([...bytes].map((b) => Buffer.from([b])), options);
  assert.deepEqual(byByte, whole, "read one byte at a time, the answer reads the same as whole");
  return whole;
}

test("framing: a length, chunks with extensions and trailers, the connection's end; what follows is not read", () => {
  const length = readBoth("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhelloEXTRA");
  assert.equal(length.body, "hello");
  assert.equal(length.ended, true);
  const chunked = readBoth("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;name=value\r\nhello\r\nA \r\n, world!!!\r\n0\r\nx-digest: abc\r\n\r\nEXTRA");
  assert.equal(chunked.body, "hello, world!!!");
  assert.equal(chunked.ended, true);
  assert.equal(chunked.head!.headers["x-digest"], undefined, "trailers are not headers");
  const untilClose = readBoth("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nold but fine");
  assert.deepEqual([untilClose.body, untilClose.ended], ["old but fine", true]);
  // Transfer-Encoding overrides Content-Length (RFC 9112 6.3).
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n").body, "ok");
  // A coding other than chunked last: read until the close.
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nraw").body, "raw");
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\nabc").body, "abc");
});

test("no body: a HEAD request, 204, 304, a zero length; interim heads are skipped; bare LF ends lines", () => {
  const head = readBoth("HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n", { bodiless: true });
  assert.deepEqual([head.head!.status, head.body, head.ended, head.error], [200, "", true, undefined]);
  for (const status of [204, 304]) assert.equal(readBoth(`HTTP/1.1 ${status} Nothing\r\n\r\n`).ended, true);
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").ended, true);
  const interim = readBoth("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok");
  assert.deepEqual([interim.head!.status, interim.head!.headers.link, interim.body], [201, undefined, "ok"]);
  const lf = readBoth("HTTP/1.1 200 OK\ncontent-length: 2\nx-a: \t spaced \xa0\t\nx-b:\n\nok");
  assert.deepEqual([lf.head!.headers["x-a"], lf.head!.headers["x-b"], lf.body], ["spaced \xa0", "", "ok"]);
});

test("headers: names lower-cased, repeats joined, a location given twice is no location, __proto__ is just a name", () => {
  const { head } = readBoth("HTTP/1.1 302 Found\r\nLocation: /a\r\nX-Many: 1\r\nx-many: 2\r\nlocation: /b\r\n__proto__: x\r\ncontent-length: 0\r\n\r\n");
  assert.equal(head!.headers["x-many"], "1, 2");
  assert.equal(head!.headers.location, "/a, /b");
  assert.equal(head!.location, undefined);
  assert.equal(head!.headers["__proto__"], "x");
  assert.equal(({} as Record<string, unknown>).x, undefined);
  assert.equal(readBoth("HTTP/1.1 301 Moved\r\nlocation: /there\r\ncontent-length: 0\r\n\r\n").head!.location, "/there");
  // A body that is not wanted is not read (a redirect the check follows).
  const unwanted = readBoth("HTTP/1.1 302 Found\r\nlocation: /x\r\ncontent-length: 4\r\n\r\nbody", { wanted: false });
  assert.deepEqual([unwanted.body, unwanted.ended, unwanted.error], ["", false, undefined]);
});

test("what is not HTTP, or breaks a bound, is refused at once with a code the controller classifies", () => {
  const refused = (text: string, options: Parameters<typeof read>[1] = {}) => readBoth(text, options).error ?? "read without an error";
  assert.match(refused("THIS IS NOT HTTP\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: the status line is not HTTP\/1\.x: "THIS IS NOT HTTP"$/);
  assert.match(refused("HTTP/2 200\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: the status line/);
  assert.match(refused("HTTP/1.1 099 Low\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: the status line has no valid status/);
  assert.equal(refused("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n\x81\x05hello"), "HEALTHD_INVALID_ANSWER: 101 Switching Protocols to a request that asked for no upgrade");
  assert.match(refused("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: a header line has no valid name/);
  assert.match(refused("HTTP/1.1 200 OK\r\n folded: x\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: a header line has no valid name/);
  assert.match(refused("HTTP/1.1 200 OK\r\nx-a: b\rc\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: header x-a holds a control character$/);
  assert.match(refused("HTTP/1.1 200 OK\r\ncontent-length: 5, 6\r\n\r\nhello"), /^HEALTHD_INVALID_ANSWER: content-length is not one number/);
  assert.match(refused("HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n"), /^HEALTHD_INVALID_ANSWER: content-length is not one number/);
  assert.match(refused("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"), /^HEALTHD_INVALID_ANSWER: a chunk's size line is not hexadecimal/);
  assert.match(refused("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n"), /^HEALTHD_INVALID_ANSWER: a chunk is longer than its size line says$/);
  assert.match(refused(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1${";x".repeat(3000)}\r\n`), /^HEALTHD_INVALID_ANSWER: a chunk's size line is longer than 4096 bytes$/);
  const limits = { maxBytes: 100, maxHeaders: 3 };
  assert.equal(refused("HTTP/1.1 200 OK\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n", { limits }), "HEALTHD_HEAD_TOO_LARGE: the response head has more than 3 headers");
  assert.equal(refused(`HTTP/1.1 200 OK\r\nx-big: ${"v".repeat(100)}\r\n\r\n`, { limits }), "HEALTHD_HEAD_TOO_LARGE: the response head is larger than 100 bytes");
  assert.equal(
    refused(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: ${"v".repeat(100)}\r\n\r\n`, { limits }),
    "HEALTHD_HEAD_TOO_LARGE: the response trailer section is larger than 100 bytes",
  );
  // Each interim head has bounds of its own: three under the bound do not add up to one over it.
  assert.equal(readBoth("HTTP/1.1 100 Continue\r\na: 1\r\nb: 2\r\n\r\n".repeat(3) + "HTTP/1.1 200 OK\r\n\r\n", { limits }).error, undefined);
});

test("an answer cut short by the connection's end is refused; one read until the end is not", () => {
  const cut = "HEALTHD_CLOSED_EARLY: the connection closed before the answer was complete";
  assert.equal(readBoth("").error, cut);
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ncontent-le").error, cut);
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort").error, cut);
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel").error, cut);
  assert.equal(readBoth("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n").error, cut, "no last chunk");
  assert.equal(readBoth("HTTP/1.1 200 OK\r\n\r\n").error, undefined, "an empty body read until the end");
  const open = read([Buffer.from("HTTP/1.1 200 OK\r\n\r\nstill")], { close: false });
  assert.deepEqual([open.body, open.ended], ["still", false], "a body read until the end has not ended while the connection is open");
});

test("stop() ends reading: nothing more is handed over, not even the end", () => {
  let data = 0;
  let ended = false;
  const reader = new AnswerReader({ head: () => true, data: () => (data++, reader.stop()), end: () => (ended = true) }, false);
  reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nab"));
  reader.push(Buffer.from("cd"));
  reader.close();
  assert.deepEqual([data, ended, reader.complete], [1, false, true]);
});

test("an upgrade's answer: a 101 is final and reading stops after its head, where push says, byte by byte too; another answer's body is not read", () => {
  const upgrade = (text: string, pieces: "whole" | "bytes") => {
    const bytes = Buffer.from(text, "latin1");
    const heads: Head[] = [];
    const reader = AnswerReader.forUpgrade({ head: (h) => (heads.push(h), true), data: () => assert.fail("no body is read"), end: () => {} });
    let rest = "";
    for (const piece of pieces === "whole" ? [bytes] : [...bytes].map((b) => Buffer.from([b]))) {
      const complete = reader.complete;
      const at = reader.push(piece);
      if (complete || reader.complete) rest += piece.subarray(at).toString("latin1");
      else assert.equal(at, piece.length, "all of a piece is read while the head goes on");
    }
    return { statuses: heads.map((h) => h.status), upgrade: heads[0]?.headers.upgrade, reason: reader.reason, rest, complete: reader.complete };
  };
  for (const pieces of ["whole", "bytes"] as const) {
    assert.deepEqual(upgrade("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello", pieces), {
      statuses: [101], upgrade: "websocket", reason: "Switching Protocols", rest: "\x81\x05hello", complete: true,
    });
    assert.deepEqual(upgrade("HTTP/1.1 403 Forbidden\r\ncontent-length: 4\r\n\r\nnope", pieces), { statuses: [403], upgrade: undefined, reason: "Forbidden", rest: "nope", complete: true });
  }
  assert.equal(upgrade("HTTP/1.1 101\r\n\r\n", "whole").reason, "", "no reason phrase");
});

test("the request a check sends: its line, host, agent, encodings, connection: close, and a length for its body", async (t) => {
  const target = await rawTarget(t, () => ["HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]);
  assert.equal((await runCheck(check(`${target.url}/path?q=1`))).ok, true);
  const [get] = target.requests;
  const port = new URL(target.url).port;
  assert.match(get!, new RegExp(`^GET /path\\?q=1 HTTP/1\\.1\\r\\nhost: 127\\.0\\.0\\.1:${port}\\r\\n`));
  assert.match(get!, /\r\nuser-agent: healthd\/[^\r]+\r\n/);
  assert.match(get!, /\r\naccept-encoding: gzip, deflate, br\r\n/);
  assert.match(get!, /\r\nconnection: close\r\n\r\n$/);
  assert.doesNotMatch(get!, /content-length/);
  const post = check(`${target.url}/`, { method: "POST", headers: { Host: "example.test", "X-Name": "café" }, body: "héllo" });
  assert.equal((await runCheck(post)).ok, true);
  const sent = target.requests[1]!;
  assert.match(sent, /^POST \/ HTTP\/1\.1\r\nhost: example\.test\r\nx-name: caf\xe9\r\n/, "a check's own host header, its values in Latin-1");
  assert.match(sent, /\r\ncontent-length: 6\r\n/);
  assert.ok(sent.endsWith("\r\n\r\nh\xc3\xa9llo"), "the body in UTF-8");
  assert.equal((await runCheck(check(`${target.url}/`, { method: "PUT" }))).ok, true);
  assert.match(target.requests[2]!, /\r\ncontent-length: 0\r\n/);
});

test("answers node:http does not write: chunk extensions and trailers, early hints, pieces cut anywhere", async (t) => {
  const body = '{"status":"up"}';
  const target = await rawTarget(t, (request) => {
    if (request.startsWith("GET /hints")) return ["HTTP/1.1 103 Early Hints\r\nlink: </s.css>\r\n\r\n", `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`];
    const whole = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4;ext=1\r\n${body.slice(0, 4)}\r\n${(body.length - 4).toString(16)}\r\n${body.slice(4)}\r\n0\r\nx-trailer: t\r\n\r\n`;
    return [...whole].map((c) => Buffer.from(c, "latin1")); // a write per byte
  });
  const up = [{ json: { path: "$.status", equals: "up" } }];
  const chunked = await runCheck(check(`${target.url}/chunked`, { expect: up }));
  assert.equal(chunked.ok, true, chunked.error ?? "");
  const hints = await runCheck(check(`${target.url}/hints`, { expect: up }));
  assert.equal(hints.ok, true, hints.error ?? "");
});

test("a location given twice is not followed; an answer cut mid-chunk fails with kind connect", async (t) => {
  const target = await rawTarget(t, (request) =>
    request.startsWith("GET /twice")
      ? ["HTTP/1.1 302 Found\r\nlocation: /a\r\nlocation: /b\r\ncontent-length: 0\r\n\r\n"]
      : ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nonly part"],
  );
  const twice = await runCheck(check(`${target.url}/twice`));
  assert.equal(twice.errorKind, "status", twice.error ?? "");
  assert.equal(twice.status, 302);
  assert.equal(target.requests.length, 1, "not followed");
  const cut = await runCheck(check(`${target.url}/cut`));
  assert.equal(cut.errorKind, "connect");
  assert.match(cut.error!, /^connection to 127\.0\.0\.1:\d+ was closed by the server while reading the body$/);
});
