/**
 * How every kind of active check fails on the way to its target: an error kind and a sentence a sysadmin can
 * act on, from what the socket, the resolver or TLS threw. Shared by the http, tcp, udp, tls, dns, websocket, grpc and database controllers.
 */
import type { ErrorKind } from "../domain/model.ts";

/** A failure with its kind, thrown inside a controller and turned into a result at its edge. */
export class CheckFailure extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly status: number | null = null,
    readonly shortage?: string,
  ) {
    super(message);
  }
}

export type Failure = Pick<CheckFailure, "kind" | "message" | "status" | "shortage">;

/** Errors that are the daemon's own shortage, not the target's fault. */
const shortages = new Set(["EMFILE", "ENFILE", "ENOMEM", "ENOBUFS"]);

const tlsCodes = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "HOSTNAME_MISMATCH",
  "EPROTO",
]);

interface RootCause {
  readonly code?: string;
  readonly message: string;
}

/**
 * The failure of reaching `where` (host:port) while `stage`, from what the socket, the resolver or TLS threw.
 */
export function classify(error: unknown, host: string, where: string, stage: string): CheckFailure {
  if (error instanceof CheckFailure) return error;
  const root = rootCause(error);
  const code = root.code ?? "";
  if (shortages.has(code)) {
    return new CheckFailure("internal", `the daemon could not make the check: ${code} (${root.message}); raise its limits (LimitNOFILE=, ulimit -n) or lower --max-in-flight`, null, code);
  }
  if (["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA"].includes(code)) {
    return new CheckFailure("dns", `could not resolve ${host} (${code})`);
  }
  if (code === "ECONNREFUSED") return new CheckFailure("connect", `connection refused by ${where}`);
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return new CheckFailure("connect", `${where} is unreachable (${code})`);
  if (tlsCodes.has(code) || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || /\bSSL\b|\bTLS\b/.test(root.message)) {
    // OpenSSL's text carries its own location ("...:SSL routines:fn:reason:file:line"); keep the reason.
    const reason = /SSL routines:[^:]*:([^:]+):/.exec(root.message)?.[1] ?? root.message;
    return new CheckFailure("tls", `TLS with ${where} failed: ${reason} (${code || "TLS"})`);
  }
  if (code === "ECONNRESET" || code === "EPIPE") return new CheckFailure("connect", `connection to ${where} was closed by the server while ${stage}`);
  return new CheckFailure("internal", `the check failed unexpectedly while ${stage}: ${root.message || String(error)}`);
}

interface Cause {
  code?: string;
  message?: string;
  cause?: unknown;
  errors?: unknown[];
}

function rootCause(error: unknown): RootCause {
  let current = error as Cause | undefined;
  // Happy-eyeballs connects throw an AggregateError; a wrapped error carries the socket's in `cause`.
  for (let depth = 0; current && depth < 5; depth++) {
    if (current.code) return { code: current.code, message: current.message ?? "" };
    current = (current.errors?.[0] ?? current.cause) as Cause | undefined;
  }
  const e = error as Cause | undefined;
  return { message: e?.message ?? String(error) };
}

export const round = (ms: number) => Math.round(ms * 10) / 10;

/**
 * An error as it is stored, logged and sent. What a target answered may be quoted in it (V8 quotes a body it
 * could not parse as JSON, and errors quote what they met), and a control character there would break a log
 * line or a notification, and fail a PostgreSQL batch for good (its text refuses NUL): each is written out
 * as \uXXXX.
 */
export const printable = (text: string) => text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
