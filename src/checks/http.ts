/**
 * The check controller: runs one HTTP check and returns a result value.
 *
 * Each exchange opens a fresh connection (and a fresh TLS handshake) and closes it after, so that a check
 * measures what a new visitor meets (DNS, connect, TLS, first byte, body) and a stale keep-alive socket can
 * never hide an outage. One deadline, `timeoutMs`, covers the whole exchange: every redirect and the body.
 */
import type { Socket } from "node:net";
import type { Transform } from "node:stream";
import type { TLSSocket } from "node:tls";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { systemClock, type Clock } from "../platform/clock.ts";
import type { HttpCheck, Outcome } from "../domain/model.ts";
import { version } from "../platform/version.ts";
import { AnswerError, AnswerReader, type AnswerEvents, type Head } from "./answer.ts";
import { certExpiry, connect } from "./connect.ts";
import { evaluate, type Observation } from "./expect.ts";
import { judged } from "./matching.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import { onStop } from "./stopping.ts";

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
  /** Told what the last hop answered, before it is judged: a check's steps extract their values from it. */
  readonly observe?: (answer: Observation) => void;
  /** Where a database check's `${NAME}` password is read from, when it runs. Default process.env. */
  readonly env?: NodeJS.ProcessEnv;
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
  // the body and any decompression fail with it. (Not an AbortController per check: making its signal and a
  // listener on it cost several per cent of the daemon's main thread at everyday loads, profiled.)
  let ended = false;
  let exchanging: Socket | undefined;
  const end = () => {
    ended = true;
    exchanging?.destroy();
  };
  // Each hop of a redirect chain opens its connection here; once the check has ended, none starts.
  const open = (connect: () => Socket) => {
    if (ended) throw new CheckFailure("timeout", "the check ended between two hops"); // reported as the timeout below
    return (exchanging = connect());
  };
  const timer = clock.setTimeout(end, check.timeoutMs);
  const forget = onStop(options.signal, end);
  const elapsed = () => clock.monotonic() - started;

  let url = new URL(check.url);
  let method: string = check.method;
  let body = check.body;
  const visited = [url.href];
  let stage: Stage = "connecting";
  const setStage = (s: Stage) => (stage = s);
  // A redirect the check follows is answered without its body: closing the connection discards it.
  const follows = (head: Head) => check.followRedirects && isRedirect(head.status) && head.location !== undefined;
  const hooks: Hooks = { open, onStage: setStage, follows, maxBody };
  try {
    for (;;) {
      const answer = await send(url, method, headersFor(check, options.userAgent), body, check, hooks);
      if (answer.body === null && answer.location !== undefined) {
        url = redirectTarget(answer.location, answer.status, url, visited, maxRedirects, maxRedirectUrl);
        visited.push(url.href);
        // As browsers do: 303 always, and 301/302 after a POST, continue as a GET without the body.
        if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === "POST")) {
          method = method === "HEAD" ? "HEAD" : "GET";
          body = null;
        }
        stage = "connecting";
        continue;
      }
      // Awaited here, so that a pattern worker that stopped fails this check through the catch below.
      return await outcomeOf(check, answer, round(elapsed()), checkedAt, options.observe);
    }
  } catch (error) {
    const failure = ended
      ? new CheckFailure("timeout", `no complete answer within ${check.timeoutMs} ms (timed out ${stage})`)
      : classifyHttp(error, url, stage);
    return failed(failure, round(elapsed()), checkedAt);
  } finally {
    clock.clearTimeout(timer);
    forget();
  }
}

// runCheck only sequences the hops: what it decides is in the small functions below. V8 compiles an async
// function whole, every await in it, and runCheck is among the largest compiles of a daemon's first minutes
// (docs/benchmarks.md).

/** Where a redirect the check follows leads, or the CheckFailure that ends the check there. */
function redirectTarget(location: string, status: number, from: URL, visited: readonly string[], maxRedirects: number, maxRedirectUrl: number): URL {
  if (location.length > maxRedirectUrl) {
    throw new CheckFailure("redirect", `redirect to a location longer than ${maxRedirectUrl} characters (${short(location)})`, status);
  }
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new CheckFailure("redirect", `redirect to an invalid location ${JSON.stringify(short(location))}`, status);
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    throw new CheckFailure("redirect", `redirect to ${next.protocol} URL ${short(next.href)}, which is not HTTP`, status);
  }
  if (visited.includes(next.href)) {
    throw new CheckFailure("redirect", `redirect loop: ${[...visited, next.href].map(short).join(" -> ")}`, status);
  }
  if (visited.length > maxRedirects) {
    throw new CheckFailure("redirect", `more than ${maxRedirects} redirects (last to ${short(next.href)})`, status);
  }
  return next;
}

/** The outcome of the last hop's answer, judged by the check's expectations. */
async function outcomeOf(check: CheckRequest, answer: Answer, latencyMs: number, checkedAt: number, observe?: (answer: Observation) => void): Promise<Outcome> {
  const { status, certValidTo } = answer;
  const observed = { status, headers: answer.headers, body: utf8.decode(answer.body!), latencyMs, certValidTo, checkedAt };
  observe?.(observed);
  const verdict = await judged((matches) => evaluate(check.expect, observed, matches));
  const cert = certValidTo === null ? {} : { certExpiresAt: certValidTo };
  return verdict.ok
    ? { ok: true, status, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, ...cert }
    : { ok: false, status, latencyMs, matched: null, errorKind: verdict.errorKind, error: printable(verdict.error), checkedAt, ...cert };
}

function failed(failure: CheckFailure, latencyMs: number, checkedAt: number): Outcome {
  return {
    ok: false,
    status: failure.status,
    latencyMs,
    matched: null,
    errorKind: failure.kind,
    error: printable(failure.message),
    checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  };
}

const utf8 = new TextDecoder("utf-8");

/** One hop of a check: the answer's status and head, and its body unless it is a redirect the check follows. */
interface Answer extends Head {
  /** The body, decompressed; null for a redirect the check follows (not read). */
  readonly body: Buffer | null;
  /** When the server's certificate expires (Unix ms), or null over plain HTTP. */
  readonly certValidTo: number | null;
}

interface Hooks {
  /** Opens each hop's connection, so that the check's deadline can close it (and none opens after it). */
  readonly open: (connect: () => Socket) => Socket;
  readonly onStage: (stage: Stage) => void;
  /** Whether an answer is a redirect the check follows, whose body is not wanted. */
  readonly follows: (head: Head) => boolean;
  readonly maxBody: number;
}

/**
 * One hop: a fresh connection (TLS without session reuse, so each check pays the full handshake, as a new
 * visitor does), one request, the answer read by AnswerReader, the connection closed.
 */
function send(url: URL, method: string, headers: Record<string, string>, body: string | null, check: CheckRequest, hooks: Hooks): Promise<Answer> {
  const secure = url.protocol === "https:";
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = portOf(url);
  let onData = (_chunk: Buffer): void => {}; // the reader's, once it exists
  const socket = hooks.open(() => connect({ host, port, tls: secure, verifyTls: check.verifyTls }, () => onData));
  return new Promise<Answer>((resolve, reject) => {
    let certValidTo: number | null = null;
    // The fields added go before the spread: `{ ...head, body }` would make a hidden class for every answer in
    // node 20's V8, and each code that reads answers megamorphic (docs/benchmarks.md, "Hidden classes").
    const answer = new BodyReader(hooks, socket, (head, read) => resolve({ body: read, certValidTo, ...head }), reject);
    const reader = new AnswerReader(answer, method === "HEAD");
    const fail = (error: unknown) => {
      reader.stop();
      answer.fail(error);
    };
    onData = (chunk) => {
      try {
        reader.push(chunk);
      } catch (error) {
        fail(error);
      }
    };
    socket.once(secure ? "secureConnect" : "connect", () => {
      if (secure) certValidTo = certExpiry(socket as TLSSocket);
      hooks.onStage("waiting for the response");
      socket.write(request(url, method, headers, body));
    });
    socket.on("end", () => {
      try {
        reader.close();
      } catch (error) {
        fail(error);
      }
    });
    socket.on("error", fail);
    // Closed by the deadline or by the server before the answer was read. (Once it has been, a compressed
    // body may still be decompressing: that ends by itself, within the body's bounds.)
    socket.on("close", () => {
      if (!reader.complete) fail(new AnswerError("HEALTHD_CLOSED_EARLY", "the connection closed before the answer was complete"));
    });
  }).finally(() => socket.destroy());
}

/** The request's bytes: its head in Latin-1 (the most a field value may hold), its body in UTF-8. */
function request(url: URL, method: string, headers: Record<string, string>, body: string | null): Buffer {
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\n`;
  if (headers.host === undefined) head += `host: ${url.host}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  const payload = body === null ? null : Buffer.from(body, "utf8");
  // A method that carries a body says how long it is, even when it is empty (RFC 9110 8.6).
  if (payload !== null || method === "POST" || method === "PUT" || method === "PATCH") head += `content-length: ${payload?.length ?? 0}\r\n`;
  head += "connection: close\r\n\r\n";
  return payload === null ? Buffer.from(head, "latin1") : Buffer.concat([Buffer.from(head, "latin1"), payload]);
}

/**
 * Takes one answer from AnswerReader: at most `maxBody` bytes before and after decompressing gzip, deflate or
 * br. Settles the hop once, with the answer or the first failure.
 */
class BodyReader implements AnswerEvents {
  #head: Head | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  #received = 0;
  #decoder: Transform | undefined;
  #settled = false;
  readonly #hooks: Hooks;
  readonly #socket: Socket;
  readonly #resolve: (head: Head, body: Buffer | null) => void;
  readonly #reject: (error: unknown) => void;

  constructor(hooks: Hooks, socket: Socket, resolve: (head: Head, body: Buffer | null) => void, reject: (error: unknown) => void) {
    this.#hooks = hooks;
    this.#socket = socket;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  head(head: Head): boolean {
    this.#head = head;
    if (this.#hooks.follows(head)) {
      this.#settle(null);
      return false;
    }
    this.#hooks.onStage("reading the body");
    const encoding = head.headers["content-encoding"];
    const decoder = decoderFor(encoding?.trim().toLowerCase() ?? "");
    if (decoder) {
      this.#decoder = decoder;
      decoder.on("data", (chunk: Buffer) => this.#take(chunk));
      decoder.on("drain", () => this.#socket.resume());
      decoder.on("end", () => this.#settle(Buffer.concat(this.#chunks)));
      decoder.on("error", (error: NodeJS.ErrnoException) => {
        this.fail(
          error.code?.startsWith("Z_")
            ? new CheckFailure("body", `the ${String(encoding)} body could not be decompressed: ${error.message}`, head.status)
            : error,
        );
      });
    }
    return true;
  }

  data(view: Buffer): void {
    if (this.#settled) return;
    const chunk = Buffer.from(view); // the view is of the shared read buffer, which the next read overwrites
    if (!this.#decoder) return this.#take(chunk);
    // A compressed body is bounded too: gzip's empty blocks can make one endless that decompresses to nothing.
    this.#received += chunk.length;
    if (this.#received > this.#hooks.maxBody) this.fail(this.#tooLarge("body"));
    else if (!this.#decoder.write(chunk)) this.#socket.pause();
  }

  end(): void {
    if (this.#decoder) this.#decoder.end();
    else this.#settle(Buffer.concat(this.#chunks));
  }

  fail(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#decoder?.destroy();
    this.#reject(error);
  }

  #take(chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size > this.#hooks.maxBody) this.fail(this.#tooLarge(this.#decoder ? "decompressed body" : "body"));
    else this.#chunks.push(chunk);
  }

  #tooLarge(what: string): CheckFailure {
    return new CheckFailure("size", `${what} is larger than ${this.#hooks.maxBody} bytes`, this.#head?.status ?? null);
  }

  #settle(body: Buffer | null): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(this.#head!, body);
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

/** The port a URL names, or its scheme's. */
const portOf = (url: URL) => (url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port));

/** Turn what the reader, the socket or TLS threw into an error kind and a sentence a sysadmin can act on. */
function classifyHttp(error: unknown, url: URL, stage: Stage): CheckFailure {
  const where = `${url.hostname}:${portOf(url)}`;
  if (!(error instanceof AnswerError)) return classify(error, url.hostname, where, stage);
  switch (error.code) {
    case "HEALTHD_HEAD_TOO_LARGE":
      return new CheckFailure("size", `${where} answered with too large a head: ${error.message}`);
    case "HEALTHD_INVALID_ANSWER":
      return new CheckFailure("connect", `${where} sent an invalid HTTP response: ${error.message}`);
    case "HEALTHD_CLOSED_EARLY":
      return new CheckFailure("connect", `connection to ${where} was closed by the server while ${stage}`);
  }
}

/** A URL or location as an error message quotes it: a hostile site's 8 KiB locations are not stored whole. */
const short = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text);
