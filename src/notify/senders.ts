/**
 * Sending one notification to one channel, by type. Every type but email is an HTTP request made with undici;
 * each has its own agent (so a hanging destination holds only its own sockets) and a deadline. What a
 * destination answers is classified once (sent, refused for good, or worth retrying), and a request that is
 * retried carries the same notification id wherever the destination takes one (a webhook's Idempotency-Key,
 * Matrix's transaction id, PagerDuty's dedup_key), so that a retry after a crash cannot post twice there.
 */
import { createHmac } from "node:crypto";
import { Agent, request } from "undici";
import type { ChannelDocument, ChannelType } from "../domain/schema/channel.ts";
import { emailSender } from "./email.ts";
import { ntfyPublisher, type NtfyOptions } from "./ntfy.ts";
import { texts, type Outgoing, type Sender, type SendResult } from "./outgoing.ts";
import { render } from "../domain/template.ts";

export interface SenderOptions {
  /** Longest one send may take, connect to last byte. Default 10000 ms. */
  readonly timeoutMs?: number;
  /** What the time is, for webhook signatures. */
  readonly now: () => number;
}

/** The sender of a channel, from its document with its `${NAME}`s filled and checked again. */
export function senderFor(doc: ChannelDocument, options: SenderOptions): Sender {
  const timeoutMs = options.timeoutMs ?? 10_000;
  if (doc.type === "email") return emailSender(doc, timeoutMs);
  if (doc.type === "ntfy") return ntfySender({ url: doc.url, token: doc.token, timeoutMs }, doc.topic, doc);
  const agent = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } });
  const shape = shapes[doc.type];
  return {
    async send(out) {
      const { title, message } = texts(doc, out);
      const req = shape(doc as never, out, title, message, options.now);
      let status: number;
      let text: string;
      try {
        const response = await request(req.url, {
          method: req.method ?? "POST",
          headers: { "user-agent": "healthd", ...(req.json === undefined ? {} : { "content-type": "application/json" }), ...req.headers },
          body: req.body ?? JSON.stringify(req.json),
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = response.statusCode;
        text = await readCapped(response.body, 65_536);
      } catch (error) {
        return unreachable(error, new URL(req.url).origin, timeoutMs);
      }
      if (status >= 200 && status < 300) return { ok: true, id: req.idOf?.(text) ?? `HTTP ${status}` };
      return refused(status, text, doc.type);
    },
    close: () => agent.close(),
  };
}

/** At most `max` bytes of an answer: what a destination says is read for its id or its error, never whole. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, max).toString("utf8");
}

function unreachable(error: unknown, origin: string, timeoutMs: number): SendResult {
  const e = error as NodeJS.ErrnoException;
  const hung = e.name === "TimeoutError" || e.code?.includes("TIMEOUT");
  const error_ = hung ? `${origin} did not answer within ${timeoutMs} ms` : `could not reach ${origin}: ${e.code ?? e.message}`;
  return { ok: false, retryable: true, status: null, error: error_ };
}

/** A refusal: the message itself (400, 413, 422) will not do better by retrying; anything else may (an outage, a limit, auth being fixed). */
function refused(status: number, text: string, type: ChannelType): SendResult {
  return {
    ok: false,
    retryable: ![400, 413, 422].includes(status),
    status,
    error: `${type} answered ${status}: ${text.trim().replace(/\s+/g, " ").slice(0, 200) || "no body"}`,
  };
}

interface Request {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** JSON to send, or a body already made. */
  readonly json?: unknown;
  readonly body?: string;
  /** What the destination calls the message, read from its answer. */
  readonly idOf?: (text: string) => string | undefined;
}

type Shape<T extends ChannelType> = (doc: Extract<ChannelDocument, { type: T }>, out: Outgoing, title: string, message: string, now: () => number) => Request;

const field = (text: string, read: (body: Record<string, unknown>) => unknown): string | undefined => {
  try {
    const value = read(JSON.parse(text) as Record<string, unknown>);
    return value === undefined || value === null ? undefined : String(value);
  } catch {
    return undefined;
  }
};

const joined = (url: string, path: string) => url.replace(/\/+$/, "") + path;
const down = (out: Outgoing) => out.event.event === "down" || out.event.event === "late" || out.event.event === "reminder" || out.event.event === "escalation";
/** The acknowledgement link as a line of a chat message, in that chat's link syntax; "" without one. */
const ackLine = (out: Outgoing, link: (url: string) => string) => (out.event.ackUrl ? `\n${link(out.event.ackUrl)}` : "");

/** Each HTTP type's request (docs/guide/notifications.md: Channels, with the documentation each follows). */
const shapes: { [T in Exclude<ChannelType, "email" | "ntfy">]: Shape<T> } = {
  webhook(doc, out, _title, _message, now) {
    const body = doc.body === null ? JSON.stringify(out.event) : render(doc.body, out.event, "json");
    const headers: Record<string, string> = { ...doc.headers, "idempotency-key": out.event.id };
    if (doc.secret !== undefined) {
      const timestamp = String(Math.floor(now() / 1000));
      headers["x-healthd-timestamp"] = timestamp;
      headers["x-healthd-signature"] = `sha256=${createHmac("sha256", doc.secret).update(`${timestamp}.${body}`).digest("hex")}`;
    }
    const typed = Object.keys(headers).some((h) => h.toLowerCase() === "content-type");
    return { url: doc.url, method: doc.method, headers: typed ? headers : { "content-type": "application/json", ...headers }, body };
  },
  // Incoming webhooks: https://api.slack.com/messaging/webhooks (mrkdwn *bold*, <url|text> links).
  slack: (doc, out, title, message) => ({ url: doc.url, json: { text: `*${title}*\n${message}${ackLine(out, (u) => `<${u}|Acknowledge>`)}` } }),
  // https://developers.mattermost.com/integrate/webhooks/incoming/ (Markdown **bold**).
  mattermost: (doc, out, title, message) => ({ url: doc.url, json: { text: `**${title}**\n${message}${ackLine(out, (u) => `[Acknowledge](${u})`)}`, username: "healthd" } }),
  // https://discord.com/developers/docs/resources/webhook#execute-webhook; wait=true answers the message.
  discord(doc, out, title, message) {
    // The link last, kept whole in Discord's 2,000 characters: a long error must not cost it. <url> shows no preview.
    const link = ackLine(out, (u) => `[Acknowledge](<${u}>)`);
    return {
      url: doc.url + (doc.url.includes("?") ? "&" : "?") + "wait=true",
      json: { username: "healthd", content: `**${title}**\n${message}`.slice(0, 2000 - link.length) + link, allowed_mentions: { parse: [] } },
      idOf: (text) => field(text, (b) => b.id),
    };
  },
  // Teams workflows ("Post to a channel when a webhook request is received"): an Adaptive Card.
  teams: (doc, out, title, message) => ({
    url: doc.url,
    json: {
      type: "message",
      attachments: [
        {
          contentType: "application/vnd.microsoft.card.adaptive",
          content: {
            $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
            type: "AdaptiveCard",
            version: "1.4",
            body: [
              { type: "TextBlock", text: title, weight: "Bolder", size: "Medium", wrap: true },
              { type: "TextBlock", text: message, wrap: true },
            ],
            ...(out.event.ackUrl ? { actions: [{ type: "Action.OpenUrl", title: "Acknowledge", url: out.event.ackUrl }] } : {}),
          },
        },
      ],
    },
  }),
  // https://gotify.net/api-docs#/message/createMessage (priority 8 shows as high on Android).
  gotify: (doc, out, title, message) => ({
    url: joined(doc.url, "/message"),
    headers: { "x-gotify-key": doc.token },
    json: { title, message, priority: down(out) ? 8 : 5 },
    idOf: (text) => field(text, (b) => b.id),
  }),
  // PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}: the same txnId is the same event.
  matrix: (doc, out, title, message) => ({
    url: joined(doc.url, `/_matrix/client/v3/rooms/${encodeURIComponent(doc.room)}/send/m.room.message/${encodeURIComponent(`healthd-${out.event.id}`)}`),
    method: "PUT",
    headers: { authorization: `Bearer ${doc.token}` },
    json: { msgtype: "m.text", body: `${title}\n${message}` },
    idOf: (text) => field(text, (b) => b.event_id),
  }),
  // https://core.telegram.org/bots/api#sendmessage (plain text: nothing to escape).
  telegram: (doc, _out, title, message) => ({
    url: joined(doc.url, `/bot${doc.token}/sendMessage`),
    json: { chat_id: doc.chatId, text: `${title}\n${message}`.slice(0, 4096), link_preview_options: { is_disabled: true } },
    idOf: (text) => field(text, (b) => (b.result as { message_id?: unknown } | undefined)?.message_id),
  }),
  // Events API v2: https://developer.pagerduty.com/docs/events-api-v2/trigger-events/. The incident is the
  // dedup_key, so its RECOVERED resolves the alert its DOWN opened (and reminders add nothing new).
  pagerduty(doc, out, title, message) {
    const e = out.event;
    // A storm's grouped DOWN and RECOVERED share its group id as an incident's share the incident's.
    const dedup = e.incidentId !== null ? `healthd-incident-${e.incidentId}` : e.group != null ? `healthd-group-${e.group}` : `healthd-${e.id}`;
    const json =
      e.event === "recovered" || e.event === "ack"
        ? { routing_key: doc.routingKey, event_action: e.event === "ack" ? "acknowledge" : "resolve", dedup_key: dedup }
        : {
            routing_key: doc.routingKey,
            event_action: "trigger",
            dedup_key: dedup,
            payload: {
              summary: title.slice(0, 1024),
              source: `${e.server}/${e.service}`,
              severity: down(out) ? "critical" : "warning",
              timestamp: e.at,
              component: e.service,
              group: e.server,
              class: e.event,
              custom_details: { message, url: e.url, error: e.error },
            },
            ...(e.statusPage ? { links: [{ href: e.statusPage, text: "Status page" }] } : {}),
          };
    return { url: doc.url, json, idOf: (text) => field(text, (b) => b.dedup_key) };
  },
};

/**
 * An ntfy channel: healthd's own text (or the channel's templates), priority, tags and click. A stored ntfy
 * channel publishes to its `topic`; the built-in one (topic null) to the service's notifyTopic or the
 * cluster's default, which the delivery resolves into `out.topic`.
 */
export function ntfySender(options: NtfyOptions, topic: string | null, doc?: Pick<ChannelDocument, "title" | "message">): Sender {
  const publisher = ntfyPublisher(options);
  const message = (out: Outgoing) => {
    const { title, message } = doc ? texts({ type: "ntfy", ...doc } as ChannelDocument, out) : { title: out.body.title, message: out.body.message };
    // ntfy's http action: a tap POSTs to healthd, which acknowledges the incident (https://docs.ntfy.sh/publish/#send-http-request).
    const actions = out.event.ackUrl ? [{ action: "http" as const, label: "Acknowledge", url: `${out.event.ackUrl}?via=ntfy`, method: "POST", clear: true }] : undefined;
    return { ...out.body, title, message, topic: (topic ?? out.topic)!, ...(actions ? { actions } : {}) };
  };
  return {
    async send(out) {
      if (out.topic === null && topic === null) {
        return { ok: false, retryable: false, status: null, error: "no ntfy topic: set notifyTopic on the check or start healthd with --ntfy-topic" };
      }
      const result = await publisher.publish(message(out));
      return result.ok ? { ok: true, id: result.id } : result;
    },
    async findSent(out, since) {
      const m = message(out);
      const found = await publisher.findCached(m.topic, Math.floor(since / 1000) - 1, (c) => c.title === m.title && c.message === m.message);
      return found?.id;
    },
    close: () => publisher.close(),
  };
}
