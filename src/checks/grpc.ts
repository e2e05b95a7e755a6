/**
 * A gRPC check: grpc.health.v1.Health/Check asked of the target over a fresh channel (its own subchannel, so a
 * fresh connection), closed after the call. SERVING passes; another status fails (answer), and so does a gRPC
 * error, by what it says (timeout, connect, dns, tls, protocol, status). One deadline, `timeoutMs`, covers the
 * connection and the call. @grpc/grpc-js is the client (HTTP/2, its framing and gRPC's status trailers); the two
 * messages are written by hand (grpc-health.ts). It is loaded when the first such check runs.
 *
 * Its cost: 1.1 to 1.5 ms of CPU a check against http's 0.26 (bench:kinds, 2026-12-06, load 8 to 10): about
 * half is grpc-js's channel stack made per check (resolver, balancers, subchannel, call layers), the rest the
 * HTTP/2 session (a bare node:http2 call costs 0.88 ms where grpc-js costs 1.8, client only).
 */
import type * as Grpc from "@grpc/grpc-js";
import { systemClock } from "../platform/clock.ts";
import { version } from "../platform/version.ts";
import type { GrpcCheck, Outcome } from "../domain/model.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import { decodeResponse, encodeRequest, healthCheckMethod, statusName } from "./grpc-health.ts";
import type { ControllerOptions } from "./http.ts";

export type GrpcRequest = Pick<GrpcCheck, "target" | "tls" | "verifyTls" | "service" | "maxLatencyMs" | "timeoutMs">;

/** A health answer is two bytes; anything much larger is not one, and is not read. */
const maxAnswerBytes = 4096;

let library: Promise<typeof Grpc> | undefined;
const loadLibrary = () => (library ??= import("@grpc/grpc-js"));

/** gRPC's status codes by number, as its documents name them. */
const codeNames = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];

export async function runGrpcCheck(check: GrpcRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  // From when the library is loaded: the first check of a process would count its ~100 ms load as latency.
  let started = clock.monotonic();
  const asked = check.service === "" ? "the server" : `service ${JSON.stringify(check.service)}`;
  let client: Grpc.Client | undefined;
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">, latencyMs = round(clock.monotonic() - started)): Outcome => ({
    ok: false, status: null, latencyMs, matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const grpc = await deadline.until(loadLibrary());
    started = clock.monotonic();
    const credentials = check.tls
      ? grpc.credentials.createSsl(null, null, null, check.verifyTls ? {} : { rejectUnauthorized: false, checkServerIdentity: () => undefined })
      : grpc.credentials.createInsecure();
    client = new grpc.Client(check.target, credentials, {
      "grpc.use_local_subchannel_pool": 1, // a connection of its own, closed with it
      "grpc.enable_retries": 0,
      "grpc.enable_channelz": 0, // channelz keeps a record of every channel made: a cost per check, for nothing
      "grpc.service_config_disable_resolution": 1, // no DNS TXT lookup for a service config
      "grpc.enable_http_proxy": 0, // as every other kind: straight to the target
      "grpc.max_receive_message_length": maxAnswerBytes,
      "grpc.primary_user_agent": options.userAgent ?? `healthd/${version}`,
    });
    const made = client;
    const call = new Promise<number>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      made.makeUnaryRequest(healthCheckMethod, encodeRequest, decodeResponse, { service: check.service }, metadata, { deadline: clock.now() + check.timeoutMs }, (error, answer) =>
        error ? reject(error) : resolve(answer!.status),
      );
    });
    const status = await deadline.until(call);
    const latencyMs = round(clock.monotonic() - started);
    const answers = [statusName(status)];
    if (status !== 1) return { ...fail({ kind: "answer", message: `${asked} is ${statusName(status)}, not SERVING` }, latencyMs), answers };
    if (check.maxLatencyMs !== null && latencyMs > check.maxLatencyMs) {
      return { ...fail({ kind: "latency", message: `answered in ${Math.round(latencyMs)} ms, more than the ${check.maxLatencyMs} ms allowed` }, latencyMs), answers };
    }
    return { ok: true, status: null, latencyMs, matched: 0, errorKind: null, error: null, checkedAt, answers };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no gRPC health answer from ${check.target} within ${check.timeoutMs} ms`));
    return fail(failureOf(error, check, asked));
  } finally {
    deadline.clear();
    client?.close();
  }
}

/** A gRPC error as a failure: its status code and its details say which. */
function failureOf(error: unknown, check: GrpcRequest, asked: string): CheckFailure {
  const { code, details } = error as { code?: unknown; details?: unknown };
  if (typeof code !== "number" || typeof details !== "string") return classify(error, check.target, check.target, "calling Health/Check");
  // grpc-js dates its last error and adds an empty resolution note: neither says more about the target.
  const said = details.replace(/ \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/g, "").replace(/\.? Resolution note: ?$/, "");
  const named = `${codeNames[code] ?? `code ${code}`}: ${said}`;
  const at = check.target;
  switch (codeNames[code]) {
    case "DEADLINE_EXCEEDED":
      return new CheckFailure("timeout", `no gRPC health answer from ${at} within ${check.timeoutMs} ms (${named})`);
    case "UNAVAILABLE":
      if (/ECONNREFUSED/.test(details)) return new CheckFailure("connect", `connection refused by ${at} (${named})`);
      if (/Name resolution failed|ENOTFOUND|EAI_AGAIN/.test(details)) return new CheckFailure("dns", `could not resolve the host of ${at} (${named})`);
      if (/SSL|TLS|certificate|self[- ]signed|altnames/i.test(details)) {
        // OpenSSL's text carries its own location ("...:SSL routines:fn:reason:file:line"); keep the reason.
        const reason = /SSL routines:[^:]*:([^:]+):/.exec(details)?.[1];
        return new CheckFailure("tls", reason ? `TLS with ${at} failed: ${reason} (UNAVAILABLE)` : `TLS with ${at} failed (${named})`);
      }
      if (/Protocol error|HTTP\/2|http2|Bad Request|PROTOCOL/i.test(details)) return new CheckFailure("protocol", `${at} does not speak gRPC over HTTP/2 (${named})`);
      return new CheckFailure("connect", `${at} could not be reached for a call (${named})`);
    case "NOT_FOUND":
      return new CheckFailure("answer", `${at} knows no ${asked} (${named})`);
    case "UNIMPLEMENTED":
      return new CheckFailure("status", `${at} has no grpc.health.v1.Health service (${named}); register the standard health service, or check another way`);
    case "RESOURCE_EXHAUSTED":
      if (/larger than max/i.test(details)) return new CheckFailure("size", `${at} answered with more than ${maxAnswerBytes} bytes, which is no health answer (${named})`);
      return new CheckFailure("status", `${at} answered ${named}`);
    case "INTERNAL":
      if (/parse|deserializ|Response message/i.test(details)) return new CheckFailure("protocol", `${at} answered Health/Check with no HealthCheckResponse (${named})`);
      return new CheckFailure("status", `${at} answered ${named}`);
    default:
      // An HTTP/2 server that is not a gRPC one answers with its own status (Received HTTP status code 404...).
      if (/Received HTTP status code|grpc-status/i.test(details)) return new CheckFailure("protocol", `${at} answered in HTTP/2 but not as a gRPC server (${named})`);
      return new CheckFailure("status", `${at} answered ${named}`);
  }
}
