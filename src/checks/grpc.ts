/**
 * A gRPC check: grpc.health.v1.Health/Check asked of the target over a fresh HTTP/2 session (node:http2, TLS
 * with ALPN h2 when `tls`), destroyed after the call whatever happened. SERVING passes; another status fails
 * (answer), and so does a gRPC error, by what it says (timeout, connect, dns, tls, protocol, status, size). One
 * deadline, `timeoutMs`, covers the connection and the call, and is sent as grpc-timeout.
 *
 * Why node:http2 and not @grpc/grpc-js: a unary call with no metadata, one two-field message each way
 * (grpc-health.ts) and gRPC's status in the trailers is all a health check needs, and is a few lines over
 * HTTP/2 (grpc-answer.ts judges what came back). grpc-js built its whole channel stack for each check
 * (resolver, balancers, subchannel, call layers): this costs half its CPU (docs/benchmarks.md). What is left
 * is node:http2's own per session (its nghttp2 session, socket and stream objects, their setup and teardown:
 * profiled, little of it this file's); below that would take HTTP/2 framing and HPACK written here.
 *
 * A hostile server holds little: the session may buffer 1 MB at most (node's least), the stream's window is
 * small, an answer is read up to maxAnswerBytes, and the session is destroyed at the end or the deadline.
 */
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type SecureClientSessionOptions } from "node:http2";
import { isIP } from "node:net";
import { systemClock } from "../platform/clock.ts";
import { version } from "../platform/version.ts";
import type { GrpcCheck, Outcome } from "../domain/model.ts";
import { secureContext } from "./connect.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import { AnswerBody, type Asked, grpcMessage, headersFailure, requestFrame, resetFailure, statusCode, statusFailure } from "./grpc-answer.ts";
import { healthCheckMethod, statusName } from "./grpc-health.ts";
import type { ControllerOptions } from "./http.ts";

export type GrpcRequest = Pick<GrpcCheck, "target" | "tls" | "verifyTls" | "service" | "maxLatencyMs" | "timeoutMs">;

/**
 * The session's limits: node's least memory for it, no pushed streams, a window about the size of the most
 * that is read of an answer, and room for a gRPC answer's few headers.
 */
const limits = {
  maxSessionMemory: 1,
  maxHeaderListPairs: 64,
  maxReservedRemoteStreams: 0,
  peerMaxConcurrentStreams: 1,
  settings: { enablePush: false, initialWindowSize: 16_384, maxHeaderListSize: 16_384 },
} as const;

export async function runGrpcCheck(check: GrpcRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const asked: Asked = { target: check.target, what: check.service === "" ? "the server" : `service ${JSON.stringify(check.service)}`, timeoutMs: check.timeoutMs };
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">, latencyMs = round(clock.monotonic() - started)): Outcome => ({
    ok: false, status: null, latencyMs, matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  const host = hostOf(check.target);
  let session: ClientHttp2Session | undefined;
  try {
    const secure: SecureClientSessionOptions = check.tls
      ? { servername: isIP(host) ? undefined : host, secureContext: secureContext(null), ...(check.verifyTls ? {} : { rejectUnauthorized: false, checkServerIdentity: () => undefined }) }
      : {};
    session = connect(`${check.tls ? "https" : "http"}://${check.target}`, { ...limits, ...secure });
    const status = await deadline.until(call(session, check, asked, options.userAgent ?? `healthd/${version}`));
    const latencyMs = round(clock.monotonic() - started);
    const answers = [statusName(status)];
    if (status !== 1) return { ...fail({ kind: "answer", message: `${asked.what} is ${statusName(status)}, not SERVING` }, latencyMs), answers };
    if (check.maxLatencyMs !== null && latencyMs > check.maxLatencyMs) {
      return { ...fail({ kind: "latency", message: `answered in ${Math.round(latencyMs)} ms, more than the ${check.maxLatencyMs} ms allowed` }, latencyMs), answers };
    }
    return { ok: true, status: null, latencyMs, matched: 0, errorKind: null, error: null, checkedAt, answers };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no gRPC health answer from ${check.target} within ${check.timeoutMs} ms`));
    return fail(failureOf(error, host, check.tls, asked));
  } finally {
    deadline.clear();
    session?.destroy();
  }
}

/** The host of host:port or [v6]:port, as the resolver and TLS's servername take it. */
const hostOf = (target: string) => target.slice(0, target.lastIndexOf(":")).replace(/^\[(.*)\]$/, "$1");

/** One Health/Check call on `session`: the serving status answered, or a rejection with what went wrong. */
function call(session: ClientHttp2Session, check: GrpcRequest, asked: Asked, userAgent: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown) => {
      settled = true;
      reject(error);
    };
    const closed = () => new CheckFailure("connect", `connection to ${check.target} was closed by the server while calling Health/Check`);
    // The session's errors: the connection (refused, DNS, TLS), or HTTP/2 itself (a server that speaks another protocol).
    session.on("error", fail);
    // (Once settled, the session's close is healthd's own: no failure is made for it, a cost per check.)
    session.on("close", () => settled || fail(closed()));
    const stream: ClientHttp2Stream = session.request(
      {
        ":method": "POST",
        ":path": healthCheckMethod,
        "content-type": "application/grpc",
        te: "trailers",
        "user-agent": userAgent,
        "grpc-timeout": `${check.timeoutMs}m`,
      },
      { endStream: false },
    );
    const body = new AnswerBody(asked);
    let trailers: IncomingHttpHeaders | undefined;
    // A reset by the server comes as the stream's error; its code says which.
    stream.on("error", (error: { code?: string }) => fail(error.code === "ERR_HTTP2_STREAM_ERROR" && stream.rstCode ? resetFailure(stream.rstCode, asked) : error));
    stream.on("response", (headers) => {
      // Trailers-Only: an error (or an answer without a message) in the headers alone.
      if (headers["grpc-status"] !== undefined) trailers = headers;
      else {
        const wrong = headersFailure(headers[":status"], headers["content-type"], asked);
        if (wrong) fail(wrong);
      }
    });
    stream.on("data", (chunk: Buffer) => {
      const wrong = settled ? undefined : body.add(chunk);
      if (wrong) {
        stream.pause();
        fail(wrong);
      }
    });
    stream.on("trailers", (headers) => (trailers = headers));
    stream.on("close", () => {
      if (settled) return;
      try {
        // The connection closed under the call ends its stream too, with no reset of its own.
        if (!trailers && (session.closed || session.destroyed)) throw closed();
        if (!trailers && stream.rstCode !== undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR) throw resetFailure(stream.rstCode, asked);
        const code = statusCode(single(trailers?.["grpc-status"]), asked);
        if (code !== 0) throw statusFailure(code, grpcMessage(single(trailers?.["grpc-message"])), asked);
        settled = true;
        resolve(body.status());
      } catch (error) {
        fail(error);
      }
    });
    stream.end(requestFrame(check.service));
  });
}

const single = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** What the session or the stream threw as a failure: a socket's, resolver's or TLS's error by classify, HTTP/2's as protocol. */
function failureOf(error: unknown, host: string, tls: boolean, asked: Asked): CheckFailure {
  if (error instanceof CheckFailure) return error;
  let e = error as { code?: string; message?: string; cause?: unknown };
  // A stream cancelled because its session failed carries the session's error.
  if (e.code === "ERR_HTTP2_STREAM_CANCEL" && e.cause) e = e.cause as typeof e;
  if (e.code?.startsWith("ERR_HTTP2_")) {
    // Most often a plain HTTP/1 port, or a grpcs one asked without TLS (its handshake is no HTTP/2 frame).
    return new CheckFailure("protocol", `${asked.target} does not speak gRPC over HTTP/2 (${e.message})${tls ? "" : "; if it serves gRPC over TLS, set tls: true"}`);
  }
  return classify(e, host, asked.target, "calling Health/Check");
}
