/**
 * Property tests of healthd's HTTP/1.1 answer reader (src/checks/answer.ts), with Node's own HTTP client as the
 * oracle: random answers, valid (any framing: a length, chunks with extensions and trailers, the connection's
 * end; interim 1xx answers before; repeated headers) and broken (cut short, a chunk size that is not hex), are
 * written by a TCP server on 127.0.0.1 to Node's client and fed to the reader cut at random points. Both must
 * agree on the status, the headers, the body, and on whether the answer is broken at all.
 */
import assert from "node:assert/strict";
import { get } from "node:http";
import { createServer, type AddressInfo, type Server } from "node:net";
import { after, before, test } from "node:test";
import fc from "fast-check";
import { AnswerReader } from "../src/checks/answer.ts";

interface Seen {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
  readonly broken: boolean;
}

// ---- the oracle: a server that writes the bytes given, then closes; Node's client reads them

let server: Server;
let next: Buffer = Buffer.alloc(0);
before(async () => {
  server = createServer((socket) => {
    socket.on("error", () => {});
    // The request is not read: the answer is whatever the test chose, then the end of the connection.
    socket.end(next);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function node(bytes: Buffer): Promise<Seen> {
  next = bytes;
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve) => {
    let settled = false;
    const done = (seen: Seen) => {
      if (!settled) resolve(seen);
      settled = true;
    };
    const request = get({ host: "127.0.0.1", port, path: "/", agent: false }, (response) => {
      const parts: Buffer[] = [];
      response.on("data", (chunk: Buffer) => parts.push(chunk));
      response.on("end", () => done({ status: response.statusCode!, headers: joined(response.rawHeaders), body: Buffer.concat(parts), broken: false }));
      response.on("aborted", () => done({ broken: true }));
      response.on("error", () => done({ broken: true }));
    });
    request.on("error", () => done({ broken: true }));
  });
}

/** Headers as the reader keeps them: lower-case names, a repeated one's values joined with ", ". */
function joined(raw: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = Object.create(null); // a header may be called "constructor"
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    headers[name] = headers[name] === undefined ? raw[i + 1]! : `${headers[name]}, ${raw[i + 1]!}`;
  }
  return { ...headers };
}

// ---- the reader, fed the same bytes cut at the given points

function reader(bytes: Buffer, cuts: readonly number[]): Seen {
  let status: number | undefined;
  let headers: Record<string, string> | undefined;
  const parts: Buffer[] = [];
  let ended = false;
  const r = new AnswerReader(
    {
      head: (h) => ((status = h.status), (headers = { ...h.headers }), true),
      data: (chunk) => void parts.push(Buffer.from(chunk)),
      end: () => void (ended = true),
    },
    false,
  );
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  try {
    let from = 0;
    for (const point of [...points, bytes.length]) {
      r.push(bytes.subarray(from, point));
      from = point;
    }
    r.close();
  } catch {
    return { broken: true };
  }
  assert.ok(ended, "a reader that did not throw has ended its answer");
  return { status: status!, headers: headers!, body: Buffer.concat(parts), broken: false };
}

// ---- answers

const tokenChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
const headerName = fc
  .string({ unit: fc.constantFrom(...tokenChars), minLength: 1, maxLength: 12 })
  .filter((n) => !["content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "trailer"].includes(n.toLowerCase()));
// Visible ASCII with inner spaces and tabs; optional whitespace around it is written separately.
const headerValue = fc
  .string({ unit: fc.constantFrom(..."abcXYZ019 \t,;=/\"()<>@[]{}?".split("")), maxLength: 20 })
  .map((v) => v.trim());
const header = fc.tuple(headerName, headerValue, fc.constantFrom("", " ", "  ", "\t"), fc.constantFrom("", " ", "\t"));

interface Answer {
  readonly bytes: Buffer;
  /** Where the head ends, and the whole answer's length as framed (the close-delimited one has no end of its own). */
  readonly headEnd: number;
  readonly framing: "length" | "chunked" | "close";
}

const answer = fc
  .record({
    interim: fc.constantFrom<readonly number[]>([], [100], [103], [100, 103]),
    status: fc.integer({ min: 200, max: 599 }).filter((s) => s !== 204 && s !== 304),
    reason: fc.constantFrom("", " OK", " Whatever it says"),
    headers: fc.array(header, { maxLength: 8 }),
    framing: fc.constantFrom("length" as const, "chunked" as const, "close" as const),
    body: fc.uint8Array({ maxLength: 3000 }),
    chunks: fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 8 }),
    // RFC 9112 lets whitespace stand before an extension's ";" (BWS), as the reader does; Node's llhttp refuses it,
    // so the oracle cannot judge that form (the property found this): it is left out here.
    extension: fc.constantFrom("", ";a=b", ";name", ";x=\"y\""),
    upper: fc.boolean(),
    trailers: fc.array(header, { maxLength: 2 }),
  })
  .map((a): Answer => {
    const lines: string[] = [];
    for (const code of a.interim) lines.push(`HTTP/1.1 ${code} Interim`, "Link: </a.css>; rel=preload", "");
    lines.push(`HTTP/1.1 ${a.status}${a.reason}`);
    for (const [name, value, pre, post] of a.headers) lines.push(`${name}:${pre}${value}${post}`);
    if (a.framing === "length") lines.push(`Content-Length: ${a.body.length}`);
    if (a.framing === "chunked") lines.push("Transfer-Encoding: chunked");
    if (a.framing === "close") lines.push("Connection: close");
    const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
    const body = Buffer.from(a.body);
    if (a.framing !== "chunked") return { bytes: Buffer.concat([head, body]), headEnd: head.length, framing: a.framing };
    const pieces: Buffer[] = [head];
    let at = 0;
    for (let i = 0; at < body.length; i++) {
      const size = Math.min(a.chunks[i % a.chunks.length]!, body.length - at);
      const hex = size.toString(16);
      pieces.push(Buffer.from(`${a.upper ? hex.toUpperCase() : hex}${a.extension}\r\n`), body.subarray(at, at + size), Buffer.from("\r\n"));
      at += size;
    }
    pieces.push(Buffer.from(`0\r\n${a.trailers.map(([n, v]) => `${n}: ${v}\r\n`).join("")}\r\n`));
    return { bytes: Buffer.concat(pieces), headEnd: head.length, framing: a.framing };
  });

const cuts = fc.array(fc.nat(), { maxLength: 12 });

test("a valid answer, cut anywhere, reads as Node's client reads it", async () => {
  await fc.assert(
    fc.asyncProperty(answer, cuts, async (a, at) => {
      const expected = await node(a.bytes);
      assert.equal(expected.broken, false, "the oracle reads every valid answer");
      assert.deepEqual(reader(a.bytes, at), expected);
    }),
    { numRuns: 150 },
  );
});

test("an answer cut short is broken for both, except a body that runs to the connection's end", async () => {
  await fc.assert(
    fc.asyncProperty(answer, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), cuts, async (a, where, at) => {
      const length = Math.floor(where * a.bytes.length);
      const cut = a.bytes.subarray(0, length);
      const expected = await node(cut);
      const seen = reader(cut, at);
      assert.equal(seen.broken, expected.broken, `cut at ${length} of ${a.bytes.length} (head ${a.headEnd}, ${a.framing})`);
      if (a.framing === "close" && length >= a.headEnd) assert.equal(seen.broken, false, "a close-delimited body may end anywhere");
      if (!seen.broken) assert.deepEqual(seen, expected);
    }),
    { numRuns: 100 },
  );
});

test("a chunk size that is not hexadecimal is broken for both", async () => {
  await fc.assert(
    fc.asyncProperty(answer.filter((a) => a.framing === "chunked" && a.bytes.length > a.headEnd + 5), fc.constantFrom("zz", "-1", "0x10", " "), cuts, async (a, bad, at) => {
      const broken = Buffer.concat([a.bytes.subarray(0, a.headEnd), Buffer.from(`${bad}\r\n`), a.bytes.subarray(a.headEnd)]);
      const expected = await node(broken);
      assert.equal(expected.broken, true);
      assert.equal(reader(broken, at).broken, true);
    }),
    { numRuns: 40 },
  );
});
