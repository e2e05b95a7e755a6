/**
 * A reader of one HTTP/1.1 response, fed the bytes of a fresh connection as they arrive: the status line and
 * headers, within bounds a checked site cannot stretch, then the body as its framing says (a length, chunks,
 * or the connection's end). It has no socket and no clock: the HTTP controller owns those.
 *
 * healthd reads answers itself rather than through undici's Client (which checks used until this file):
 * a check makes one request on one fresh connection and closes it, and the machinery a client library keeps
 * for pooling, pipelining and its dispatch interface was most of a check's CPU beyond the bare exchange, at
 * the hundred services most people run (bench:first-checks, docs/benchmarks.md).
 */

/** Bounds on a response's head (status line and headers); a trailer section is held to the same. */
export interface HeadLimits {
  /** Bytes of one response head, status line included. */
  readonly maxBytes: number;
  /** Header lines of one response head. */
  readonly maxHeaders: number;
}

export const headLimits: HeadLimits = { maxBytes: 64 * 1024, maxHeaders: 256 };

/** Bytes of a chunk's size line (extensions included): far more than any server sends. */
const maxChunkLine = 4096;

export interface Head {
  readonly status: number;
  /** Lower-case names; a repeated header's values joined with ", ". */
  readonly headers: Record<string, string>;
  /** The location header when it was sent exactly once. */
  readonly location: string | undefined;
}

/** What the reader tells its owner, in order: one head (the final one), the body's pieces, its end. */
export interface AnswerEvents {
  /** Answers whether the body is wanted; if not, reading stops here (a redirect the check follows). */
  head(head: Head): boolean;
  /** A piece of the body: a view of the connection's read buffer, valid only during the call. */
  data(chunk: Buffer): void;
  end(): void;
}

export type AnswerErrorCode = "HEALTHD_HEAD_TOO_LARGE" | "HEALTHD_INVALID_ANSWER" | "HEALTHD_CLOSED_EARLY";

/** Why an answer could not be read; the controller turns the code into an error kind. */
export class AnswerError extends Error {
  constructor(
    readonly code: AnswerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

type State = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-end" | "trailers" | "until-close" | "done";

const statusLine = /^HTTP\/1\.[01] (\d{3})(?: |$)/;
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// What a field value may not hold (RFC 9110 5.5): control characters other than tab.
const controls = /[\u0000-\u0008\u000a-\u001f\u007f]/;
// Optional whitespace around a field value is spaces and tabs only (String#trim would take Latin-1's NBSP too).
const whitespace = /^[\t ]+|[\t ]+$/g;
const chunkSize = /^([0-9A-Fa-f]{1,12})[\t ]*(?:;.*)?$/;

export class AnswerReader {
  #state: State = "head";
  #line = "";
  #lineBytes = 0;
  #headBytes = 0;
  #headerLines = 0;
  #status = 0;
  #headers: Record<string, string> = Object.create(null);
  #locations = 0;
  #remaining = 0;
  #statusLine = "";
  #upgrade = false;
  readonly #events: AnswerEvents;
  readonly #bodiless: boolean;
  readonly #limits: HeadLimits;

  /** `bodiless`: the request was a HEAD, whose answer has no body whatever its head says. */
  constructor(events: AnswerEvents, bodiless: boolean, limits: HeadLimits = headLimits) {
    this.#events = events;
    this.#bodiless = bodiless;
    this.#limits = limits;
  }

  /**
   * A reader of the answer to an Upgrade request (a WebSocket handshake): a 101 is then the final head, and
   * reading stops after it, where `push` says, since the bytes that follow are the other protocol's. No body is
   * read of any answer: one that is not a 101 fails the upgrade by its head alone.
   */
  static forUpgrade(events: AnswerEvents, limits: HeadLimits = headLimits): AnswerReader {
    const reader = new AnswerReader(events, true, limits);
    reader.#upgrade = true;
    return reader;
  }

  /** The final status line's reason phrase ("Forbidden"), as the server wrote it; "" when it wrote none. */
  get reason(): string {
    return this.#statusLine.slice(13);
  }

  /** Whether the whole answer has been read (or reading was stopped). */
  get complete(): boolean {
    return this.#state === "done";
  }

  /**
   * Reads `chunk`, keeping nothing of it but copies; throws an AnswerError at the first byte that breaks HTTP or
   * a bound. Answers where reading stopped: `chunk.length` unless the answer ended (or was stopped) within it.
   */
  push(chunk: Buffer): number {
    let at = 0;
    while (at < chunk.length) {
      switch (this.#state) {
        case "head":
        case "chunk-size":
        case "chunk-end":
        case "trailers":
          at = this.#readLine(chunk, at);
          break;
        case "length":
        case "chunk-data": {
          const state = this.#state;
          const take = Math.min(this.#remaining, chunk.length - at);
          this.#remaining -= take;
          this.#events.data(chunk.subarray(at, at + take));
          at += take;
          if (this.#state !== state) return at; // stopped by its owner
          if (this.#remaining > 0) break;
          if (state === "chunk-data") this.#state = "chunk-end";
          else {
            this.#state = "done";
            this.#events.end();
          }
          break;
        }
        case "until-close":
          this.#events.data(at === 0 ? chunk : chunk.subarray(at));
          return chunk.length;
        case "done":
          return at; // what follows a complete answer is not read
      }
    }
    return at;
  }

  /** The connection has ended: that ends a body read until the close, and cuts any other short. */
  close(): void {
    if (this.#state === "done") return;
    if (this.#state === "until-close") {
      this.#state = "done";
      this.#events.end();
      return;
    }
    throw new AnswerError("HEALTHD_CLOSED_EARLY", "the connection closed before the answer was complete");
  }

  /** No more is wanted (the owner has failed the check): bytes still arriving are ignored. */
  stop(): void {
    this.#state = "done";
  }

  #readLine(chunk: Buffer, at: number): number {
    const newline = chunk.indexOf(10, at);
    const end = newline < 0 ? chunk.length : newline + 1;
    this.#lineBytes += end - at;
    if (this.#state === "head" || this.#state === "trailers") {
      this.#headBytes += end - at;
      if (this.#headBytes > this.#limits.maxBytes) {
        throw new AnswerError("HEALTHD_HEAD_TOO_LARGE", `the response ${this.#state === "head" ? "head" : "trailer section"} is larger than ${this.#limits.maxBytes} bytes`);
      }
    } else if (this.#lineBytes > maxChunkLine) {
      throw new AnswerError("HEALTHD_INVALID_ANSWER", `a chunk's size line is longer than ${maxChunkLine} bytes`);
    }
    this.#line += chunk.toString("latin1", at, end);
    if (newline < 0) return end;
    // Lines end in CRLF; a bare LF is read as one too, as browsers do.
    const line = this.#line.slice(0, this.#line.endsWith("\r\n") ? -2 : -1);
    this.#line = "";
    this.#lineBytes = 0;
    this.#onLine(line);
    return end;
  }

  #onLine(line: string): void {
    switch (this.#state) {
      case "head":
        if (this.#status === 0) this.#onStatusLine(line);
        else if (line === "") this.#onHeadEnd();
        else this.#onHeader(line);
        return;
      case "chunk-size": {
        const size = chunkSize.exec(line);
        if (!size) throw new AnswerError("HEALTHD_INVALID_ANSWER", `a chunk's size line is not hexadecimal: ${quote(line)}`);
        this.#remaining = parseInt(size[1]!, 16);
        if (this.#remaining > 0) this.#state = "chunk-data";
        else {
          this.#state = "trailers";
          this.#headBytes = 0;
        }
        return;
      }
      case "chunk-end":
        if (line !== "") throw new AnswerError("HEALTHD_INVALID_ANSWER", "a chunk is longer than its size line says");
        this.#state = "chunk-size";
        return;
      case "trailers":
        // Trailer fields are not part of what a check sees (browsers ignore them too); the empty line ends them.
        if (line === "") {
          this.#state = "done";
          this.#events.end();
        }
        return;
    }
  }

  #onStatusLine(line: string): void {
    const status = statusLine.exec(line);
    if (!status) throw new AnswerError("HEALTHD_INVALID_ANSWER", `the status line is not HTTP/1.x: ${quote(line)}`);
    this.#status = Number(status[1]);
    this.#statusLine = line;
    if (this.#status < 100) throw new AnswerError("HEALTHD_INVALID_ANSWER", `the status line has no valid status: ${quote(line)}`);
  }

  #onHeader(line: string): void {
    if (++this.#headerLines > this.#limits.maxHeaders) {
      throw new AnswerError("HEALTHD_HEAD_TOO_LARGE", `the response head has more than ${this.#limits.maxHeaders} headers`);
    }
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon);
    if (!token.test(name)) throw new AnswerError("HEALTHD_INVALID_ANSWER", `a header line has no valid name: ${quote(line)}`);
    const value = line.slice(colon + 1).replace(whitespace, "");
    if (controls.test(value)) throw new AnswerError("HEALTHD_INVALID_ANSWER", `header ${name} holds a control character`);
    const lower = name.toLowerCase();
    const prior = this.#headers[lower];
    this.#headers[lower] = prior === undefined ? value : `${prior}, ${value}`;
    if (lower === "location") this.#locations++;
  }

  #onHeadEnd(): void {
    const status = this.#status;
    const headers = this.#headers;
    if (status === 101 && !this.#upgrade) {
      // What follows a switch is another protocol, which only an upgrade asks for (an http check sends no Upgrade).
      throw new AnswerError("HEALTHD_INVALID_ANSWER", "101 Switching Protocols to a request that asked for no upgrade");
    }
    if (status < 200 && status !== 101) {
      // An interim answer (100 Continue, 103 Early Hints): the final one follows, with bounds of its own.
      this.#status = this.#headBytes = this.#headerLines = this.#locations = 0;
      this.#headers = Object.create(null);
      return;
    }
    const location = this.#locations === 1 ? headers.location : undefined;
    if (!this.#events.head({ status, headers, location }) || this.#upgrade) {
      this.#state = "done";
      return;
    }
    this.#state = this.#framing(status, headers);
    if (this.#state === "done") this.#events.end();
  }

  /** How the body is delimited (RFC 9112 6.3). */
  #framing(status: number, headers: Record<string, string>): State {
    if (this.#bodiless || status === 204 || status === 304) return "done";
    const codings = headers["transfer-encoding"];
    if (codings !== undefined) {
      // Transfer-Encoding overrides Content-Length; a coding other than chunked last is read until the close.
      return codings.split(",").at(-1)!.trim().toLowerCase() === "chunked" ? "chunk-size" : "until-close";
    }
    const length = headers["content-length"];
    if (length === undefined) return "until-close";
    // A repeated Content-Length is valid only when every value is the same (RFC 9110 8.6).
    const values = new Set(length.split(",").map((v) => v.trim()));
    const [value] = values;
    if (values.size !== 1 || !/^\d{1,15}$/.test(value!)) {
      throw new AnswerError("HEALTHD_INVALID_ANSWER", `content-length is not one number: ${quote(length)}`);
    }
    this.#remaining = Number(value);
    return this.#remaining === 0 ? "done" : "length";
  }
}

/** What the target sent, as an error quotes it: short (control characters are written out where it is stored). */
const quote = (text: string) => JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
