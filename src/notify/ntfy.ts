/**
 * Publishing to ntfy with undici, in ntfy's JSON form (POST to the server's root). Not the `ntfy` npm
 * package: it is GPL-3.0, needs Node 21+, sends tokens as Basic and has no timeouts.
 */
import { Agent, request } from "undici";
import type { NotificationBody } from "../domain/model.ts";

/** ntfy's JSON publish body (https://docs.ntfy.sh/publish/#publish-as-json). */
export type NtfyMessage = NotificationBody & { readonly topic: string; readonly actions?: readonly NtfyAction[] };

/** An http action button (https://docs.ntfy.sh/publish/#send-http-request): a tap sends `method` to `url`. */
export interface NtfyAction {
  readonly action: "http";
  readonly label: string;
  readonly url: string;
  readonly method: string;
  /** Dismiss the notification once the request succeeded. */
  readonly clear: boolean;
}

export interface NtfyOptions {
  /** The ntfy server, e.g. https://ntfy.sh or https://example.org/ntfy/. */
  readonly url: string;
  /** An access token (tk_...), sent as Bearer. */
  readonly token?: string | undefined;
  /** User and password, sent as Basic, when no token is given. */
  readonly user?: string | undefined;
  readonly password?: string | undefined;
  /** Longest a publish may take, connect to last byte. Default 10000 ms. */
  readonly timeoutMs?: number;
}

export type PublishResult =
  | { readonly ok: true; readonly id: string; readonly time: number }
  | {
      readonly ok: false;
      /** A refusal of the message itself will not change by retrying; an outage, a limit or auth may. */
      readonly retryable: boolean;
      readonly status: number | null;
      readonly error: string;
    };

export interface Publisher {
  publish(message: NtfyMessage): Promise<PublishResult>;
  /**
   * A message of `topic` in ntfy's cache, published at or after `since` (Unix s), that `match` accepts;
   * undefined when there is none or the cache cannot be read.
   */
  findCached(topic: string, since: number, match: (message: CachedMessage) => boolean): Promise<CachedMessage | undefined>;
  close(): Promise<void>;
}

export interface CachedMessage {
  readonly id: string;
  readonly time: number;
  readonly title?: string;
  readonly message?: string;
}

export function ntfyPublisher(options: NtfyOptions): Publisher {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const endpoint = new URL(options.url.endsWith("/") ? options.url : options.url + "/");
  const agent = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } });
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "healthd" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  else if (options.user !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${options.user}:${options.password ?? ""}`).toString("base64")}`;
  }

  return {
    async publish(message) {
      let status: number;
      let text: string;
      try {
        const response = await request(endpoint, {
          method: "POST",
          headers,
          body: JSON.stringify(message),
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = response.statusCode;
        text = await response.body.text();
      } catch (error) {
        const e = error as NodeJS.ErrnoException;
        const hung = e.name === "TimeoutError" || e.code?.includes("TIMEOUT");
        const why = hung ? `ntfy at ${endpoint.origin} did not answer within ${timeoutMs} ms` : `could not reach ntfy at ${endpoint.origin}: ${e.code ?? e.message}`;
        return { ok: false, retryable: true, status: null, error: why };
      }
      let body: { id?: unknown; time?: unknown; code?: unknown; error?: unknown } = {};
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        // not JSON: a proxy's error page, say; reported as text below
      }
      if (status === 200 && typeof body.id === "string" && typeof body.time === "number") {
        return { ok: true, id: body.id, time: body.time };
      }
      const detail = typeof body.error === "string" ? `${body.error} (code ${String(body.code)})` : text.trim().slice(0, 200);
      return {
        ok: false,
        // A 200 that is not ntfy's answer (a captive proxy, say) may not have delivered: try again, rather
        // than lose the message.
        retryable: status >= 500 || status === 429 || status === 401 || status === 403 || status === 200,
        status,
        error: `ntfy answered ${status}: ${detail || "no body"}`,
      };
    },
    async findCached(topic, since, match) {
      try {
        const response = await request(new URL(`${encodeURIComponent(topic)}/json?poll=1&since=${since}`, endpoint), {
          headers,
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.body.text();
        if (response.statusCode !== 200) return undefined;
        for (const line of text.split("\n")) {
          if (!line.trim()) continue;
          const message = JSON.parse(line) as CachedMessage & { event?: string };
          if (message.event === "message" && match(message)) return message;
        }
      } catch {
        // The cache is a best effort against duplicates; not being able to read it means sending again.
      }
      return undefined;
    },
    close: () => agent.close(),
  };
}
