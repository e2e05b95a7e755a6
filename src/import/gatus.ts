/**
 * Gatus: its YAML configuration (TwiN/gatus README). Each endpoint's conditions all have to hold, so they
 * become one alternative of `expect`. Groups become servers (endpoints without one go to `defaultServer`).
 *
 * What carries over: http(s) endpoints ([STATUS], [BODY].path, [BODY] == pat(...), [RESPONSE_TIME],
 * [CERTIFICATE_EXPIRATION]), tcp:// and ssh:// endpoints ([CONNECTED]; a body as send, [BODY] == text or pat(...)
 * as a banner), udp:// ones, tls:// and starttls:// ones (tls checks,
 * [CERTIFICATE_EXPIRATION]), icmp:// ones, dns endpoints ([DNS_RCODE],
 * [BODY] as an answer), ws:// and wss:// endpoints (websocket), grpc:// and grpcs:// ones, [DOMAIN_EXPIRATION] as domainWarnDays, interval, client timeout, insecure and
 * ignore-redirect, method, headers, body (graphql too), enabled, the first alert's thresholds, and external
 * endpoints with a heartbeat as heartbeats, with their keys (gatusKey: their URL keeps working) and, when
 * asked (import --keep-tokens), their tokens; suites as http checks with steps (gatus-suites.ts). `${VAR}`
 * stays: apply fills it from the environment, as Gatus did.
 */
import { parse } from "yaml";
import { clamp, DocumentBuilder, durationSeconds, NotThatFormat, slug, type Check, type Imported } from "./common.ts";
import { importSuites } from "./gatus-suites.ts";
import { escaped, grpcFromGatus, icmpFromGatus, tlsFromGatus, websocketFromGatus } from "./gatus-net.ts";

type Endpoint = Record<string, unknown> & {
  name?: unknown;
  group?: unknown;
  url?: unknown;
  body?: unknown;
  conditions?: unknown;
  dns?: { "query-name"?: unknown; "query-type"?: unknown };
  client?: { insecure?: unknown; timeout?: unknown; "ignore-redirect"?: unknown };
  alerts?: { "failure-threshold"?: unknown; "success-threshold"?: unknown }[];
};

/** `keepTokens`: the external endpoints' tokens come back in `tokens` (import --keep-tokens makes them healthd ping tokens). */
export function fromGatus(text: string, defaultServer: string, { keepTokens = false } = {}): Imported {
  let config: { endpoints?: unknown; "external-endpoints"?: unknown; suites?: unknown } | null;
  try {
    config = parse(text) as typeof config;
  } catch (error) {
    throw new NotThatFormat(`it is not YAML (${(error as Error).message.split("\n")[0]}), so not a Gatus configuration`);
  }
  if (typeof config !== "object" || config === null || (!Array.isArray(config.endpoints) && !Array.isArray(config["external-endpoints"]) && !Array.isArray(config.suites))) {
    const keys = typeof config === "object" && config !== null ? Object.keys(config).slice(0, 8).join(", ") : typeof config;
    throw new NotThatFormat(`it is YAML without endpoints (it has: ${keys || "nothing"}), so not a Gatus configuration`);
  }
  const builder = new DocumentBuilder();
  /** The server of an endpoint: its group, else the default. */
  const place = (e: { group?: unknown }) => {
    if (typeof e.group !== "string" || e.group === "") return defaultServer;
    const id = slug(e.group, defaultServer);
    builder.server(id, e.group);
    return id;
  };
  let silent = 0;
  const tokens = new Map<string, { secret: string; servers: string[]; keys: string[] }>();
  for (const [i, e] of ((config.endpoints as Endpoint[] | undefined) ?? []).entries()) {
    const name = typeof e.name === "string" && e.name !== "" ? e.name : `endpoint ${i + 1}`;
    const check = endpointCheck(e, (why) => builder.note(`endpoint ${JSON.stringify(name)}`, why));
    if (!check) continue;
    if (!Array.isArray(e.alerts) || e.alerts.length === 0) silent++;
    builder.add(place(e), name, check, `endpoint-${i + 1}`);
  }
  importSuites(config.suites, builder, { endpointCheck, alerting, place });
  if (silent > 0) builder.note("alerts", `${silent} endpoint${silent === 1 ? " has" : "s have"} no alerts in Gatus, so notify: false; remove it to be notified`);
  for (const [i, e] of ((config["external-endpoints"] as (Endpoint & { heartbeat?: { interval?: unknown } })[] | undefined) ?? []).entries()) {
    const name = typeof e.name === "string" && e.name !== "" ? e.name : `external endpoint ${i + 1}`;
    const period = durationSeconds(e.heartbeat?.interval);
    if (period === undefined) {
      builder.note(`external endpoint ${JSON.stringify(name)}`, "it has no heartbeat.interval, so no deadline a heartbeat could keep; not carried over");
      continue;
    }
    const key = gatusKey(typeof e.group === "string" ? e.group : "", name);
    const token = (e as { token?: unknown }).token;
    if (keepTokens && typeof token === "string" && token !== "") {
      const kept = tokens.get(token) ?? { secret: token, servers: [], keys: [] };
      if (!kept.servers.includes(place(e))) kept.servers.push(place(e));
      kept.keys.push(key);
      tokens.set(token, kept);
    } else {
      builder.note(
        `external endpoint ${JSON.stringify(name)}`,
        `its Gatus token does not carry over: the job's Bearer token must be a healthd token that may ping server ${place(e)} (healthd token create NAME --scope ping --server ${place(e)}, or import --apply --keep-tokens); its key ${key} does, so the job's URL (/api/v1/endpoints/${key}/external) stays`,
      );
    }
    const check = { type: "heartbeat", periodSeconds: clamp(period, 1, 31_536_000), graceSeconds: clamp(Math.min(60, period / 10), 1, 3600), gatusKey: key };
    builder.add(place(e), name, check, `external-${i + 1}`);
  }
  const imported = builder.finish({ variables: true });
  // A token is kept only for heartbeats that made it into the document.
  const carried = new Set(Object.values(imported.servers).flatMap((server) => server.services.map((service) => service.check.gatusKey)));
  const kept = [...tokens.values()].map((t) => ({ ...t, keys: t.keys.filter((k) => carried.has(k)) })).filter((t) => t.keys.length > 0);
  return { ...imported, tokens: kept };
}

/**
 * The key Gatus gives an endpoint (config/key/key.go): GROUP_NAME, each trimmed and lower-cased, with each of
 * / _ . , space # + & made a dash. Only those eight: `API (v1)` is `api-(v1)`, as Gatus's own tests have it.
 */
export function gatusKey(group: string, name: string): string {
  const clean = (part: string) => part.trim().toLowerCase().replace(/[/_.,# +&]/g, "-");
  return `${clean(group)}_${clean(name)}`;
}

/** The parts of a condition: placeholder (upper case), an optional [BODY] path, comparator, value. */
interface Condition {
  readonly text: string;
  readonly placeholder: string;
  readonly path: string | null;
  readonly op: "==" | "!=" | "<" | ">" | "<=" | ">=";
  readonly value: string;
}

function parseCondition(text: string): Condition | undefined {
  const m = /^\s*\[([A-Za-z_]+)\]((?:\.[^\s=!<>]+|\[\d+\][^\s=!<>]*)?)\s*(==|!=|<=|>=|<|>)\s*(.*?)\s*$/.exec(text);
  if (!m) return undefined;
  const path = m[2] ? m[2].replace(/^\./, "") : null;
  return { text, placeholder: m[1]!.toUpperCase(), path, op: m[3] as Condition["op"], value: m[4]!.replace(/^"(.*)"$/, "$1") };
}

function endpointCheck(e: Endpoint, note: (why: string) => void): Check | undefined {
  const url = typeof e.url === "string" ? e.url.trim() : "";
  const conditions = (Array.isArray(e.conditions) ? e.conditions : []).map(String);
  const interval = durationSeconds(e.interval ?? "60s");
  if (interval === undefined) note(`its interval ${JSON.stringify(e.interval)} is not a duration such as 30s or 5m; it is checked every 60 s`);
  const timeout = durationSeconds(e.client?.timeout);
  if (e.client?.timeout !== undefined && timeout === undefined) note(`its client timeout ${JSON.stringify(e.client.timeout)} is not a duration; healthd's default is kept`);
  const base: Check = {
    intervalSeconds: clamp(interval ?? 60, 1, 86_400),
    ...(timeout !== undefined ? { timeoutMs: clamp(timeout * 1000, 1, 300_000) } : {}),
    ...alerting(e),
  };
  const parsed: Condition[] = [];
  for (const text of conditions) {
    const c = parseCondition(text);
    if (c) parsed.push(c);
    else note(`condition ${JSON.stringify(text)} is not [PLACEHOLDER] OP VALUE (len(), has() and the like have no healthd equivalent); left out`);
  }
  const skip = (c: Condition, why = "has no healthd equivalent") => note(`condition ${JSON.stringify(c.text)} ${why}; left out`);

  if (e.dns) return dnsCheck(e, url, parsed, base, skip, note);
  // A URL that starts with a variable is an http one, almost always: apply checks it once the variable is filled.
  const scheme = /^([a-z]+):\/\//.exec(url)?.[1] ?? (url.startsWith("${") ? "http" : undefined);
  if (scheme === "http" || scheme === "https") return httpCheck(e, url, parsed, base, skip, note);
  const helpers = { skip, note, latencyMs, days };
  // A tls:// endpoint that sends a body stays a tcp check over TLS, the kind that can send one (see below).
  if (scheme === "starttls" || (scheme === "tls" && !hasBody(e))) return tlsFromGatus(e, url, parsed, base, helpers);
  if (scheme === "icmp") return icmpFromGatus(url, parsed, base, helpers);
  if (scheme === "tcp" || scheme === "tls" || scheme === "ssh") {
    const at = /^[a-z]+:\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(url);
    const port = Number(at?.[2] ?? (scheme === "ssh" ? 22 : NaN));
    if (!at || !(port >= 1 && port <= 65535)) return void note(`its url ${JSON.stringify(url)} is not ${scheme}://host:port`);
    const alternative: Check = {};
    for (const c of parsed) {
      if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
      if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) alternative.maxLatencyMs = latencyMs(c.value);
      else if (c.placeholder === "CERTIFICATE_EXPIRATION" && scheme === "tls" && (c.op === ">" || c.op === ">=")) alternative.certValidDays = days(c.value);
      // Gatus writes the body and reads the answer as [BODY]: a tcp check's send and banner.
      else if (scheme !== "ssh" && hasBody(e) && answerCondition(c)) {
        if (alternative.banner) skip(c, secondAnswer);
        else alternative.banner = answerCondition(c);
      }
      else skip(c);
    }
    if (scheme === "ssh") alternative.banner = { contains: "SSH-" };
    const host = at[1]!.replace(/^\[|\]$/g, "");
    return {
      type: "tcp",
      host,
      port,
      // A tcp check reads \r \n \t and \\ in send as escapes; Gatus's body is sent as written.
      ...(scheme !== "ssh" && hasBody(e) ? { send: (e.body as string).replace(/\\/g, "\\\\") } : {}),
      ...(scheme === "tls" ? { tls: true, ...(e.client?.insecure === true ? { verifyTls: false } : {}) } : {}),
      ...(Object.keys(alternative).length > 0 ? { expect: [alternative] } : {}),
      ...base,
    };
  }
  if (scheme === "udp") return udpCheck(e, url, parsed, base, skip, note);
  if (scheme === "ws" || scheme === "wss") return websocketFromGatus(e, url, parsed, base, helpers);
  if (scheme === "grpc" || scheme === "grpcs") return grpcFromGatus(e, url, parsed, base, helpers);
  return void note(`its url ${JSON.stringify(url)} is a kind healthd does not check (it has http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql and redis checks and heartbeats); not carried over`);
}

/** udp://host:port with the body Gatus sends: healthd's udp check, [BODY] == text as the whole answer. */
function udpCheck(e: Endpoint, url: string, conditions: readonly Condition[], base: Check, skip: (c: Condition, why?: string) => void, note: (why: string) => void): Check | undefined {
  const at = /^udp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(url);
  const port = Number(at?.[2]);
  if (!at || !(port >= 1 && port <= 65535)) return void note(`its url ${JSON.stringify(url)} is not udp://host:port`);
  // Without a body Gatus only made a socket, which UDP always can: healthd's check wants an answer to something.
  if (typeof e.body !== "string" || e.body === "") return void note("it sends no body; a udp check sends a datagram its service answers: give it send, then apply");
  const alternative: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "CONNECTED" && c.op === "==" && c.value === "true") continue;
    if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) alternative.maxLatencyMs = latencyMs(c.value);
    else if (answerCondition(c)) {
      if (alternative.contains || alternative.matches) skip(c, secondAnswer);
      else Object.assign(alternative, answerCondition(c));
    }
    else skip(c);
  }
  return {
    type: "udp",
    host: at[1]!.replace(/^\[|\]$/g, ""),
    port,
    send: e.body,
    ...(Object.keys(alternative).length > 0 ? { expect: [alternative] } : {}),
    ...base,
  };
}

function alerting(e: Endpoint): Check {
  const alert = Array.isArray(e.alerts) ? e.alerts[0] : undefined;
  if (!alert) return { notify: false, ...(e.enabled === false ? { paused: true } : {}) };
  const failures = Number(alert["failure-threshold"] ?? 3);
  const successes = Number(alert["success-threshold"] ?? 2);
  return {
    notifyThreshold: clamp(Number.isFinite(failures) ? failures : 3, 1, 1000),
    recoverThreshold: clamp(Number.isFinite(successes) ? successes : 2, 1, 1000),
    ...(e.enabled === false ? { paused: true } : {}),
  };
}

/**
 * A condition on [BODY] as a tcp or udp answer's text: `== text` the whole answer, `== pat(...)` as an http
 * body's (bodyCondition); nothing else has an equivalent. Gatus trims the answer before comparing (a line's
 * CRLF), so the whole-answer patterns allow space around it. One such condition an endpoint: a second is left
 * out, said.
 */
function answerCondition(c: Condition): { contains: string } | { matches: string } | undefined {
  if (c.placeholder !== "BODY" || c.path !== null || c.op !== "==") return undefined;
  const trimmed = (pattern: string) => ({ matches: `^\\s*${pattern}\\s*$` });
  if (!/^[a-z]+\(/.test(c.value)) return trimmed(escaped(c.value));
  const body = bodyCondition(c);
  if (typeof body?.bodyContains === "string") return { contains: body.bodyContains };
  return typeof body?.bodyMatches === "string" ? trimmed(body.bodyMatches.slice(1, -1)) : undefined;
}

const secondAnswer = "is a second condition on [BODY]; the check keeps the first";
const hasBody = (e: Endpoint) => typeof e.body === "string" && e.body !== "";
const days = (value: string) => Math.ceil((durationSeconds(value) ?? Number(value) / 1000) / 86_400);
const latencyMs = (value: string) => clamp(/^\d+(\.\d+)?$/.test(value) ? Number(value) : (durationSeconds(value) ?? 0) * 1000, 1, 600_000);
const jsonValue = (value: string): unknown => (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value === "true" ? true : value === "false" ? false : value);

function httpCheck(
  e: Endpoint,
  url: string,
  conditions: readonly Condition[],
  base: Check,
  skip: (c: Condition, why?: string) => void,
  note: (why: string) => void,
): Check {
  const alternative: Check = {};
  const statuses: Condition[] = [];
  for (const c of conditions) {
    switch (c.placeholder) {
      case "STATUS":
        statuses.push(c);
        break;
      case "RESPONSE_TIME":
        if (c.op === "<" || c.op === "<=") alternative.maxLatencyMs = latencyMs(c.value);
        else skip(c);
        break;
      case "CERTIFICATE_EXPIRATION":
        if (c.op === ">" || c.op === ">=") alternative.certValidDays = days(c.value);
        else skip(c);
        break;
      case "DOMAIN_EXPIRATION":
        if (c.op === ">" || c.op === ">=") {
          base.domainWarnDays = clamp(days(c.value), 1, 3650);
          note(`condition ${JSON.stringify(c.text)} became domainWarnDays: ${base.domainWarnDays}, a DOMAIN warning rather than a failure`);
        } else skip(c);
        break;
      case "CONNECTED":
        if (!(c.op === "==" && c.value === "true")) skip(c);
        break;
      case "BODY": {
        // One alternative holds one json and one body pattern; another alternative would mean "or".
        const need = bodyCondition(c);
        const [key] = Object.keys(need ?? {});
        if (!need || !key) skip(c);
        else if (alternative[key] !== undefined) skip(c, `is a second ${key} condition (an alternative of healthd holds one)`);
        else alternative[key] = need[key];
        break;
      }
      default:
        skip(c);
    }
  }
  const status = statusOf(statuses, skip);
  if (status !== undefined) alternative.status = status;
  const graphql = e.graphql === true && typeof e.body === "string";
  const headers = { ...(typeof e.headers === "object" && e.headers !== null ? (e.headers as Record<string, unknown>) : {}) };
  if (graphql && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
  const body = graphql ? JSON.stringify({ query: e.body }) : typeof e.body === "string" ? e.body : undefined;
  // Nothing, or only 2xx: healthd's default expectation says the same.
  const needsExpect = Object.keys(alternative).length > 0 && JSON.stringify(alternative) !== JSON.stringify({ status: "2xx" });
  return {
    url,
    ...(typeof e.method === "string" && e.method.toUpperCase() !== "GET" ? { method: e.method.toUpperCase() } : {}),
    ...(Object.keys(headers).length > 0 ? { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)])) } : {}),
    ...(body !== undefined ? { body } : {}),
    ...(e.client?.["ignore-redirect"] === true ? { followRedirects: false } : {}),
    ...(e.client?.insecure === true ? { verifyTls: false } : {}),
    ...(needsExpect ? { expect: [alternative] } : {}),
    ...base,
  };
}

/** [BODY] conditions: a JSON path compared with a value, or the whole body against pat(...). */
function bodyCondition(c: Condition): Check | undefined {
  if (c.path !== null) {
    const path = c.path.startsWith("[") ? `$${c.path}` : `$.${c.path}`;
    if (/^(pat|any)\(/.test(c.value) || c.value.startsWith("len(")) return undefined;
    const ops: Record<string, string> = { "==": "equals", "!=": "notEquals", "<": "lessThan", ">": "greaterThan" };
    const value = jsonValue(c.value);
    const op = ops[c.op];
    if (!op || ((op === "lessThan" || op === "greaterThan") && typeof value !== "number")) return undefined;
    return { json: { path, [op]: value } };
  }
  const pattern = /^pat\((.*)\)$/.exec(c.value)?.[1];
  if (pattern === undefined || (c.op !== "==" && c.op !== "!=")) return undefined;
  const inner = /^\*([^*?]+)\*$/.exec(pattern)?.[1];
  if (inner !== undefined) return c.op === "==" ? { bodyContains: inner } : { bodyNotContains: inner };
  if (c.op !== "==") return undefined;
  const regex = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[\\s\\S]*").replace(/\?/g, "[\\s\\S]");
  return { bodyMatches: `^${regex}$` };
}

/** [STATUS] conditions as codes from 200 to 599 (1xx are never an answer), classes where whole. */
function statusOf(conditions: readonly Condition[], skip: (c: Condition, why?: string) => void): unknown {
  if (conditions.length === 0) return undefined;
  const any = conditions.find((c) => c.op === "==" && /^any\(/.test(c.value));
  if (any) {
    const codes = any.value.slice(4, -1).split(",").map((v) => Number(v.trim()));
    if (codes.every((c) => Number.isInteger(c) && c >= 100 && c <= 599)) return codes;
    skip(any);
    return undefined;
  }
  const tests = conditions.map((c) => {
    const n = Number(c.value);
    if (!Number.isInteger(n)) skip(c, "compares [STATUS] with something that is not a number");
    return (code: number) =>
      !Number.isInteger(n) || { "==": code === n, "!=": code !== n, "<": code < n, ">": code > n, "<=": code <= n, ">=": code >= n }[c.op];
  });
  const out: (number | string)[] = [];
  for (let code = 200; code <= 599; ) {
    const whole = Array.from({ length: 100 }, (_, i) => code + i).every((c) => tests.every((t) => t(c)));
    if (code % 100 === 0 && whole) {
      out.push(`${code / 100}xx`);
      code += 100;
    } else {
      if (tests.every((t) => t(code))) out.push(code);
      code++;
    }
  }
  if (out.length === 0 || out.length > 64) {
    skip(conditions[0]!, `together with the other [STATUS] conditions make ${out.length} codes (healthd takes 1 to 64 codes or classes)`);
    return undefined;
  }
  return out.length === 1 ? out[0] : out;
}

function dnsCheck(e: Endpoint, url: string, conditions: readonly Condition[], base: Check, skip: (c: Condition, why?: string) => void, note: (why: string) => void): Check | undefined {
  const name = e.dns?.["query-name"];
  if (typeof name !== "string" || name === "") return void note("its dns block has no query-name");
  const server = url.replace(/^(dns|udp|tcp):\/\//, "").replace(/\/$/, "");
  const alternative: Check = {};
  for (const c of conditions) {
    if (c.placeholder === "DNS_RCODE" && c.op === "==") alternative.rcode = c.value.toUpperCase();
    else if (c.placeholder === "RESPONSE_TIME" && (c.op === "<" || c.op === "<=")) alternative.maxLatencyMs = latencyMs(c.value);
    else if (c.placeholder === "BODY" && c.path === null && c.op === "==" && !/^(pat|any)\(/.test(c.value)) alternative.answers = { includes: c.value };
    else if (c.placeholder === "BODY" && c.path === null && c.op === "==" && /^pat\(\*([^*?]+)\*\)$/.test(c.value)) alternative.answers = { includes: c.value.slice(5, -2) };
    else skip(c);
  }
  return {
    type: "dns",
    name,
    recordType: typeof e.dns?.["query-type"] === "string" ? e.dns["query-type"].toUpperCase() : "A",
    ...(server ? { server } : {}),
    ...(Object.keys(alternative).length > 0 ? { expect: [alternative] } : {}),
    ...base,
  };
}
