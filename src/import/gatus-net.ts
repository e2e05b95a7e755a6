/**
 * Gatus's ws:// and wss:// endpoints (client/client.go QueryWebSocket: it writes the endpoint's body, an empty
 * message when it has none, and reads one message) as websocket checks, and its grpc:// and grpcs:// ones
 * (client/grpc.go: grpc.health.v1.Health/Check of the service "") as grpc checks.
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

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
