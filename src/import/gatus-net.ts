/**
 * Gatus's ws:// and wss:// endpoints (client/client.go QueryWebSocket: it writes the endpoint's body, an empty
 * message when it has none, and reads one message) as websocket checks, its grpc:// and grpcs:// ones
 * (client/grpc.go: grpc.health.v1.Health/Check of the service "") as grpc checks, its icmp:// ones (client.Ping:
 * one echo, [RESPONSE_TIME] its round trip) as icmp checks, and its starttls:// ones (CanPerformStartTLS: SMTP's
 * STARTTLS, the host as the name verified) and tls:// ones (CanPerformTLS) as tls checks.
 */
import type { Check } from "./common.ts";

/** A condition as gatus.ts parsed it: [PLACEHOLDER](.path) OP value. */
export interface GatusCondition {
  readonly text: string;
  readonly placeholder: string;
  readonly path: string | null;
  readonly op: "==" | "!=" | "<" | ">" | "<=" | ">=";
  readonly value: string;
}

/** What gatus.ts hands in: its notes, and its reading of a [RESPONSE_TIME] value. */
export interface GatusHelpers {
  readonly skip: (c: GatusCondition, why?: string) => void;
  readonly note: (why: string) => void;
  readonly latencyMs: (value: string) => number;
  /** A [CERTIFICATE_EXPIRATION] value (a duration) in whole days. */
  readonly days: (value: string) => number;
}

type Endpoint = Record<string, unknown> & { body?: unknown; headers?: unknown; client?: { insecure?: unknown } };

/** [BODY] against the message: pat(*text*) as contains, another pattern or plain text as the whole message. */
export function websocketFromGatus(e: Endpoint, url: string, conditions: readonly GatusCondition[], base: Check, h: GatusHelpers): Check {
  const alternative: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
    if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) alternative.maxLatencyMs = h.latencyMs(c.value);
    else if (c.placeholder === "BODY" && c.path === null && c.op === "==" && alternative.contains === undefined && alternative.matches === undefined) {
      const pattern = /^pat\((.*)\)$/.exec(c.value)?.[1];
      const inner = pattern === undefined ? undefined : /^\*([^*?]+)\*$/.exec(pattern)?.[1];
      if (inner !== undefined) alternative.contains = inner;
      else if (pattern !== undefined) alternative.matches = `^${escaped(pattern).replace(/\\\*/g, "[\\s\\S]*").replace(/\\\?/g, "[\\s\\S]")}$`;
      else if (/^[a-z]+\(/.test(c.value)) h.skip(c);
      else alternative.matches = `^${escaped(c.value)}$`;
    } else h.skip(c);
  }
  const headers = typeof e.headers === "object" && e.headers !== null ? Object.fromEntries(Object.entries(e.headers).map(([k, v]) => [k.toLowerCase(), String(v)])) : {};
  if (typeof e.body === "string" && e.body.includes("{{")) h.note("its body is a Go template; healthd sends it as written");
  return {
    type: "websocket",
    url,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    // Gatus writes the body whatever it is, an empty message when there is none.
    send: typeof e.body === "string" ? e.body : "",
    ...(e.client?.insecure === true ? { verifyTls: false } : {}),
    ...(Object.keys(alternative).length > 0 ? { expect: [alternative] } : {}),
    ...base,
  };
}

/** grpc://host:port: [BODY].status == SERVING is what healthd's check holds always; [RESPONSE_TIME] carries over. */
export function grpcFromGatus(e: Endpoint, url: string, conditions: readonly GatusCondition[], base: Check, h: GatusHelpers): Check | undefined {
  const at = /^(grpcs?):\/\/((?:\[[^\]]+\]|[^:/[\]]+):\d{1,5})\/?$/.exec(url);
  if (!at) return void h.note(`its url ${JSON.stringify(url)} is not grpc://host:port`);
  let serving = false;
  const more: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
    if (c.placeholder === "BODY" && c.path === "status" && c.op === "==" && c.value === "SERVING") serving = true;
    else if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) more.maxLatencyMs = h.latencyMs(c.value);
    else h.skip(c);
  }
  if (!serving) h.note("Gatus passed it whatever status it answered (no [BODY].status == SERVING); healthd's grpc check passes on SERVING only");
  return {
    type: "grpc",
    target: at[2],
    ...(at[1] === "grpcs" ? { tls: true, ...(e.client?.insecure === true ? { verifyTls: false } : {}) } : {}),
    ...more,
    ...base,
  };
}

/** icmp://host: one echo, as Gatus sends; [CONNECTED] is what the check holds, [RESPONSE_TIME] its round trip. */
export function icmpFromGatus(url: string, conditions: readonly GatusCondition[], base: Check, h: GatusHelpers): Check | undefined {
  // Gatus takes all after icmp:// as the host, an IPv6 address unbracketed too.
  const host = url.slice("icmp://".length).replace(/\/$/, "").replace(/^\[(.*)\]$/, "$1");
  if (host === "") return void h.note(`its url ${JSON.stringify(url)} is not icmp://host`);
  const more: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
    if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) more.maxLatencyMs = h.latencyMs(c.value);
    else h.skip(c);
  }
  // ping waits in whole seconds: an icmp check's timeout is 1 s at least (schema/icmp.ts).
  const short = typeof base.timeoutMs === "number" && base.timeoutMs < 1000;
  if (short) h.note(`its client timeout is under the 1 s an icmp check waits at least; it waits 1 s`);
  return { type: "icmp", host, count: 1, ...more, ...base, ...(short ? { timeoutMs: 1000 } : {}) };
}

/**
 * tls://host:port and starttls://host:port: the handshake, the chain verified unless client.insecure, and
 * [CERTIFICATE_EXPIRATION] > D as certValidDays. Gatus's STARTTLS is SMTP's (net/smtp), so starttls: smtp.
 */
export function tlsFromGatus(e: Endpoint, url: string, conditions: readonly GatusCondition[], base: Check, h: GatusHelpers): Check | undefined {
  const at = /^(tls|starttls):\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(url);
  const port = Number(at?.[3]);
  if (!at || !(port >= 1 && port <= 65535)) return void h.note(`its url ${JSON.stringify(url)} is not ${url.split(":")[0]}://host:port`);
  const alternative: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
    if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) alternative.maxLatencyMs = h.latencyMs(c.value);
    else if (c.placeholder === "CERTIFICATE_EXPIRATION" && (c.op === ">" || c.op === ">=")) alternative.certValidDays = h.days(c.value);
    else h.skip(c);
  }
  return {
    type: "tls",
    host: at[2]!.replace(/^\[|\]$/g, ""),
    port,
    ...(at[1] === "starttls" ? { starttls: "smtp" } : {}),
    ...(e.client?.insecure === true ? { verifyTls: false } : {}),
    ...(Object.keys(alternative).length > 0 ? { expect: [alternative] } : {}),
    ...base,
  };
}

/** Text as a regular expression that matches it literally. */
export const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
