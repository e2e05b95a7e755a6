/**
 * RESP2, Redis's protocol, as a redis check speaks it (db-redis.ts): commands written as arrays of bulk
 * strings, and a strict decoder of the replies (simple string, error, integer, bulk string, array, null; arrays
 * nested) with bounds a hostile server cannot move: at most `maxBytes` read in all (1 MiB: a health check's
 * answer is small) and arrays at most `maxDepth` deep. Pure: bytes in, values out, no socket.
 *
 * Why not @redis/client's own decoder (lib/RESP/decoder.js, usable without its client): it reads lengths
 * without checking their digits or the CRLF after them, so garbage decodes as something, allocates an array of
 * whatever length is announced, and has no bound of bytes or depth; a check must say "not Redis" or "too much"
 * instead. RESP3 is not spoken: a check never sends HELLO 3, so a server answering in it is not answering us.
 */

/** A reply: a simple or bulk string, an integer as the server wrote it, null (nil), an error, or an array of them. */
export type Reply = string | null | ServerError | readonly Reply[];

/** An error reply (`-ERR ...`): what the server said, a value like the others (it may sit in an array). */
export class ServerError {
  constructor(readonly said: string) {}
}

/** A reply that is not RESP2 (`protocol`) or more than the bounds allow (`size`); the message says which part. */
export class RespError extends Error {
  constructor(
    readonly kind: "protocol" | "size",
    message: string,
  ) {
    super(message);
  }
}

export interface RespLimits {
  /** The most bytes read in all, replies to every command of the connection together. Default 1 MiB. */
  readonly maxBytes: number;
  /** The most arrays open inside each other. Default 32 (Redis's deepest replies, XINFO's, nest 4 or 5). */
  readonly maxDepth: number;
}
export const respLimits: RespLimits = { maxBytes: 1 << 20, maxDepth: 32 };

/** Commands as RESP2 arrays of bulk strings, one after the other, in one buffer (one write). */
export function encodeCommands(commands: readonly (readonly string[])[]): Buffer {
  let text = "";
  for (const words of commands) {
    text += `*${words.length}\r\n`;
    for (const word of words) text += `$${Buffer.byteLength(word)}\r\n${word}\r\n`;
  }
  return Buffer.from(text);
}

/** A reply as text: a string as it is, nil as nothing, an error as what it said, an array's items a line each. */
export function replyText(reply: Reply): string {
  if (reply === null) return "";
  if (typeof reply === "string") return reply;
  if (reply instanceof ServerError) return reply.said;
  return reply.map(replyText).join("\n");
}

/** The first bytes of RESP2's replies: + - : $ *. */
const types = new Set([0x2b, 0x2d, 0x3a, 0x24, 0x2a]);
const lengthPattern = /^(?:-1|0|[1-9][0-9]{0,9})$/;
const integerPattern = /^-?[0-9]{1,20}$/;

/**
 * Decodes replies from chunks as they come, handing each whole reply to `onReply` in order. `write` throws a
 * RespError at the first byte that cannot be RESP2 or is over a bound; after that the decoder is done with.
 * A chunk is read during the call only: what is kept of it is copied (a connection's reads share one buffer).
 */
export class RespDecoder {
  #read = 0;
  /** Copies of a line or bulk string begun in an earlier chunk. */
  #pending: Buffer[] = [];
  #pendingLength = 0;
  /** A bulk string's length with its CRLF while its bytes are read; -1 while a line (a reply's first) is read. */
  #bulk = -1;
  /** The arrays being filled, innermost last: their items so far and how many are still to come. */
  readonly #open: { items: Reply[]; left: number }[] = [];

  constructor(
    private readonly onReply: (reply: Reply) => void,
    private readonly limits: RespLimits = respLimits,
  ) {}

  write(chunk: Buffer): void {
    this.#read += chunk.length;
    if (this.#read > this.limits.maxBytes) throw new RespError("size", `more than ${this.limits.maxBytes} bytes came`);
    let at = 0;
    while (at < chunk.length) {
      if (this.#bulk >= 0) {
        const end = at + this.#bulk - this.#pendingLength;
        const whole = this.#collect(chunk, at, end);
        if (whole === null) return;
        at = end;
        this.#bulkRead(whole);
      } else {
        // A reply's first byte says its type: anything else is not RESP2, said at once rather than at a newline.
        if (this.#pendingLength === 0 && !types.has(chunk[at]!)) throw new RespError("protocol", `a reply begins with ${quoted(chunk.subarray(at))}, which begins no RESP2 reply`);
        const newline = chunk.indexOf(10, at);
        if (newline < 0) return void this.#collect(chunk, at, Infinity);
        const line = this.#collect(chunk, at, newline + 1)!;
        at = newline + 1;
        this.#lineRead(line);
      }
    }
  }

  /** chunk[at, end) after what is pending, whole, or null when the chunk ends first (its rest then copied and pending). */
  #collect(chunk: Buffer, at: number, end: number): Buffer | null {
    if (end > chunk.length) {
      this.#pending.push(Buffer.from(chunk.subarray(at)));
      this.#pendingLength += chunk.length - at;
      return null;
    }
    if (this.#pendingLength === 0) return chunk.subarray(at, end);
    const whole = Buffer.concat([...this.#pending, chunk.subarray(at, end)]);
    this.#pending = [];
    this.#pendingLength = 0;
    return whole;
  }

  #lineRead(line: Buffer): void {
    const type = line[0]!;
    if (line.length < 3 || line[line.length - 2] !== 13) {
      throw new RespError("protocol", `a line ${quoted(line)} does not end in CRLF`);
    }
    const body = line.subarray(1, line.length - 2);
    switch (type) {
      case 0x2b: // +
        return this.#value(body.toString("utf8"));
      case 0x2d: // -
        return this.#value(new ServerError(body.toString("utf8")));
      case 0x3a: {
        // :
        const integer = body.toString("latin1");
        if (!integerPattern.test(integer)) throw new RespError("protocol", `an integer ${quoted(line)} that is not one`);
        return this.#value(integer);
      }
      case 0x24: {
        // $
        const length = this.#length(line, body);
        if (length === -1) return this.#value(null);
        if (length > this.limits.maxBytes) throw new RespError("size", `a string of ${length} bytes was announced, more than ${this.limits.maxBytes}`);
        this.#bulk = length + 2;
        return;
      }
      case 0x2a: {
        // *
        const length = this.#length(line, body);
        if (length === -1) return this.#value(null);
        if (length === 0) return this.#value([]);
        // Each item takes 3 bytes at least ("+\r\n"): an array that cannot fit is too much at once, not at the bound.
        if (length * 3 > this.limits.maxBytes) throw new RespError("size", `an array of ${length} items was announced, more than ${this.limits.maxBytes} bytes can hold`);
        if (this.#open.length >= this.limits.maxDepth) throw new RespError("protocol", `arrays nested more than ${this.limits.maxDepth} deep`);
        this.#open.push({ items: [], left: length });
        return;
      }
      default:
        throw new RespError("protocol", `a reply begins with ${quoted(line)}, which begins no RESP2 reply`);
    }
  }

  #length(line: Buffer, body: Buffer): number {
    const text = body.toString("latin1");
    if (!lengthPattern.test(text)) throw new RespError("protocol", `a length ${quoted(line)} that is not one`);
    return Number(text);
  }

  #bulkRead(whole: Buffer): void {
    const length = this.#bulk - 2;
    this.#bulk = -1;
    if (whole[length] !== 13 || whole[length + 1] !== 10) throw new RespError("protocol", `a string of ${length} bytes is not followed by CRLF`);
    this.#value(whole.toString("utf8", 0, length));
  }

  /** A whole value: an item of the innermost open array (closing those it fills), or a reply. */
  #value(value: Reply): void {
    let reply = value;
    for (;;) {
      const innermost = this.#open.at(-1);
      if (innermost === undefined) return this.onReply(reply);
      innermost.items.push(reply);
      if (--innermost.left > 0) return;
      this.#open.pop();
      reply = innermost.items;
    }
  }
}

/** The first bytes of a line, as hex (what came may be anything). */
function quoted(bytes: Buffer): string {
  return `(${bytes.subarray(0, 16).toString("hex").replace(/(..)/g, "$1 ").trim()}${bytes.length > 16 ? " ..." : ""})`;
}
