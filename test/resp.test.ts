/**
 * RESP2 as a redis check speaks it (src/checks/resp.ts): commands encoded as Redis reads them, replies decoded
 * whole however the bytes are cut, and every way a reply can be wrong or too much said as protocol or size.
 * Pure: no server (test/kind-databases.test.ts talks to the real Redis).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeCommands, replyText, RespDecoder, RespError, ServerError, type Reply, type RespLimits } from "../src/checks/resp.ts";

/** Every reply decoded from `bytes` fed in pieces of `size` (each piece a fresh buffer, overwritten after, as the shared read buffer is). */
function decode(bytes: string | Buffer, size = Infinity, limits?: RespLimits): Reply[] {
  const all = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, "latin1");
  const replies: Reply[] = [];
  const decoder = new RespDecoder((r) => replies.push(r), limits);
  for (let at = 0; at < all.length; at += size) {
    const piece = Buffer.from(all.subarray(at, Math.min(all.length, at + size)));
    decoder.write(piece);
    piece.fill(0x21); // what the decoder kept must have been copied
  }
  return replies;
}
const failure = (bytes: string, limits?: RespLimits) => {
  try {
    decode(bytes, Infinity, limits);
  } catch (error) {
    assert.ok(error instanceof RespError, String(error));
    return [error.kind, error.message];
  }
  return assert.fail(`decoded ${JSON.stringify(bytes)}`);
};

test("commands are arrays of bulk strings, their lengths in bytes, several in one buffer", () => {
  assert.equal(encodeCommands([["PING"]]).toString(), "*1\r\n$4\r\nPING\r\n");
  assert.equal(encodeCommands([["AUTH", "user", "pä ss\r\n"], ["SELECT", "2"]]).toString(), "*3\r\n$4\r\nAUTH\r\n$4\r\nuser\r\n$8\r\npä ss\r\n\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n");
});

test("every RESP2 reply decodes, nested and in order, however the bytes are cut", () => {
  const stream = "+PONG\r\n-ERR unknown command 'NOPE'\r\n:-42\r\n$5\r\nhé\r\n\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n-WRONGTYPE no\r\n$-1\r\n+OK\r\n";
  const expected: Reply[] = ["PONG", new ServerError("ERR unknown command 'NOPE'"), "-42", "hé\r\n", "", null, null, [], ["1", ["a", new ServerError("WRONGTYPE no")], null], "OK"];
  const bytes = Buffer.from(stream, "utf8");
  for (const size of [1, 2, 3, 5, 7, 64, Infinity]) assert.deepEqual(decode(bytes, size), expected, `in pieces of ${size}`);
});

test("an answer as text: strings as they are, integers as written, nil as nothing, an array's items a line each", () => {
  assert.equal(replyText("PONG"), "PONG");
  assert.equal(replyText(null), "");
  assert.equal(replyText(["a", "12345678901234567890", null, ["b", "c"], new ServerError("ERR x")]), "a\n12345678901234567890\n\nb\nc\nERR x");
  assert.deepEqual(decode(":12345678901234567890\r\n"), ["12345678901234567890"], "no rounding through a number");
});

test("what is not RESP2 is protocol at its first wrong byte: another protocol, a broken length, a missing CRLF, RESP3", () => {
  assert.deepEqual(failure("HTTP/1.1 400 Bad Request\r\n"), ["protocol", "a reply begins with (48 54 54 50 2f 31 2e 31 20 34 30 30 20 42 61 64 ...), which begins no RESP2 reply"]);
  assert.deepEqual(failure("\xff\xfe garbage with no newline"), ["protocol", "a reply begins with (ff fe 20 67 61 72 62 61 67 65 20 77 69 74 68 20 ...), which begins no RESP2 reply"], "said before any newline");
  assert.deepEqual(failure("+OK\r\n%1\r\n"), ["protocol", "a reply begins with (25 31 0d 0a), which begins no RESP2 reply"], "a RESP3 map");
  assert.equal(failure("$abc\r\n")[0], "protocol");
  assert.equal(failure("$-2\r\n")[0], "protocol");
  assert.equal(failure("*01\r\n")[0], "protocol");
  assert.equal(failure(":12a\r\n")[0], "protocol");
  assert.equal(failure("+OK\n")[0], "protocol", "a line ended by LF alone");
  assert.deepEqual(failure("$2\r\nabcd"), ["protocol", "a string of 2 bytes is not followed by CRLF"]);
});

test("bounds: more bytes than allowed, a string or array announced past them, arrays nested too deep", () => {
  const small = { maxBytes: 64, maxDepth: 3 };
  assert.deepEqual(failure(`+${"x".repeat(70)}\r\n`, small), ["size", "more than 64 bytes came"]);
  assert.deepEqual(failure("$2000000000\r\n", small), ["size", "a string of 2000000000 bytes was announced, more than 64"]);
  assert.deepEqual(failure("*22\r\n", small), ["size", "an array of 22 items was announced, more than 64 bytes can hold"]);
  assert.deepEqual(failure("*1\r\n*1\r\n*1\r\n*1\r\n", small), ["protocol", "arrays nested more than 3 deep"]);
  assert.deepEqual(decode("*1\r\n*1\r\n*1\r\n:1\r\n", Infinity, small), [[[["1"]]]], "3 deep is allowed");
  // The default: 1 MiB in all, counted across replies and chunks.
  const decoder = new RespDecoder(() => {});
  const line = Buffer.from(`+${"x".repeat(1021)}\r\n`);
  for (let i = 0; i < 1024; i++) decoder.write(line);
  assert.throws(() => decoder.write(Buffer.from("+\r\n")), (e: unknown) => e instanceof RespError && e.kind === "size");
});
