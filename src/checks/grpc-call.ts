/**
 * One grpc.health.v1.Health/Check call as HTTP/2 frames on a connection of its own: the request written whole
 * (preface, SETTINGS, HEADERS, DATA with END_STREAM), then the server's frames read until stream 1 ends. What
 * the answer means is grpc-answer.ts's; this is the HTTP/2 around it (RFC 9113), as much as a client with one
 * stream needs: the server's SETTINGS acknowledged (none of them changes what a client that has already sent
 * all it sends does), PING answered, WINDOW_UPDATE and PRIORITY ignored (the answer is read up to 4 KiB, inside
 * any window), GOAWAY and RST_STREAM told by their codes, header blocks decoded by hpack.ts. Pure: grpc.ts
 * hands each read in and writes what `write` is given.
 *
 * Bounded for a hostile server: one frame of 16 KiB at most held (h2-frames.ts), a header block of 16 KiB,
 * 64 KiB of frames in all, 100 control frames (SETTINGS, PING) answered, then the call fails.
 */
import { CheckFailure } from "./failure.ts";
import { AnswerBody, type Asked, goawayFailure, grpcMessage, headersFailure, http2Failure, requestFrame, resetFailure, statusCode, statusFailure } from "./grpc-answer.ts";
import { healthCheckMethod } from "./grpc-health.ts";
import {
  ACK, CONTINUATION, DATA, ENABLE_PUSH, END_HEADERS, END_STREAM, FrameReader, GOAWAY, H2Error, HEADERS, PING, PRIORITY_FLAG, PUSH_PROMISE, RST_STREAM, SETTINGS,
  frame, preface, settings, unpadded, type Frame,
} from "./h2-frames.ts";
import { encodeLiterals, HpackDecoder, HpackError } from "./hpack.ts";

/** The most of one header block (HEADERS and its CONTINUATIONs) read: a gRPC answer's are a few hundred bytes. */
export const maxHeaderBlock = 16_384;
/** The most read of a connection in all: a health answer, its headers and the server's settings are well under. */
export const maxConnectionBytes = 65_536;
/** How many SETTINGS and PING frames are answered before a server is taken to flood. */
const maxControlFrames = 100;

/** The client's first SETTINGS: no server push (a PUSH_PROMISE is then a protocol error), all else HTTP/2's defaults. */
const start = Buffer.concat([preface, frame(SETTINGS, 0, 0, settings([[ENABLE_PUSH, 0]]))]);
const settingsAck = frame(SETTINGS, ACK, 0);

export interface CallRequest {
  readonly target: string;
  readonly tls: boolean;
  readonly service: string;
  readonly timeoutMs: number;
  readonly userAgent: string;
}

/** The headers and trailers the answer is judged by. */
interface Said {
  status?: string;
  contentType?: string;
  grpcStatus?: string;
  grpcMessage?: string;
}

export class HealthCall {
  readonly #asked: Asked;
  readonly #tls: boolean;
  readonly #write: (bytes: Buffer) => void;
  readonly #frames = new FrameReader();
  readonly #hpack = new HpackDecoder();
  readonly #body: AnswerBody;
  /** Where stream 1 is: awaiting its response headers, reading its body (then trailers), or ended. */
  #state: "headers" | "body" | "ended" = "headers";
  /** A header block's fragments until END_HEADERS, and whether its HEADERS frame ended the stream. */
  #block: Buffer[] | undefined;
  #blockLength = 0;
  #blockEnds = false;
  #trailers: Said | undefined;
  #read = 0;
  #controlFrames = 0;

  constructor(asked: Asked, tls: boolean, write: (bytes: Buffer) => void) {
    this.#asked = asked;
    this.#tls = tls;
    this.#write = write;
    this.#body = new AnswerBody(asked);
  }

  /** The request's bytes, to be written once, whole. */
  static request(call: CallRequest): Buffer {
    const block = encodeLiterals([
      [":method", "POST"],
      [":scheme", call.tls ? "https" : "http"],
      [":path", healthCheckMethod],
      [":authority", call.target],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ["user-agent", call.userAgent],
      ["grpc-timeout", `${call.timeoutMs}m`],
    ]);
    // A target of 260 characters and a user agent make a block far under a frame; the message is 5 + 203 bytes at most.
    const message = requestFrame(call.service);
    return Buffer.concat([start, frame(HEADERS, END_HEADERS, 1, block), frame(DATA, END_STREAM, 1, message)]);
  }

  /**
   * Takes a read (a view valid during the call only): the serving status once the call has ended well,
   * undefined while it goes on; throws the CheckFailure the server's frames make.
   */
  take(view: Buffer): number | undefined {
    this.#read += view.length;
    if (this.#read > maxConnectionBytes) throw new CheckFailure("size", `${this.#asked.target} sent more than ${maxConnectionBytes} bytes without answering Health/Check, which is no health answer`);
    let status: number | undefined;
    try {
      this.#frames.read(view, (f) => {
        if (status === undefined) status = this.#frame(f);
      });
    } catch (error) {
      if (error instanceof H2Error || error instanceof HpackError) throw http2Failure(error instanceof HpackError ? `Compression error: ${error.message}` : error.message, this.#tls, this.#asked);
      throw error;
    }
    return status;
  }

  #frame(f: Frame): number | undefined {
    // A header block is HEADERS and its CONTINUATIONs, nothing between (RFC 9113 6.10).
    if (this.#block && (f.type !== CONTINUATION || f.stream !== 1)) throw new H2Error(`Protocol error: a frame of type ${f.type} inside a header block`);
    switch (f.type) {
      case DATA: {
        this.#onStream(f);
        if (this.#state !== "body") throw new H2Error(`Protocol error: DATA ${this.#state === "headers" ? "before the response headers" : "after the stream ended"}`);
        const wrong = this.#body.add(Buffer.from(unpadded(f)));
        if (wrong) throw wrong;
        return f.flags & END_STREAM ? this.#end() : undefined;
      }
      case HEADERS: {
        this.#onStream(f);
        let fragment = unpadded(f);
        if (f.flags & PRIORITY_FLAG) {
          if (fragment.length < 5) throw new H2Error("Frame size error: HEADERS with PRIORITY of fewer than 5 bytes");
          fragment = fragment.subarray(5);
        }
        this.#block = [];
        this.#blockLength = 0;
        this.#blockEnds = (f.flags & END_STREAM) !== 0;
        return this.#fragment(fragment, f.flags);
      }
      case CONTINUATION:
        if (!this.#block) throw new H2Error("Protocol error: CONTINUATION with no HEADERS before it");
        return this.#fragment(f.payload, f.flags);
      case RST_STREAM: {
        this.#onStream(f);
        if (f.payload.length !== 4) throw new H2Error(`Frame size error: RST_STREAM of ${f.payload.length} bytes`);
        const code = f.payload.readUInt32BE(0);
        if (code !== 0) throw resetFailure(code, this.#asked);
        // Reset with NO_ERROR before its end: the answer is what came, which has no trailers yet.
        return this.#end();
      }
      case SETTINGS:
        this.#onConnection(f);
        if (f.flags & ACK) return undefined;
        if (f.payload.length % 6 !== 0) throw new H2Error(`Frame size error: SETTINGS of ${f.payload.length} bytes`);
        this.#control();
        this.#write(settingsAck);
        return undefined;
      case PING:
        this.#onConnection(f);
        if (f.payload.length !== 8) throw new H2Error(`Frame size error: PING of ${f.payload.length} bytes`);
        if (f.flags & ACK) return undefined;
        this.#control();
        this.#write(frame(PING, ACK, 0, f.payload));
        return undefined;
      case GOAWAY: {
        this.#onConnection(f);
        if (f.payload.length < 8) throw new H2Error(`Frame size error: GOAWAY of ${f.payload.length} bytes`);
        const last = f.payload.readUInt32BE(0) & 0x7fffffff;
        const code = f.payload.readUInt32BE(4);
        // A server shutting down gracefully still answers the streams up to `last`, ours (1) among them.
        if (code !== 0 || last < 1) throw goawayFailure(code, this.#asked);
        return undefined;
      }
      case PUSH_PROMISE:
        throw new H2Error("Protocol error: PUSH_PROMISE, which healthd's SETTINGS refused");
      default:
        // PRIORITY, WINDOW_UPDATE and frame types HTTP/2 has added since: nothing a client of one stream needs.
        return undefined;
    }
  }

  /** A frame of stream 1, the only one healthd opens. */
  #onStream(f: Frame): void {
    if (f.stream !== 1) throw new H2Error(`Protocol error: a frame of type ${f.type} on stream ${f.stream}, which healthd did not open`);
  }

  #onConnection(f: Frame): void {
    if (f.stream !== 0) throw new H2Error(`Protocol error: a frame of type ${f.type} on stream ${f.stream}, not the connection's`);
  }

  #control(): void {
    if (++this.#controlFrames > maxControlFrames) throw new H2Error(`Protocol error: more than ${maxControlFrames} SETTINGS and PING frames`);
  }

  #fragment(fragment: Buffer, flags: number): number | undefined {
    this.#blockLength += fragment.length;
    if (this.#blockLength > maxHeaderBlock) throw new CheckFailure("size", `${this.#asked.target} answered with a header block of more than ${maxHeaderBlock} bytes, which is no health answer`);
    // The first fragment is a view of the shared buffer: copied only if more are to come.
    if ((flags & END_HEADERS) === 0) {
      this.#block!.push(Buffer.from(fragment));
      return undefined;
    }
    const block = this.#block!.length === 0 ? fragment : Buffer.concat([...this.#block!, fragment]);
    this.#block = undefined;
    return this.#headers(this.#decode(block), this.#blockEnds);
  }

  #decode(block: Buffer): Said {
    const said: Said = {};
    // Every block is decoded whole, whatever it holds: the dynamic table must follow the server's.
    this.#hpack.decode(block, (name, value) => {
      if (name === ":status") said.status ??= value;
      else if (name === "content-type") said.contentType ??= value;
      else if (name === "grpc-status") said.grpcStatus ??= value;
      else if (name === "grpc-message") said.grpcMessage ??= value;
    });
    return said;
  }

  #headers(said: Said, ends: boolean): number | undefined {
    if (this.#state === "ended") throw new H2Error("Protocol error: HEADERS after the stream ended");
    if (this.#state === "headers") {
      // 1xx: an informational answer, the real one follows (RFC 9113 8.1).
      if (said.status !== undefined && /^1\d\d$/.test(said.status) && !ends) return undefined;
      this.#state = "body";
      // Trailers-Only: an error (or an answer without a message) in one block that ends the stream. A grpc-status
      // in response headers that do not end it is no answer: the status is the trailers' alone.
      if (said.grpcStatus !== undefined && ends) this.#trailers = said;
      else {
        const wrong = headersFailure(said.status === undefined ? undefined : Number(said.status), said.contentType, this.#asked);
        if (wrong) throw wrong;
      }
    } else {
      if (!ends) throw new H2Error("Protocol error: trailers that do not end the stream");
      this.#trailers = said;
    }
    return ends ? this.#end() : undefined;
  }

  /** Stream 1 has ended: the answer is its trailers' status, then its message. */
  #end(): number {
    this.#state = "ended";
    const code = statusCode(this.#trailers?.grpcStatus, this.#asked);
    if (code !== 0) throw statusFailure(code, grpcMessage(this.#trailers?.grpcMessage), this.#asked);
    return this.#body.status();
  }
}
