/**
 * A small route table over node:http: match the path, check the method, validate the query string, read a
 * body with limits, and turn whatever a handler answers or throws into a response. Each operation carries
 * its own description (summary, query, body and answers as zod schemas): the OpenAPI document is made from
 * the table, and the query schema it describes is the one the router validates with.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { promisify } from "node:util";
import { brotliCompress, constants as zlib, gzip } from "node:zlib";
import type { z } from "zod";
import type { Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import { validate, type FieldError } from "../domain/validate.ts";
import { StoreUnavailable } from "../store/errors.ts";
import type { Scope } from "../store/store.ts";
import { permitScope, permitServer, type Authenticate, type Principal } from "./access.ts";
import { parseJson } from "./json.ts";
import { drain, maxBodyBytes, readBody } from "./body.ts";
import { HttpError, invalid, problem } from "./problem.ts";

export interface Request {
  readonly method: string;
  readonly params: Readonly<Record<string, string>>;
  /** The query string as the operation's `query` schema parsed it (an empty object when it has none). */
  readonly query: unknown;
  readonly headers: IncomingMessage["headers"];
  /** The peer's address, as the socket says it (undefined once the socket is closed). */
  readonly remoteAddress: string | undefined;
  /** Whether it came over TLS. */
  readonly encrypted: boolean;
  /** The parsed JSON body; `undefined` when the request has none. Throws HttpError (400, 413, 415). */
  json(): Promise<unknown>;
  /** The body as it came, with its media type, for operations that take more than JSON; undefined when empty. */
  body(): Promise<{ readonly type: string; readonly text: string; readonly bytes: Buffer } | undefined>;
  /** Who sent it (throws HttpError 401 for a missing or unknown token); already checked unless the operation is open. */
  principal(): Promise<Principal>;
}

export interface Response {
  readonly status: number;
  readonly body?: unknown;
  /** For bodies that are not JSON (/metrics). */
  readonly text?: string;
  /** For bodies that are not text (a page's logo). */
  readonly bytes?: Buffer;
  /** A body made once and sent in many answers (a rendered page). */
  readonly shared?: SharedBody;
  readonly headers?: Readonly<Record<string, string>>;
  /** An answer that stays open (the console's Server-Sent Events): handed the response once its head is sent. */
  readonly stream?: (res: ServerResponse) => void;
}

type Encoding = "br" | "gzip";

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * Pages of a thousand services are megabytes of very repetitive text: compressed they are a few dozen
 * kilobytes (brotli at quality 1, or gzip at level 3), for ten milliseconds or more of CPU each: done on
 * libuv's threads, not on the loop, where sixteen readers' pages would hold up the checks due meanwhile.
 */
function compress(bytes: Buffer, encoding: Encoding): Promise<Buffer> {
  return encoding === "br" ? brotli(bytes, { params: { [zlib.BROTLI_PARAM_QUALITY]: 1 } }) : gzipped(bytes, { level: 3 });
}

/** A body made once and sent in many answers: it is compressed once per encoding, not once per answer. */
export class SharedBody {
  readonly bytes: Buffer;
  readonly #encoded = new Map<Encoding, Promise<Buffer>>();

  constructor(text: string) {
    this.bytes = Buffer.from(text);
  }

  /** Compressed once, however many answers wait for it meanwhile. */
  encoded(encoding: Encoding): Promise<Buffer> {
    let bytes = this.#encoded.get(encoding);
    if (!bytes) this.#encoded.set(encoding, (bytes = compress(this.bytes, encoding)));
    return bytes;
  }
}

export type Handler = (req: Request) => Response | Promise<Response>;

/** One answer of an operation, for the OpenAPI document. */
export interface Answer {
  readonly description: string;
  /** The JSON body's shape; absent for answers without one. */
  readonly schema?: z.ZodType;
  /** The media type of a body that is not JSON (and then no schema). */
  readonly contentType?: string;
}

export interface Operation {
  /** One sentence: what it does. */
  readonly summary: string;
  /** Unique across the API, camelCase. */
  readonly operationId: string;
  /** The query string; unknown or repeated parameters are 400. Absent: none are allowed. */
  readonly query?: z.ZodType;
  /** The request body the handler reads (and validates with this same schema); `types` beyond JSON. */
  readonly body?: {
    readonly schema: z.ZodType;
    readonly required: boolean;
    readonly types?: readonly string[];
    /** The largest body taken rather than refused with 413. Default maxBodyBytes (1 MiB). */
    readonly maxBytes?: number;
    /** Only this many first bytes are kept (the rest is read and dropped). Default: all of it. */
    readonly keepBytes?: number;
  };
  /** The answers by status; problem answers (4xx, 5xx) need only a description. */
  readonly responses: Readonly<Record<number, Answer>>;
  /** Answered without the token, when the daemon has one. Default false. */
  readonly open?: boolean;
  /** The scope a token needs (see access.ts); default read for GET, write for the others. */
  readonly scope?: Scope;
  /**
   * The server it reads or changes, for tokens limited to some servers: the path's `serverId` when it has one;
   * "handler": the handler checks (the server is in the body, say); "none": it shows nothing of any server's.
   * Otherwise it covers every server, and a limited token is refused.
   */
  readonly server?: "handler" | "none";
  readonly handle: Handler;
}

export interface Route {
  /** Segments; a segment starting with ':' captures a parameter. */
  readonly path: string;
  readonly methods: Readonly<Partial<Record<"GET" | "PUT" | "POST" | "PATCH" | "DELETE", Operation>>>;
}

/** Answers larger than this are compressed for clients that accept it. */
const compressAbove = 8 * 1024;

export interface ListenerOptions {
  /** Who a request is; throws HttpError (401) when it may not use the API. Absent: everyone is admin. */
  readonly authenticate?: Authenticate;
  /** What a browser asking for a page gets instead of a 401 (the sign-in page), given the path it asked for. */
  readonly signIn?: (next: string) => Response;
  /** For the deadline of a refused body's drain. */
  readonly clock: Clock;
}

const everyone: Principal = { scope: "admin", servers: null, name: "anyone" };

/** A browser asking for a page (it accepts HTML): a sign-in page serves it better than a 401 JSON. */
const wantsPage = (method: string, headers: IncomingMessage["headers"]) => (method === "GET" || method === "HEAD") && /\btext\/html\b/.test(headers.accept ?? "");

export function createListener(routes: readonly Route[], log: Logger, options: ListenerOptions) {
  const compiled = routes.map((route) => ({ route, segments: route.path.split("/").filter(Boolean) }));

  /**
   * The route of a path: the first that matches and takes `method`, else the first that matches (for its 405).
   * So `POST /services/{serverId}/ping-key` does not take a service named ping-key from GET, PUT or DELETE.
   */
  function match(pathname: string, method: string): { route: Route; params: Record<string, string> } | undefined {
    let first: { route: Route; params: Record<string, string> } | undefined;
    for (const found of matches(pathname)) {
      const methods = found.route.methods as Partial<Record<string, Operation>>;
      if (methods[method] ?? (method === "HEAD" ? methods.GET : undefined)) return found;
      first ??= found;
    }
    return first;
  }

  function* matches(pathname: string): Generator<{ route: Route; params: Record<string, string> }> {
    // An empty segment (`/services//x`) matches nothing: read as `/services/x`, it would change another server.
    const parts = pathname === "/" ? [] : pathname.split("/").slice(1);
    if (parts.at(-1) === "" && parts.length > 1) parts.pop(); // a trailing slash is allowed
    if (parts.includes("")) return;
    outer: for (const { route, segments } of compiled) {
      if (segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < segments.length; i++) {
        const segment = segments[i]!;
        let part: string;
        try {
          part = decodeURIComponent(parts[i]!);
        } catch {
          continue outer;
        }
        if (segment.startsWith(":")) params[segment.slice(1)] = part;
        else if (segment !== part) continue outer;
      }
      yield { route, params };
    }
  }

  // Requests pipelined on one connection are handled one after the other (RFC 9112 9.3.2): a GET sent behind
  // a PUT must see what the PUT wrote. Node parses the next request before the previous answer is sent.
  const queues = new WeakMap<object, Promise<void>>();
  return function listener(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const previous = queues.get(req.socket) ?? Promise.resolve();
    const handled = previous.then(() => handle(req, res)).catch((error: unknown) => log.error("request failed", { error }));
    queues.set(req.socket, handled);
    return handled;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let answer: Response;
    let changed: string | undefined;
    const method = req.method ?? "GET";
    try {
      // Split by hand: new URL() reads a request target such as "//x" as a host, and throws.
      const target = req.url ?? "/";
      const queryAt = target.indexOf("?");
      const pathname = queryAt === -1 ? target : target.slice(0, queryAt);
      const url = { pathname, searchParams: new URLSearchParams(queryAt === -1 ? "" : target.slice(queryAt + 1)) };
      const found = match(url.pathname, method);
      const methods = found?.route.methods as Partial<Record<string, Operation>> | undefined;
      const operation = methods?.[method] ?? (method === "HEAD" ? methods?.GET : undefined);
      let who: Promise<Principal> | undefined;
      const principal = () => (who ??= options.authenticate?.(req.headers) ?? Promise.resolve(everyone));
      // Everything but the open operations needs a token, unknown paths included (they say nothing then).
      if (!operation?.open) await principal();
      if (!found) {
        const why = url.pathname.includes("//") ? "; the path has an empty segment (//)" : "";
        throw new HttpError(404, `no such endpoint: ${JSON.stringify(url.pathname.slice(0, 200))}${why} (see GET /openapi.json)`);
      }
      if (!operation) {
        const allow = Object.keys(found.route.methods).join(", ");
        throw new HttpError(405, `${method} is not allowed on ${url.pathname}; use ${allow}`, undefined, { allow });
      }
      // Such a segment names nothing healthd stores (ids are plain), and PostgreSQL refuses a NUL outright.
      const control = Object.entries(found.params).find(([, value]) => /[\u0000-\u001f\u007f]/.test(value));
      if (control) {
        const [name, value] = control;
        throw new HttpError(400, `the path's ${name} ${JSON.stringify(value.slice(0, 200))} contains control characters; remove them`, [
          { path: `/${name}`, message: "contains control characters; remove them" },
        ]);
      }
      if (!operation.open) {
        const who = await principal();
        const what = `${method} ${url.pathname}`;
        permitScope(who, operation.scope ?? (method === "GET" || method === "HEAD" ? "read" : "write"), what);
        if (operation.server === undefined) permitServer(who, found.params.serverId, what);
      }
      const query = parseQuery(operation.query, url.searchParams);
      let read: Promise<{ type: string; text: string; bytes: Buffer } | undefined> | undefined;
      const body = () => (read ??= readBody(req, operation.body?.maxBytes ?? maxBodyBytes, operation.body?.keepBytes ?? Infinity));
      const changes = !operation.open && method !== "GET" && method !== "HEAD";
      answer = await operation.handle({
        method,
        params: found.params,
        query,
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
        encrypted: "encrypted" in req.socket && req.socket.encrypted === true,
        body,
        json: async () => json(await body()),
        principal,
      });
      // Who changed what (the first thing asked when a check changed and nobody knows why), said once answered.
      if (changes && answer.status < 400) changed = `${method} ${url.pathname} by ${(await principal()).name}`;
    } catch (error) {
      if (error instanceof HttpError && error.status === 401 && options.signIn && wantsPage(method, req.headers)) {
        answer = options.signIn(req.url ?? "/status");
      } else if (error instanceof HttpError) {
        answer = { status: error.status, body: error.toProblem(), headers: error.headers };
      } else if (error instanceof StoreUnavailable) {
        log.error("the database refused a request", { method, url: req.url, code: error.code, error: error.message });
        answer = {
          status: 503,
          body: problem(503, `the database cannot take this now (${error.code}); nothing was changed, try again later`),
          headers: { "retry-after": "5" },
        };
      } else {
        log.error("request failed", { method, url: req.url, error });
        answer = { status: 500, body: problem(500, "internal error; the daemon's log has the details") };
      }
    }
    await send(req, res, answer, options.clock);
    if (changed) log.info(changed, { status: answer.status });
  }
}

async function send(req: IncomingMessage, res: ServerResponse, answer: Response, clock: Clock): Promise<void> {
  const headers: Record<string, string | number> = { ...answer.headers };
  if (answer.stream) {
    if (!req.complete) req.resume();
    res.writeHead(answer.status, headers);
    res.flushHeaders();
    return answer.stream(res);
  }
  let text: string | undefined;
  if (answer.text !== undefined) {
    text = answer.text;
  } else if (answer.body !== undefined) {
    text = JSON.stringify(answer.body) + "\n";
    const isProblem = answer.status >= 400;
    headers["content-type"] = `application/${isProblem ? "problem+json" : "json"}; charset=utf-8`;
  }
  let payload: Buffer | undefined = answer.shared?.bytes ?? answer.bytes ?? (text === undefined ? undefined : Buffer.from(text));
  if (payload && payload.length > compressAbove) {
    const accepted = String(req.headers["accept-encoding"] ?? "");
    const encoding = /\bbr\b/.test(accepted) ? "br" : /\bgzip\b/.test(accepted) ? "gzip" : undefined;
    if (encoding) {
      payload = await (answer.shared?.encoded(encoding) ?? compress(payload, encoding));
      headers["content-encoding"] = encoding;
    }
    headers["vary"] = "accept-encoding";
  }
  if (payload !== undefined) headers["content-length"] = payload.length;
  const hasBody = Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
  if (!req.complete && hasBody) {
    // A body refused unread (413, 415, 404...): answer, read the rest and drop it, then close. The answer
    // (its length given) is whole before the rest is read; ending the response closes the connection.
    headers["connection"] = "close";
    res.writeHead(answer.status, headers);
    if (req.method !== "HEAD" && payload !== undefined) res.write(payload);
    else res.flushHeaders();
    drain(req, clock, () => res.end());
    return;
  }
  if (!req.complete) req.resume();
  res.writeHead(answer.status, headers);
  res.end(req.method === "HEAD" ? undefined : payload);
}

/** The JSON of a body read by readBody: 415 for another media type, 400 (listing the problem) for bad JSON. */
export function json(body: { type: string; text: string } | undefined): unknown {
  if (body === undefined) return undefined;
  if (body.type !== "application/json" && !/^application\/[a-z0-9.+-]+\+json$/.test(body.type)) {
    throw new HttpError(415, `the body must be JSON; send it with content-type: application/json (got ${body.type || "none"})`);
  }
  const parsed = parseJson(body.text);
  if (!parsed.ok) throw new HttpError(400, parsed.detail, parsed.errors);
  return parsed.value;
}

/**
 * A request's JSON body as `schema` takes it: 400 when it is empty (saying to send `example`, "a silence such
 * as {...}") or invalid (every problem listed, of `what`, "the silence").
 */
export async function validBody<S extends z.ZodType>(req: Request, schema: S, what: string, example: string): Promise<z.output<S>> {
  const body = await req.json();
  if (body === undefined) throw new HttpError(400, `the body is empty; send ${example}`, [{ path: "", message: "required" }]);
  const parsed = validate(schema, body);
  if (!parsed.ok) throw invalid(parsed.errors, what);
  return parsed.value;
}

/** Query strings are validated like bodies: unknown, repeated and malformed parameters are 400. */
function parseQuery(schema: z.ZodType | undefined, params: URLSearchParams): unknown {
  const errors: FieldError[] = [];
  const record: Record<string, string> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    if (values.length > 1) errors.push({ path: `/${key}`, message: "is given more than once; give it once" });
    record[key] = values[0]!;
  }
  if (!schema) {
    for (const key of Object.keys(record)) errors.push({ path: `/${key}`, message: "is not a parameter of this endpoint; remove it" });
    if (errors.length > 0) throw invalid(errors, "the query string");
    return {};
  }
  const parsed = validate(schema, record);
  if (!parsed.ok) errors.push(...parsed.errors);
  if (errors.length > 0 || !parsed.ok) throw invalid(errors, "the query string");
  return parsed.value;
}
