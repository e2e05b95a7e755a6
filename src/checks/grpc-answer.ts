/**
 * What a gRPC health call's answer means, from what came back on its HTTP/2 stream (the gRPC over HTTP/2
 * protocol, grpc/grpc doc/PROTOCOL-HTTP2.md): the serving status of a HealthCheckResponse, or the failure the
 * headers, the trailers, the reset or the body say. Pure: grpc.ts reads the stream and hands the parts in.
 */
import { CheckFailure } from "./failure.ts";
import { decodeResponse, encodeRequest } from "./grpc-health.ts";

/** A health answer is two bytes; anything much larger is not one, and is not read. */
export const maxAnswerBytes = 4096;

/** gRPC's status codes by number, as its documents name them. */
const codeNames = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];

/** HTTP/2's error codes by number (RFC 9113 section 7), as a reset names them. */
const resetNames = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"];

/** The request's body: one gRPC message (flag 0: not compressed; its length, 4 bytes big-endian; the message). */
export function requestFrame(service: string): Buffer {
  const message = encodeRequest({ service });
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** Who is asked what, for the sentences: the target and "the server" or `service "x"`. */
export interface Asked {
  readonly target: string;
  readonly what: string;
  readonly timeoutMs: number;
}

/**
 * The answer's body, taken in as it arrives and bounded: more than one message of `maxAnswerBytes` is refused
 * as soon as its length prefix (or what came) says so, so a flooding server is not read on.
 */
export class AnswerBody {
  readonly #chunks: Buffer[] = [];
  #length = 0;
  constructor(readonly asked: Asked) {}

  /** Takes a chunk; a failure once the body is no health answer (then read no more). */
  add(chunk: Buffer): CheckFailure | undefined {
    const before = this.#length;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    if (before < 5 && this.#length >= 5) {
      // The message's prefix, once whole: its flag and its length say what it is before the rest is read.
      const head = this.#chunks.length === 1 ? chunk : Buffer.concat(this.#chunks);
      if (head[0] !== 0) return new CheckFailure("protocol", `${this.asked.target} answered Health/Check with a compressed message (flag ${head[0]}), which healthd did not offer to read`);
      const declared = head.readUInt32BE(1);
      if (declared > maxAnswerBytes) return this.#tooLarge(`a message of ${declared} bytes`);
    }
    if (this.#length > 5 + maxAnswerBytes) return this.#tooLarge(`${this.#length} bytes`);
    return undefined;
  }

  #tooLarge(what: string): CheckFailure {
    return new CheckFailure("size", `${this.asked.target} answered with more than ${maxAnswerBytes} bytes (${what}), which is no health answer`);
  }

  /** The serving status of the one HealthCheckResponse the body holds; throws a protocol failure if it holds none. */
  status(): number {
    const body = Buffer.concat(this.#chunks);
    const none = (why: string) => new CheckFailure("protocol", `${this.asked.target} answered Health/Check with no HealthCheckResponse (${why})`);
    if (body.length === 0) throw none("an OK status and no message");
    if (body.length < 5) throw none(`${body.length} bytes, not a message`);
    const length = body.readUInt32BE(1);
    if (body.length !== 5 + length) throw none(body.length < 5 + length ? `a message cut short: ${body.length - 5} of ${length} bytes` : "more than one message");
    try {
      return decodeResponse(body.subarray(5)).status;
    } catch (error) {
      throw none(`a message that is not one: ${(error as Error).message}`);
    }
  }
}

/** What the response's headers say: undefined while they are a gRPC answer's, else the failure they are. */
export function headersFailure(status: number | undefined, contentType: string | undefined, asked: Asked): CheckFailure | undefined {
  if (status === 200 && contentType !== undefined && /^application\/grpc(?:[+;]|$)/i.test(contentType)) return undefined;
  // An HTTP/2 server that is not a gRPC one (a web server, a proxy with no route) answers with its own status.
  const said = [status === 200 ? undefined : status === undefined || Number.isNaN(status) ? "no :status" : `HTTP status ${status}`, contentType === undefined ? "no content-type" : `content-type ${contentType}`].filter(Boolean).join(", ");
  return new CheckFailure("protocol", `${asked.target} answered in HTTP/2 but not as a gRPC server (${said})`);
}

/** grpc-message is percent-encoded UTF-8 (PROTOCOL-HTTP2.md); one that is not is shown as it came. */
export function grpcMessage(raw: string | undefined): string {
  if (raw === undefined) return "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The failure a non-zero grpc-status is, by its code; `message` is the decoded grpc-message. */
export function statusFailure(code: number, message: string, asked: Asked): CheckFailure {
  const name = codeNames[code];
  const named = `${name ?? `code ${code}`}${message ? `: ${message}` : ""}`;
  const at = asked.target;
  switch (name) {
    case "DEADLINE_EXCEEDED":
      return new CheckFailure("timeout", `no gRPC health answer from ${at} within ${asked.timeoutMs} ms (${named})`);
    case "NOT_FOUND":
      return new CheckFailure("answer", `${at} knows no ${asked.what} (${named})`);
    case "UNIMPLEMENTED":
      return new CheckFailure("status", `${at} has no grpc.health.v1.Health service (${named}); register the standard health service, or check another way`);
    default:
      return new CheckFailure("status", `${at} answered ${named}`);
  }
}

/** A grpc-status trailer as a code: a missing or malformed one is a protocol failure. */
export function statusCode(raw: string | undefined, asked: Asked): number {
  if (raw !== undefined && /^\d{1,3}$/.test(raw)) return Number(raw);
  const said = raw === undefined ? "with no grpc-status" : `with grpc-status ${JSON.stringify(raw.slice(0, 40))}, not a number`;
  throw new CheckFailure("protocol", `${asked.target} ended the Health/Check call ${said}; it is not a gRPC server`);
}

/** HTTP/2's codes that say the other side broke its rules: a server that sends them is no gRPC server. */
const brokenCodes = ["PROTOCOL_ERROR", "FLOW_CONTROL_ERROR", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "COMPRESSION_ERROR", "HTTP_1_1_REQUIRED"];

/** The failure a call reset by the server is (RST_STREAM), by its HTTP/2 error code. */
export function resetFailure(code: number, asked: Asked): CheckFailure {
  const name = resetNames[code] ?? `code ${code}`;
  // A server that breaks HTTP/2's rules is no gRPC server; one that refuses or cancels the call is one saying no.
  return new CheckFailure(brokenCodes.includes(name) ? "protocol" : "status", `${asked.target} reset the Health/Check call (RST_STREAM ${name}) before answering it`);
}

/** The failure a GOAWAY before the answer is: the connection closed by the server, or broken by healthd's side as it saw it. */
export function goawayFailure(code: number, asked: Asked): CheckFailure {
  const name = resetNames[code] ?? `code ${code}`;
  return new CheckFailure(brokenCodes.includes(name) ? "protocol" : "connect", `${asked.target} closed the connection (GOAWAY ${name}) before answering Health/Check`);
}

/** What a server that broke HTTP/2 itself is: most often a plain HTTP/1 port, or a grpcs one asked without TLS. */
export function http2Failure(why: string, tls: boolean, asked: Asked): CheckFailure {
  return new CheckFailure("protocol", `${asked.target} does not speak gRPC over HTTP/2 (${why})${tls ? "" : "; if it serves gRPC over TLS, set tls: true"}`);
}
