/**
 * The check controller: runs one HTTP check with undici and returns a result value.
 *
 * Each exchange opens a fresh connection (and a fresh TLS handshake) and closes it after, so that a check
 * measures what a new visitor meets (DNS, connect, TLS, first byte, body) and a stale keep-alive socket can
 * never hide an outage. One deadline, `timeoutMs`, covers the whole exchange: every redirect and the body.
 */
import type { IncomingHttpHeaders } from "node:http";
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
  const setStage = (s: Stage) => (stage = s);
  // A redirect the check follows is answered without its body: closing the connection discards it.
  const follows = (status: number, headers: IncomingHttpHeaders) =>
    check.followRedirects && isRedirect(status) && typeof headers.location === "string";
  const hooks: Hooks = { onClient: exchangeOn, onStage: setStage, follows, maxBody };
  try {
    for (;;) {
      const answer = await send(url, method, headersFor(check, options.userAgent), body, check, hooks);
      const { status: statusCode, headers } = answer;
      const location = headers.location;
      if (answer.body === null && typeof location === "string") {
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
      const latencyMs = round(elapsed());
      const certValidTo = answer.certValidTo;
      const verdict = evaluate(check.expect, {
        status: statusCode,
        headers: flattenHeaders(headers),
        body: utf8.decode(answer.body!),
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

const utf8 = new TextDecoder("utf-8");

/** One hop of a check: the answer's status and head, and its body unless it is a redirect the check follows. */
interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body, decompressed; null for a redirect the check follows (not read). */
  readonly body: Buffer | null;
  /** When the server's certificate expires (Unix ms), or null over plain HTTP. */
  readonly certValidTo: number | null;
}

interface Hooks {
  /** Each hop's connection is registered here, so that the check's deadline can close it. */
  readonly onClient: (client: Client) => void;
  readonly onStage: (stage: Stage) => void;
  /** Whether an answer is a redirect the check follows, whose body is not wanted. */
  readonly follows: (status: number, headers: IncomingHttpHeaders) => boolean;
  readonly maxBody: number;
}

/**
 * The connectors, one per TLS setting (a connector is a function with no state of its own once sessions are
 * not cached; making one per check cost a FinalizationRegistry each). No TLS session reuse: each check pays the
 * full handshake, as a new visitor does.
 *
 * No timeouts of undici's, here or in the Client: the check's deadline (runCheck) already ends the whole
 * exchange, and undici's timers would only keep each finished check reachable: they are "fast timers", swept
 * every half second, each holding a WeakRef to its socket or parser, which a scavenge does not clear. At 10,000
 * services at 10 s, --trace-gc-nvp counted 7.8 and 8.0 kB promoted a check with them, 6.9 and 7.1 without.
 */
const connectors = new Map<boolean, buildConnector.connector>();

function connectorFor(verifyTls: boolean): buildConnector.connector {
  let connect = connectors.get(verifyTls);
  if (!connect) connectors.set(verifyTls, (connect = buildConnector({ rejectUnauthorized: verifyTls, timeout: 0, maxCachedSessions: 0 })));
  return connect;
}

async function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  check: CheckRequest,
  hooks: Hooks,
): Promise<Answer> {
  let certValidTo: number | null = null;
  const connect = connectorFor(check.verifyTls);
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
          hooks.onStage("waiting for the response");
        }
        callback(...args);
      }),
    headersTimeout: 0,
    bodyTimeout: 0,
    // The connection is never reused (the check destroys it), so undici need not allow for the server closing
    // it: by default a Keep-Alive timeout under 2 s makes undici end the socket with an InformationalError
    // whose stack Node formats, about 6 % of the daemon's CPU at 50 checks/s (profiled).
    keepAliveTimeoutThreshold: 0,
    // The head guard cuts a head at its own bounds first; undici's limit only backs it up.
    maxHeaderSize: headLimits.maxBytes + 1024,
  });
  try {
    hooks.onClient(client);
    const answer = await new Promise<Omit<Answer, "certValidTo">>((resolve, reject) => {
      client.dispatch({ path: url.pathname + url.search, method, headers, body: body ?? undefined }, new Reader(hooks, resolve, reject));
    });
    return { ...answer, certValidTo };
  } finally {
    await client.destroy(finished);
  }
}

/**
 * Reads one answer as undici's parser hands it over, at most `maxBody` bytes before and after decompressing
 * gzip, deflate or br. A handler rather than `client.request()`, which wraps each body in a stream and each
 * request in an AsyncResource that a check does not need (about 5 % of a check's CPU in its first minutes).
 */
class Reader implements Dispatcher.DispatchHandler {
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;
  #received = 0;
  #decoder: Transform | undefined;
  #settled = false;
  readonly #hooks: Hooks;
  readonly #resolve: (answer: Omit<Answer, "certValidTo">) => void;
  readonly #reject: (error: unknown) => void;

  constructor(hooks: Hooks, resolve: (answer: Omit<Answer, "certValidTo">) => void, reject: (error: unknown) => void) {
    this.#hooks = hooks;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  // undici takes a handler for its current interface by this method; there is nothing to do at the start.
  onRequestStart(): void {}

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    if (status < 200) return; // an interim answer: the final one follows
    this.#status = status;
    this.#headers = headers;
    if (this.#hooks.follows(status, headers)) {
      this.#settle(null);
      controller.abort(finished);
      return;
    }
    this.#hooks.onStage("reading the body");
    const encoding = headers["content-encoding"];
    const decoder = decoderFor(typeof encoding === "string" ? encoding.trim().toLowerCase() : "");
    if (!decoder) return;
    this.#decoder = decoder;
    decoder.on("data", (chunk: Buffer) => this.#take(chunk, controller));
    decoder.on("drain", () => controller.resume());
    decoder.on("end", () => this.#settle(Buffer.concat(this.#chunks)));
    decoder.on("error", (error: NodeJS.ErrnoException) => {
      this.#fail(
        error.code?.startsWith("Z_")
          ? new CheckFailure("body", `the ${String(encoding)} body could not be decompressed: ${error.message}`, status)
          : error,
        controller,
      );
    });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    if (!this.#decoder) return this.#take(chunk, controller);
    // A compressed body is bounded too: gzip's empty blocks can make one endless that decompresses to nothing.
    this.#received += chunk.length;
    if (this.#received > this.#hooks.maxBody) this.#fail(this.#tooLarge("body"), controller);
    else if (!this.#decoder.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    if (this.#decoder) this.#decoder.end();
    else this.#settle(Buffer.concat(this.#chunks));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#fail(error);
  }

  #take(chunk: Buffer, controller: Dispatcher.DispatchController): void {
    this.#size += chunk.length;
    if (this.#size > this.#hooks.maxBody) this.#fail(this.#tooLarge(this.#decoder ? "decompressed body" : "body"), controller);
    else this.#chunks.push(chunk);
  }

  #tooLarge(what: string): CheckFailure {
    return new CheckFailure("size", `${what} is larger than ${this.#hooks.maxBody} bytes`, this.#status);
  }

  #settle(body: Buffer | null): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve({ status: this.#status, headers: this.#headers, body });
  }

  #fail(error: unknown, controller?: Dispatcher.DispatchController): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#decoder?.destroy();
    this.#reject(error);
    controller?.abort(finished);
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

function decoderFor(encoding: string): Transform | undefined {
  if (encoding === "gzip" || encoding === "x-gzip") return createGunzip();
  if (encoding === "deflate") return createInflate();
  if (encoding === "br") return createBrotliDecompress();
  return undefined;
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
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
