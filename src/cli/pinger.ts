/**
 * The client side of heartbeats, for `healthd run` and `healthd ping`: ping a service by name with a token
 * (a ping token will do), or by its ping key (given, or looked up through an open API), each ping retried,
 * since a job's report must not be lost to a daemon restarting, and a job must never fail for want of a daemon.
 * Light on purpose (node:http, no commander, nothing else of healthd): it runs on every crontab line, and
 * loading undici alone cost more than a whole `curl` (src/cli/fast.ts, bench/run.ts).
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { sleep, systemClock } from "../platform/clock.ts";
import { UsageError } from "../platform/usage.ts";

/** Where run and ping find the daemon when neither --url nor HEALTHD_URL says. */
export const defaultDaemonUrl = "http://127.0.0.1:8080";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url (HEALTHD_URL) must be the daemon's address, such as http://127.0.0.1:8080 (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url (HEALTHD_URL) must start with http:// or https:// (got ${JSON.stringify(text)})`);
  return url.href.replace(/\/+$/, "");
}

export function parsePingKey(text: string): string {
  if (!uuid.test(text)) throw new UsageError(`--ping-key (HEALTHD_PING_KEY) must be a UUID, as GET /services/SERVER/SERVICE shows it (got ${JSON.stringify(text)})`);
  return text.toLowerCase();
}

/**
 * A heartbeat's ping URL, as GET /services shows its key and the README writes it (https://host/ping/KEY), or
 * its slug URL (https://host/ping/SERVER-PING-KEY/SLUG, Healthchecks.io's): the daemon's address (with any path
 * a proxy puts before /ping) and what follows /ping/. Undefined for text that is no URL; a usage error for a
 * URL that is not a ping URL.
 */
export function parsePingUrl(text: string): { readonly url: string; readonly key: string } | undefined {
  if (!/^https?:\/\//i.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${JSON.stringify(text)} is not a URL; give the heartbeat's ping URL, such as https://healthd.example.org/ping/<uuid>`);
  }
  const found = /^(.*)\/ping\/([^/]+)(?:\/([^/]+))?\/?$/.exec(url.pathname);
  const [, base, first, slug] = found ?? [];
  if (first !== undefined && slug === undefined && uuid.test(first)) return { url: `${url.origin}${base!}`, key: first.toLowerCase() };
  // The slug names the service, so the path after /ping/ is the target as it is.
  if (first !== undefined && slug !== undefined && serverPingKey.test(first) && serviceSlug.test(slug) && !/^\.\.?$/.test(slug)) return { url: `${url.origin}${base!}`, key: `${first}/${slug}` };
  throw new UsageError(
    `${JSON.stringify(text)} is not a ping URL: it ends in /ping/ and the heartbeat's key, a UUID (https://healthd.example.org/ping/<uuid>), or in /ping/<server ping key>/<slug>, with no /start or exit code after it`,
  );
}

/** A server's ping key, the first segment of its slug URLs, and a slug (a service id). */
const serverPingKey = /^[A-Za-z0-9_-]{22}$/;
const serviceSlug = /^[A-Za-z0-9._-]{1,64}$/;

export interface Daemon {
  readonly url: string;
  readonly token?: string;
}

/** A ping or lookup that did not go through: `final` when trying again cannot help (an unknown key, a bad request). */
export class NotSent extends Error {
  constructor(
    message: string,
    readonly final: boolean,
  ) {
    super(message);
  }
}

const tries = 3;
const backoffMs = [500, 1500];
const timeoutMs = 10_000;

/** One request to the daemon, tried up to 3 times with backoff when the daemon is away, busy or failing. */
async function call(daemon: Daemon, path: string, init: { method: "GET" | "POST"; body?: string; auth?: boolean }): Promise<string> {
  let problem = "";
  for (let attempt = 0; attempt < tries; attempt++) {
    if (attempt > 0) await sleep(systemClock, backoffMs[attempt - 1]!);
    try {
      const headers = {
        ...(init.body === undefined ? {} : { "content-type": "text/plain; charset=utf-8" }),
        ...(init.auth && daemon.token ? { authorization: `Bearer ${daemon.token}` } : {}),
      };
      const answer = await exchange(daemon.url + path, { method: init.method, headers, timeout: timeoutMs }, init.body);
      if (answer.status < 300) return answer.text;
      problem = `${daemon.url} answered ${answer.status}: ${messageOf(answer.text)}`;
      if (answer.status !== 429 && answer.status < 500) throw new NotSent(problem, true);
    } catch (error) {
      if (error instanceof NotSent) throw error;
      problem = `cannot reach ${daemon.url}: ${(error as Error).message}`;
    }
  }
  throw new NotSent(`${problem} (tried ${tries} times)`, false);
}

/**
 * One request and its whole answer; node:https is loaded only for an https URL. The timeout is one of silence,
 * as undici's headers and body timeouts were: a daemon that answers slowly but steadily is waited for.
 */
async function exchange(url: string, options: RequestOptions, body: string | undefined): Promise<{ status: number; text: string }> {
  const request = url.startsWith("https:") ? (await import("node:https")).request : httpRequest;
  return new Promise((resolve, reject) => {
    const sent = request(url, options, (answer: IncomingMessage) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.once("end", () => resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      answer.once("error", reject);
    });
    sent.once("timeout", () => sent.destroy(new Error(`no answer for ${timeoutMs / 1000} s`)));
    sent.once("error", reject);
    sent.end(body);
  });
}

/** The text of an answer, or the detail of its problem document. */
function messageOf(text: string): string {
  try {
    return (JSON.parse(text) as { detail?: string }).detail ?? text.trim();
  } catch {
    return text.trim().slice(0, 200);
  }
}

/** Where a heartbeat's pings go: by its key (or SERVER-PING-KEY/SLUG), or by its name (with the daemon's token). */
export type PingTarget = { readonly key: string } | { readonly serverId: string; readonly serviceId: string };

/**
 * Where the pings of SERVER/SERVICE go: by name when a token is given (no lookup: a ping token may not read);
 * without one, by the ping key read through the (open) API.
 */
export async function pingTargetOf(daemon: Daemon, serverId: string, serviceId: string): Promise<PingTarget> {
  if (daemon.token !== undefined) return { serverId, serviceId };
  const text = await call(daemon, `/services/${encodeURIComponent(serverId)}/${encodeURIComponent(serviceId)}`, { method: "GET" });
  const key = (JSON.parse(text) as { check?: { pingKey?: unknown } }).check?.pingKey;
  if (typeof key !== "string") throw new NotSent(`${serverId}/${serviceId} is not a heartbeat (its check has no pingKey); give it "type": "heartbeat"`, true);
  return { key };
}

export type PingSignal = { readonly signal: "success" | "start" | "fail" | "log" } | { readonly signal: "exit"; readonly exitCode: number };

/** Send one ping; `body` is the job's output or message. */
export async function sendPing(daemon: Daemon, target: PingTarget, ping: PingSignal, options: { body?: string; rid?: string } = {}): Promise<void> {
  const suffix = ping.signal === "success" ? "" : ping.signal === "exit" ? `/${ping.exitCode}` : `/${ping.signal}`;
  const query = options.rid ? `?rid=${options.rid}` : "";
  const named = !("key" in target);
  const base = named ? `${encodeURIComponent(target.serverId)}/${encodeURIComponent(target.serviceId)}` : target.key;
  // Only a ping by name carries the token: the daemon reads /ping/A/B with a token as SERVER/SERVICE.
  await call(daemon, `/ping/${base}${suffix}${query}`, { method: options.body === undefined ? "GET" : "POST", body: options.body, auth: named });
}
