/**
 * A stand-in for an ntfy v2.13 server, for tests (no real ntfy can run here). It behaves as ../shared/NTFY.md
 * describes: JSON and plain publishing with ntfy's validation and error codes, optional token and Basic auth,
 * the per-client rate limit, poll read-back and /v1/health; and test controls to fail the next publishes,
 * to answer late, to stop listening and to come back. test/ntfy-standin.test.ts checks it against NTFY.md.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface StoredMessage {
  readonly id: string;
  readonly time: number;
  readonly expires: number;
  readonly event: "message";
  readonly topic: string;
  readonly title?: string;
  readonly message: string;
  readonly priority?: number;
  readonly tags?: string[];
  readonly click?: string;
  readonly markdown?: boolean;
  /** Action buttons (https://docs.ntfy.sh/publish/#action-buttons), as ntfy keeps them: view, broadcast, http. */
  readonly actions?: NtfyAction[];
  /** Not ntfy's: the Authorization header it came with, for tests of healthd's auth. */
  readonly authorization?: string;
}

/** An action button as ntfy answers it (an http action POSTs `body` with `headers` to `url` when tapped). */
export interface NtfyAction {
  readonly id: string;
  readonly action: "view" | "broadcast" | "http";
  readonly label: string;
  readonly url?: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly clear?: boolean;
}

export interface StandInOptions {
  /** When set, publishing needs one of these tokens (Bearer, or Basic with an empty user). */
  readonly tokens?: readonly string[];
  /** When set, publishing also accepts Basic with one of these user:password pairs. */
  readonly users?: Readonly<Record<string, string>>;
  /** Requests a client may make at once before the limit bites. Default 60. */
  readonly burst?: number;
  /** One more request is allowed per this many ms. Default 5000. */
  readonly replenishMs?: number;
}

const topicPattern = /^[-_A-Za-z0-9]{1,64}$/;
const reserved = new Set(["docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1"]);
const priorityNames: Record<string, number> = { min: 1, low: 2, default: 3, high: 4, max: 5, urgent: 5 };
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

const errors = {
  badPriority: [400, 40007, "invalid priority parameter"],
  badTopic: [400, 40009, "invalid request: topic invalid"],
  reservedTopic: [400, 40010, "invalid topic: path invalid"],
  badJson: [400, 40024, "invalid request: request body must be message JSON"],
  noRoute: [404, 40401, "page not found"],
  tooLarge: [413, 41303, "request entity too large: JSON body too large"],
  badAuth: [401, 40101, "unauthorized"],
  forbidden: [403, 40301, "forbidden"],
  tooMany: [429, 42901, "limit reached: too many requests"],
  internal: [500, 50001, "internal server error"],
} as const satisfies Record<string, readonly [number, number, string]>;

type Failure = readonly [number, number, string];

export class NtfyStandIn {
  readonly #options: StandInOptions;
  readonly #messages = new Map<string, StoredMessage[]>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;
  #failNext: { count: number; status: number } = { count: 0, status: 500 };
  #delayMs = 0;
  /** Publish requests received, whatever their answer. */
  attempts = 0;
  /** Emits "message" with each StoredMessage it accepts. */
  readonly events = new EventEmitter();

  constructor(options: StandInOptions = {}) {
    this.#options = options;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Listen on 127.0.0.1: a free port the first time, the same port when it comes back. */
  async start(): Promise<void> {
    const server = createServer((req, res) => void this.#handle(req, res));
    server.on("connection", (socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#port, "127.0.0.1", () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stop listening and drop every connection: publishers now meet a refused connection. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The next `count` publishes are answered with `status` (ntfy's error body for it). */
  failNext(count: number, status = 500): void {
    this.#failNext = { count, status };
  }

  /** Answer every request this much later (to go past a publisher's timeout). 0 to stop. */
  delay(ms: number): void {
    this.#delayMs = ms;
  }

  /** Every message published to `topic`, oldest first. */
  messages(topic: string): StoredMessage[] {
    return [...(this.#messages.get(topic) ?? [])];
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    if (this.#delayMs > 0) await new Promise((r) => setTimeout(r, this.#delayMs));
    if (res.destroyed) return;
    const url = new URL(req.url ?? "/", "http://ntfy");
    const path = url.pathname;

    if (req.method === "GET" && path === "/v1/health") return json(res, 200, { healthy: true });
    const poll = /^\/([^/]+)\/json$/.exec(path);
    if (req.method === "GET" && poll) return this.#poll(res, poll[1]!, url.searchParams);
    if (req.method !== "POST" && req.method !== "PUT") return fail(res, errors.noRoute);

    this.attempts++;
    if (!this.#allow(req.socket.remoteAddress ?? "")) return fail(res, errors.tooMany);
    if (this.#failNext.count > 0) {
      this.#failNext.count--;
      const status = this.#failNext.status;
      const known = Object.values(errors).find((e) => e[0] === status);
      return fail(res, known ?? [status, status * 100 + 1, "failing as the test asked"]);
    }
    const denied = this.#authorize(req.headers.authorization);
    if (denied) return fail(res, denied);

    const isJson = path === "/" || path === "";
    if (isJson) {
      if (body.length > 8192) return fail(res, errors.tooLarge);
      let doc: Record<string, unknown>;
      try {
        doc = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new Error("not an object");
      } catch {
        return fail(res, errors.badJson);
      }
      const topic = doc.topic;
      if (typeof topic !== "string" || !topicPattern.test(topic)) return fail(res, errors.badTopic);
      if (reserved.has(topic)) return fail(res, errors.reservedTopic);
      const priority = doc.priority;
      if (priority !== undefined && (typeof priority !== "number" || !Number.isInteger(priority) || priority < 0 || priority > 5)) {
        return fail(res, errors.badPriority);
      }
      return this.#publish(res, req, {
        topic,
        message: typeof doc.message === "string" ? doc.message : "",
        title: typeof doc.title === "string" ? doc.title : undefined,
        priority: priority === undefined || priority === 0 ? undefined : priority,
        tags: Array.isArray(doc.tags) ? doc.tags.filter((t): t is string => typeof t === "string") : undefined,
        click: typeof doc.click === "string" ? doc.click : undefined,
        markdown: doc.markdown === true ? true : undefined,
        actions: Array.isArray(doc.actions) ? actionsOf(doc.actions) : undefined,
      });
    }

    const topic = path.slice(1);
    if (!topicPattern.test(topic)) return fail(res, errors.noRoute);
    if (reserved.has(topic)) return fail(res, errors.reservedTopic);
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const rawPriority = header("x-priority");
    let priority: number | undefined;
    if (rawPriority !== undefined) {
      priority = priorityNames[rawPriority.toLowerCase()] ?? (/^[1-5]$/.test(rawPriority) ? Number(rawPriority) : NaN);
      if (Number.isNaN(priority)) return fail(res, errors.badPriority);
    }
    return this.#publish(res, req, {
      topic,
      message: body.toString("utf8"),
      title: header("x-title"),
      priority,
      tags: header("x-tags")?.split(",").map((t) => t.trim()).filter(Boolean),
      click: header("x-click"),
      markdown: header("x-markdown") === "true" || header("x-markdown") === "1" ? true : undefined,
    });
  }

  #publish(
    res: ServerResponse,
    req: IncomingMessage,
    fields: {
      topic: string; message: string; title?: string | undefined; priority?: number | undefined; tags?: string[] | undefined; click?: string | undefined;
      markdown?: true | undefined; actions?: NtfyAction[] | undefined;
    },
  ): void {
    const time = Math.floor(Date.now() / 1000);
    const message: StoredMessage = dropEmpty({
      id: Array.from(randomBytes(12), (b) => idAlphabet[b % idAlphabet.length]).join(""),
      time,
      expires: time + 43200,
      event: "message" as const,
      topic: fields.topic,
      title: fields.title || undefined,
      message: fields.message === "" ? "triggered" : fields.message,
      priority: fields.priority,
      tags: fields.tags && fields.tags.length > 0 ? fields.tags : undefined,
      click: fields.click || undefined,
      markdown: fields.markdown,
      actions: fields.actions && fields.actions.length > 0 ? fields.actions : undefined,
    });
    const list = this.#messages.get(fields.topic) ?? [];
    list.push({ ...message, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    this.#messages.set(fields.topic, list);
    json(res, 200, message);
    this.events.emit("message", list.at(-1));
  }

  #poll(res: ServerResponse, topic: string, params: URLSearchParams): void {
    let list = this.messages(topic);
    const since = params.get("since") ?? "all";
    if (since === "latest") list = list.slice(-1);
    else if (/^\d+$/.test(since)) list = list.filter((m) => m.time >= Number(since));
    else if (since !== "all") {
      const at = list.findIndex((m) => m.id === since);
      list = at === -1 ? list : list.slice(at + 1);
    }
    res.writeHead(200, { "content-type": "application/x-ndjson; charset=utf-8" });
    res.end(list.map(({ authorization: _, ...m }) => JSON.stringify(m) + "\n").join(""));
  }

  #authorize(header: string | undefined): Failure | undefined {
    const { tokens, users } = this.#options;
    if (!tokens && !users) return undefined;
    if (!header) return errors.forbidden;
    if (header.startsWith("Bearer ")) return tokens?.includes(header.slice(7)) ? undefined : errors.badAuth;
    if (header.startsWith("Basic ")) {
      const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      const user = decoded.slice(0, colon);
      const password = decoded.slice(colon + 1);
      if (colon >= 0 && user === "" && tokens?.includes(password)) return undefined;
      if (colon >= 0 && users && Object.hasOwn(users, user) && users[user] === password) return undefined;
      return errors.badAuth;
    }
    return errors.badAuth;
  }

  /** A token bucket per client address, as ntfy's visitor request limiter. */
  #allow(client: string): boolean {
    const burst = this.#options.burst ?? 60;
    const every = this.#options.replenishMs ?? 5000;
    const now = Date.now();
    const bucket = this.#buckets.get(client) ?? { tokens: burst, at: now };
    const refill = Math.floor((now - bucket.at) / every);
    if (refill > 0) {
      bucket.tokens = Math.min(burst, bucket.tokens + refill);
      bucket.at += refill * every;
    }
    this.#buckets.set(client, bucket);
    if (bucket.tokens <= 0) return false;
    bucket.tokens--;
    return true;
  }
}

function dropEmpty<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body) + "\n");
}

function fail(res: ServerResponse, [status, code, error]: Failure): void {
  json(res, status, { code, http: status, error, link: "https://ntfy.sh/docs/publish/" });
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Start a stand-in for one test; it stops when the test ends. */
export async function ntfyStandIn(t: { after(fn: () => Promise<void>): void }, options?: StandInOptions): Promise<NtfyStandIn> {
  const standIn = new NtfyStandIn(options);
  await standIn.start();
  t.after(() => standIn.stop());
  return standIn;
}

/**
 * The action buttons of a JSON publish as ntfy keeps them: each gets an id; an http action's method defaults to
 * POST (ntfy's server/actions.go). Up to 3; anything else is dropped here rather than refused (healthd sends valid ones).
 */
function actionsOf(list: unknown[]): NtfyAction[] {
  return list.slice(0, 3).flatMap((a) => {
    const x = a as Record<string, unknown>;
    if ((x.action !== "view" && x.action !== "broadcast" && x.action !== "http") || typeof x.label !== "string") return [];
    return [
      dropEmpty({
        id: Array.from(randomBytes(10), (b) => idAlphabet[b % idAlphabet.length]).join(""),
        action: x.action,
        label: x.label,
        url: typeof x.url === "string" ? x.url : undefined,
        method: x.action === "http" ? (typeof x.method === "string" ? x.method : "POST") : undefined,
        headers: x.headers && typeof x.headers === "object" ? (x.headers as Record<string, string>) : undefined,
        body: typeof x.body === "string" ? x.body : undefined,
        clear: x.clear === true ? true : undefined,
      }) as NtfyAction,
    ];
  });
}
