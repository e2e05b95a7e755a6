/**
 * The check controller: runs one HTTP check with undici and returns a result value.
 *
 * Each exchange opens a fresh connection (and a fresh TLS handshake) and closes it after, so that a check
 * measures what a new visitor meets (DNS, connect, TLS, first byte, body) and a stale keep-alive socket can
 * never hide an outage. One deadline, `timeoutMs`, covers the whole exchange: every redirect and the body.
 */
import { pipeline } from "node:stream/promises";
import { TLSSocket } from "node:tls";
import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { buildConnector, Client, type Dispatcher } from "undici";
import { systemClock, type Clock } from "../clock.ts";
import type { HttpCheck, Outcome } from "../model.ts";
import { version } from "../version.ts";
import { evaluate } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import { guardHeads, headLimits } from "./head-guard.ts";

export interface ControllerOptions {
  /** Bodies beyond this many bytes, before or after decompression, fail the check (errorKind size). Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Redirects followed before the check fails (errorKind redirect). Default 10. */
  readonly maxRedirects?: number;
  /** A redirect's location longer than this fails the check (errorKind redirect). Default 8192 characters. */
  readonly maxRedirectUrl?: number;
  /** For `checkedAt` and certificate lifetimes (the wall clock) and the latency (the monotonic one). Default the system's. */
  readonly clock?: Clock;
  /** Aborts the check (the daemon is stopping); the result then reports a timeout and should be dropped. */
  readonly signal?: AbortSignal;
  /** Sent unless the check's headers set one. Default `healthd/<version>`. */
  readonly userAgent?: string;
}

/** What the controller needs of a check (the schedule and notification settings are not its business). */
export type CheckRequest = Pick<
  HttpCheck,
  "url" | "method" | "headers" | "body" | "timeoutMs" | "followRedirects" | "verifyTls" | "expect"
>;

type Stage = "connecting" | "waiting for the response" | "reading the body";

export async function runCheck(check: CheckRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const maxRedirects = options.maxRedirects ?? 10;
  const maxRedirectUrl = options.maxRedirectUrl ?? 8192;
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  // The deadline, or the daemon stopping, ends the exchange going on by closing its connection: the request,
  // the body and any pipeline fail with it. (Not an AbortController per check: making its signal and undici's
  // listener on it cost several per cent of the daemon's main thread at everyday loads, profiled.)
  let ended = false;
  let exchanging: Client | undefined;
  const end = () => {
    ended = true;
    void exchanging?.destroy(finished);
  };
  // Each hop of a redirect chain registers its connection here; once the check has ended, none starts.
  const exchangeOn = (client: Client) => {
    if (ended) throw new CheckFailure("timeout", "the check ended between two hops"); // reported as the timeout below
    exchanging = client;
  };
  const timer = setTimeout(end, check.timeoutMs);
  options.signal?.addEventListener("abort", end, { once: true });
  const elapsed = () => clock.monotonic() - started;

  let url = new URL(check.url);
  let method: string = check.method;
  let body = check.body;
  const visited = [url.href];
  let stage: Stage = "connecting";
  try {
    for (;;) {
      const exchange = await send(url, method, headersFor(check, options.userAgent), body, check, exchangeOn, (s) => (stage = s));
      const { statusCode, headers } = exchange.response;
      const location = headers.location;
      if (check.followRedirects && isRedirect(statusCode) && typeof location === "string") {
        // The redirect's own body is not wanted; closing the connection discards it.
        exchange.response.body.on("error", () => {});
        await exchange.close();
        if (location.length > maxRedirectUrl) {
          throw new CheckFailure("redirect", `redirect to a location longer than ${maxRedirectUrl} characters (${short(location)})`, statusCode);
        }
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new CheckFailure("redirect", `redirect to an invalid location ${JSON.stringify(short(location))}`, statusCode);
        }
        if (next.protocol !== "http:" && next.protocol !== "https:") {
          throw new CheckFailure("redirect", `redirect to ${next.protocol} URL ${short(next.href)}, which is not HTTP`, statusCode);
        }
        if (visited.includes(next.href)) {
          throw new CheckFailure("redirect", `redirect loop: ${[...visited, next.href].map(short).join(" -> ")}`, statusCode);
        }
        if (visited.length > maxRedirects) {
          throw new CheckFailure("redirect", `more than ${maxRedirects} redirects (last to ${short(next.href)})`, statusCode);
        }
        visited.push(next.href);
        // As browsers do: 303 always, and 301/302 after a POST, continue as a GET without the body.
        if (statusCode === 303 || ((statusCode === 301 || statusCode === 302) && method === "POST")) {
          method = method === "HEAD" ? "HEAD" : "GET";
          body = null;
        }
        url = next;
        stage = "connecting";
        continue;
      }
      stage = "reading the body";
      let bytes: Buffer;
      try {
        bytes = await readBody(exchange.response.body, headers["content-encoding"], maxBody, statusCode);
      } finally {
        await exchange.close();
      }
      const latencyMs = round(elapsed());
      const certValidTo = exchange.certValidTo();
      const verdict = evaluate(check.expect, {
        status: statusCode,
        headers: flattenHeaders(headers),
        body: new TextDecoder("utf-8").decode(bytes),
        latencyMs,
        certValidTo,
        checkedAt,
      });
      const cert = certValidTo === null ? {} : { certExpiresAt: certValidTo };
      return verdict.ok
        ? { ok: true, status: statusCode, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, ...cert }
        : { ok: false, status: statusCode, latencyMs, matched: null, errorKind: verdict.errorKind, error: printable(verdict.error), checkedAt, ...cert };
    }
  } catch (error) {
    const failure = ended
      ? new CheckFailure("timeout", `no complete answer within ${check.timeoutMs} ms (timed out ${stage})`)
      : classifyHttp(error, url, stage);
    return {
      ok: false,
      status: failure.status,
      latencyMs: round(elapsed()),
      matched: null,
      errorKind: failure.kind,
      error: printable(failure.message),
      checkedAt,
      ...(failure.shortage ? { shortage: failure.shortage } : {}),
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", end);
  }
}

/**
 * Handed to undici when a check's connection is closed. Without it undici makes a new ClientDestroyedError,
 * stack trace and all, for every check: about a tenth of the daemon's CPU at 1,000 checks/s.
 */
const finished = Object.freeze(new Error("healthd closed the connection: the check is over"));

interface Exchange {
  readonly response: Dispatcher.ResponseData;
  /** When the server's certificate expires (Unix ms), or null over plain HTTP. */
  certValidTo(): number | null;
  close(): Promise<void>;
}

async function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  check: CheckRequest,
  onClient: (client: Client) => void,
  onStage: (stage: Stage) => void,
): Promise<Exchange> {
  let certValidTo: number | null = null;
  // No TLS session reuse: each check pays the full handshake, as a new visitor does.
  const connect = buildConnector({ rejectUnauthorized: check.verifyTls, timeout: check.timeoutMs, maxCachedSessions: 0 });
  const client = new Client(url.origin, {
    connect: (opts, callback) =>
      connect(opts, (...args) => {
        const socket = args[1];
        if (socket instanceof TLSSocket) {
          // OpenSSL prints "Bad time value" for a date it cannot read: no expiry then, rather than NaN, which
          // PostgreSQL's bigint refuses.
          const validTo = Date.parse(socket.getPeerCertificate().valid_to ?? "");
          certValidTo = Number.isFinite(validTo) ? validTo : null;
        }
        if (socket) {
          guardHeads(socket);
          onStage("waiting for the response");
        }
        callback(...args);
      }),
    headersTimeout: check.timeoutMs,
    bodyTimeout: check.timeoutMs,
    // The connection is never reused (the check destroys it), so undici need not allow for the server closing
    // it: by default a Keep-Alive timeout under 2 s makes undici end the socket with an InformationalError
    // whose stack Node formats, about 6 % of the daemon's CPU at 50 checks/s (profiled).
    keepAliveTimeoutThreshold: 0,
    // The head guard cuts a head at its own bounds first; undici's limit only backs it up.
    maxHeaderSize: headLimits.maxBytes + 1024,
  });
  try {
    onClient(client);
    const response = await client.request({ path: url.pathname + url.search, method, headers, body: body ?? undefined });
    return { response, certValidTo: () => certValidTo, close: () => client.destroy(finished) };
  } catch (error) {
    await client.destroy(finished);
    throw error;
  }
}

function headersFor(check: CheckRequest, userAgent = `healthd/${version}`): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(check.headers)) headers[name.toLowerCase()] = value;
  headers["user-agent"] ??= userAgent;
  headers["accept-encoding"] ??= "gzip, deflate, br";
  return headers;
}

const isRedirect = (status: number) => status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/** Read at most `max` bytes of body, decompressing gzip, deflate and br under the same bound. */
async function readBody(
  stream: Dispatcher.ResponseData["body"],
  encoding: string | string[] | undefined,
  max: number,
  status: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge: CheckFailure | undefined;
  const decoder = decoderFor(typeof encoding === "string" ? encoding.trim().toLowerCase() : "");
  const collect = async function (source: AsyncIterable<unknown>) {
    for await (const data of source) {
      const chunk = data as Buffer;
      size += chunk.length;
      if (size > max) {
        const what = decoder ? "decompressed body" : "body";
        throw (tooLarge = new CheckFailure("size", `${what} is larger than ${max} bytes`, status));
      }
      chunks.push(chunk);
    }
  };
  try {
    // pipeline() aborts an AbortController of its own when it finishes (a DOMException per check); a plain
    // body needs no pipeline, only reading.
    if (decoder) await pipeline(stream, decoder, collect);
    else await collect(stream);
  } catch (error) {
    // Tearing the pipeline down may surface as the streams' AbortError rather than our own.
    if (tooLarge) throw tooLarge;
    if (decoder && (error as NodeJS.ErrnoException).code?.startsWith("Z_")) {
      throw new CheckFailure("body", `the ${String(encoding)} body could not be decompressed: ${(error as Error).message}`, status);
    }
    throw error;
  }
  return Buffer.concat(chunks);
}

function decoderFor(encoding: string): Transform | undefined {
  if (encoding === "gzip" || encoding === "x-gzip") return createGunzip();
  if (encoding === "deflate") return createInflate();
  if (encoding === "br") return createBrotliDecompress();
  return undefined;
}

function flattenHeaders(headers: Dispatcher.ResponseData["headers"]): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

/** Turn what undici or the socket threw into an error kind and a sentence a sysadmin can act on. */
function classifyHttp(error: unknown, url: URL, stage: Stage): CheckFailure {
  const where = `${url.hostname}:${url.port || (url.protocol === "https:" ? 443 : 80)}`;
  return classify(error, url.hostname, where, stage, ({ code = "", name, message }) => {
    if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") {
      return new CheckFailure("timeout", `timed out ${stage} (${code})`);
    }
    if (code === "UND_ERR_SOCKET" || code === "UND_ERR_CLOSED") {
      return new CheckFailure("connect", `connection to ${where} was closed by the server while ${stage}`);
    }
    if (code === "HEALTHD_HEAD_TOO_LARGE" || code === "UND_ERR_HEADERS_OVERFLOW") {
      return new CheckFailure("size", `${where} answered with too large a head: ${message}`);
    }
    if (code.startsWith("HPE_") || name === "HTTPParserError" || code === "UND_ERR_INFO") {
      return new CheckFailure("connect", `${where} sent an invalid HTTP response: ${message}`);
    }
    return undefined;
  });
}

/** A URL or location as an error message quotes it: a hostile site's 8 KiB locations are not stored whole. */
const short = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text);
