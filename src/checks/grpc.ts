/**
 * A gRPC check: grpc.health.v1.Health/Check asked of the target over a fresh connection (connect.ts: TLS with
 * ALPN h2 when `tls`, and h2 required), destroyed after the call whatever happened. SERVING passes; another
 * status fails (answer), and so does a gRPC error, by what it says (timeout, connect, dns, tls, protocol,
 * status, size). One deadline, `timeoutMs`, covers the connection and the call, and is sent as grpc-timeout.
 *
 * Why HTTP/2 written here (grpc-call.ts, h2-frames.ts, hpack.ts) and not a library: a unary call with no
 * metadata, one two-field message each way (grpc-health.ts) and gRPC's status in the trailers is all a health
 * check needs. @grpc/grpc-js built its whole channel stack for each check and cost 3.5x an http check's CPU;
 * node:http2 cost 1.8 to 2.2x, nearly all of it its session (nghttp2's, and Node's session, socket and stream
 * objects, set up and torn down a check: profiled). No well-kept package offers HTTP/2 framing without such a
 * session. Written here, one call is one write and a few frames read, on the connection and shared read buffer
 * every other kind uses (docs/benchmarks/2026-12-06-kinds.md has the figures).
 *
 * A hostile server holds little: one frame of 16 KiB at most is buffered, a header block of 16 KiB, 64 KiB of
 * frames in all, an answer up to maxAnswerBytes, and the connection is destroyed at the end or the deadline.
 */
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { systemClock } from "../platform/clock.ts";
import { version } from "../platform/version.ts";
import type { GrpcCheck, Outcome } from "../domain/model.ts";
import { connect } from "./connect.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import { type Asked, http2Failure } from "./grpc-answer.ts";
import { HealthCall } from "./grpc-call.ts";
import { statusName } from "./grpc-health.ts";
import type { ControllerOptions } from "./http.ts";

export type GrpcRequest = Pick<GrpcCheck, "target" | "tls" | "verifyTls" | "service" | "maxLatencyMs" | "timeoutMs">;

const h2 = ["h2"] as const;
const stage = "calling Health/Check";

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
  const colon = check.target.lastIndexOf(":");
  const host = check.target.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  let socket: Socket | undefined;
  /** The call has its answer, its failure or its deadline: what the connection says next is healthd's own doing. */
  let settled = false;
  try {
    const status = await deadline.until(
      new Promise<number>((resolve, reject) => {
        const end = (error: unknown) => {
          if (settled) return;
          settled = true;
          reject(error);
        };
        const call = new HealthCall(asked, check.tls, (bytes) => socket!.write(bytes));
        const take = (view: Buffer) => {
          if (settled) return;
          try {
            const answered = call.take(view);
            if (answered === undefined) return;
            settled = true;
            resolve(answered);
          } catch (error) {
            end(error);
          }
        };
        const s = (socket = connect({ host, port: Number(check.target.slice(colon + 1)), tls: check.tls, verifyTls: check.verifyTls, alpn: h2 }, () => take));
        const request = HealthCall.request({ target: check.target, tls: check.tls, service: check.service, timeoutMs: check.timeoutMs, userAgent: options.userAgent ?? `healthd/${version}` });
        if (!check.tls) s.write(request);
        else {
          // Written once the certificate is verified and the server agreed to HTTP/2.
          s.once("secureConnect", () => {
            const agreed = (s as TLSSocket).alpnProtocol;
            if (agreed === "h2") s.write(request);
            else end(http2Failure(`its TLS agreed on ${agreed ? `ALPN ${agreed}` : "no ALPN protocol"}, not h2`, true, asked));
          });
        }
        s.on("error", end);
        const closed = () => end(new CheckFailure("connect", `connection to ${check.target} was closed by the server while ${stage}`));
        s.once("end", closed);
        s.once("close", closed);
      }),
    );
    const latencyMs = round(clock.monotonic() - started);
    const answers = [statusName(status)];
    if (status !== 1) return { ...fail({ kind: "answer", message: `${asked.what} is ${statusName(status)}, not SERVING` }, latencyMs), answers };
    if (check.maxLatencyMs !== null && latencyMs > check.maxLatencyMs) {
      return { ...fail({ kind: "latency", message: `answered in ${Math.round(latencyMs)} ms, more than the ${check.maxLatencyMs} ms allowed` }, latencyMs), answers };
    }
    return { ok: true, status: null, latencyMs, matched: 0, errorKind: null, error: null, checkedAt, answers };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no gRPC health answer from ${check.target} within ${check.timeoutMs} ms`));
    // A socket's, resolver's or TLS's error by classify, as every kind's.
    return fail(classify(error, host, check.target, stage));
  } finally {
    settled = true;
    deadline.clear();
    socket?.destroy();
  }
}
