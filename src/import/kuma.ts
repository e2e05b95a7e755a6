/**
 * Uptime Kuma: its SQLite database (kuma.db, 1.x and 2.x) or the JSON backup of 1.x, as monitors. Read from
 * Kuma's own schema (db/kuma.sql, db/knex_migrations, server/model/monitor.js): a monitor row has snake_case
 * columns (accepted_statuscodes_json, ignore_tls...), the backup's monitorList camelCase fields for some.
 *
 * What carries over: http, keyword, json-query (a plain JSONata path), port (tcp), dns, ping (icmp), postgres,
 * mysql, redis (kuma-databases.ts) and push (heartbeat) monitors, grpc-keyword ones of the standard health service
 * and websocket-upgrade ones, smtp ones over TLS (kuma-net.ts); groups become servers (monitors outside any group go to `defaultServer`); interval, timeout,
 * retries (notifyThreshold; a push monitor's go into its grace), resend (remindEveryMinutes), paused, a push
 * monitor's token (pushToken: its push URL keeps working), accepted status codes, redirects, TLS
 * verification, certificate expiry warnings, method, headers, body and basic auth; notification settings of
 * the kinds healthd has channels for become channels, named by the monitors that used them; tags ("name", or
 * "name:value" when the monitor gives a value). The rest is noted.
 */
import { pushTokenPattern } from "../domain/schema/heartbeat.ts";
import { clamp, DocumentBuilder, NotThatFormat, slug, type Check, type Imported } from "./common.ts";
import { channelsFrom } from "./kuma-channels.ts";
import { grpcFromKuma, kumaNetFrom, smtpFromKuma, websocketFromKuma, type KumaNet } from "./kuma-net.ts";
import { backupTags, bool, databaseTags, num, str } from "./kuma-values.ts";
import { databaseCheck } from "./kuma-databases.ts";

/** Kuma's newest migration healthd was written against: a database with later ones is newer than it knows. */
export const newestKnownMigration = "2025-12-29-0000-remove-line-notify.js";

/** A monitor, whichever way Kuma wrote it down. */
interface Monitor {
  readonly id: number;
  readonly name: string;
  readonly type: string;
  readonly active: boolean;
  readonly parent: number | null;
  readonly interval: number;
  readonly retryInterval: number;
  readonly resendInterval: number;
  readonly maxretries: number;
  readonly timeout: number | null;
  readonly url: string | null;
  readonly method: string | null;
  readonly headers: string | null;
  readonly body: string | null;
  readonly bodyEncoding: string | null;
  readonly basicAuthUser: string | null;
  readonly basicAuthPass: string | null;
  readonly authMethod: string | null;
  readonly hostname: string | null;
  readonly port: number | null;
  readonly keyword: string | null;
  readonly invertKeyword: boolean;
  readonly jsonPath: string | null;
  readonly jsonPathOperator: string | null;
  readonly expectedValue: string | null;
  readonly ignoreTls: boolean;
  readonly upsideDown: boolean;
  readonly maxredirects: number;
  readonly acceptedStatuscodes: readonly string[];
  readonly dnsResolveType: string | null;
  /** A ping monitor's echoes a beat (Kuma 2: ping_count; before, one). */
  readonly pingCount: number;
  readonly dnsResolveServer: string | null;
  readonly expiryNotification: boolean;
  /** A push monitor's token: its URL is /api/push/{pushToken}. */
  readonly pushToken: string | null;
  /** A database monitor's (postgres, mysql, redis): its connection, query, mysql's password and conditions. */
  readonly databaseConnectionString: string | null;
  readonly databaseQuery: string | null;
  readonly radiusPassword: string | null;
  readonly conditions: string | null;
  /** The ids of the notification settings it notifies through. */
  readonly notifications: readonly number[];
  /** Its tags, "name" or "name:value" (Kuma's tag and the value the monitor gives it). */
  readonly tags: readonly string[];
  /** A grpc-keyword or websocket-upgrade monitor's own columns. */
  readonly net: KumaNet;
}

/** A monitor from a row of Kuma's `monitor` table (`r`) or an entry of a backup's monitorList: both spellings. */
function monitorFrom(r: Record<string, unknown>): Monitor {
  const pick = (...names: string[]) => names.map((n) => r[n]).find((v) => v !== undefined && v !== null);
  let codes = pick("accepted_statuscodes", "accepted_statuscodes_json") ?? ["200-299"];
  if (typeof codes === "string") {
    try {
      codes = JSON.parse(codes);
    } catch {
      codes = [codes];
    }
  }
  return {
    id: num(r.id, 0),
    name: str(r.name) ?? `monitor ${String(r.id)}`,
    type: str(r.type) ?? "http",
    active: r.active === undefined ? true : bool(r.active),
    parent: r.parent == null ? null : num(r.parent, 0),
    interval: num(r.interval, 60),
    retryInterval: num(pick("retryInterval", "retry_interval"), 0),
    resendInterval: num(pick("resendInterval", "resend_interval"), 0),
    maxretries: num(r.maxretries, 0),
    timeout: r.timeout == null ? null : num(r.timeout, 0),
    url: str(r.url),
    method: str(r.method),
    headers: str(r.headers),
    body: str(r.body),
    bodyEncoding: str(pick("httpBodyEncoding", "http_body_encoding")),
    basicAuthUser: str(pick("basic_auth_user", "basicAuthUser")),
    basicAuthPass: str(pick("basic_auth_pass", "basicAuthPass")),
    authMethod: str(pick("authMethod", "auth_method")),
    hostname: str(r.hostname),
    port: r.port == null ? null : num(r.port, 0),
    keyword: str(r.keyword),
    invertKeyword: bool(pick("invertKeyword", "invert_keyword")),
    jsonPath: str(pick("jsonPath", "json_path")),
    jsonPathOperator: str(pick("jsonPathOperator", "json_path_operator")),
    expectedValue: str(pick("expectedValue", "expected_value")),
    ignoreTls: bool(pick("ignoreTls", "ignore_tls")),
    upsideDown: bool(pick("upsideDown", "upside_down")),
    maxredirects: num(r.maxredirects, 10),
    acceptedStatuscodes: Array.isArray(codes) ? codes.map(String) : ["200-299"],
    dnsResolveType: str(pick("dns_resolve_type", "dnsResolveType")),
    pingCount: num(pick("ping_count", "pingCount"), 1),
    dnsResolveServer: str(pick("dns_resolve_server", "dnsResolveServer")),
    expiryNotification: bool(pick("expiryNotification", "expiry_notification")),
    pushToken: str(pick("push_token", "pushToken")),
    databaseConnectionString: str(pick("database_connection_string", "databaseConnectionString")),
    databaseQuery: str(pick("database_query", "databaseQuery")),
    radiusPassword: str(pick("radius_password", "radiusPassword")),
    conditions: str(r.conditions),
    // A backup lists them on the monitor ({"1": true}); kuma.db in monitor_notification (added by the caller).
    net: kumaNetFrom(r),
    tags: backupTags(r.tags),
    notifications: Object.entries((r.notificationIDList ?? {}) as Record<string, unknown>).filter(([, on]) => bool(on)).map(([id]) => Number(id)),
  };
}

/** What was read from a Kuma database: the names of all its tables, and the rows of those asked for. */
export function fromKumaDatabase(database: { names: readonly string[]; rows: ReadonlyMap<string, Record<string, unknown>[]> }, defaultServer: string): Imported {
  const tables = database.rows;
  const monitors = tables.get("monitor");
  if (!monitors) {
    const names = database.names.slice(0, 10).join(", ") + (database.names.length > 10 ? ", ..." : "");
    throw new NotThatFormat(`it is a SQLite database without a monitor table (its tables: ${names || "none"}), so not Uptime Kuma's kuma.db`);
  }
  const builder = new DocumentBuilder();
  const migrations = (tables.get("knex_migrations") ?? []).map((m) => String(m.name)).sort();
  const newest = migrations.at(-1);
  if (newest !== undefined && newest > newestKnownMigration) {
    builder.note("kuma.db", `its schema is newer than healthd knows (migration ${newest}, after ${newestKnownMigration}); what it could read is carried over`);
  }
  const channels = channelsFrom(tables.get("notification") ?? [], builder);
  const links = new Map<number, number[]>();
  for (const link of tables.get("monitor_notification") ?? []) {
    const monitor = num(link.monitor_id, 0);
    links.set(monitor, [...(links.get(monitor) ?? []), num(link.notification_id, 0)]);
  }
  const tags = databaseTags(tables.get("tag") ?? [], tables.get("monitor_tag") ?? []);
  return carry(monitors.map((r) => ({ ...monitorFrom(r), notifications: links.get(num(r.id, 0)) ?? [], tags: tags.get(num(r.id, 0)) ?? [] })), defaultServer, builder, channels);
}

/** Kuma 1.x's JSON backup: {version, notificationList, monitorList}. */
export function fromKumaBackup(data: unknown, defaultServer: string): Imported {
  const backup = data as { version?: unknown; monitorList?: unknown; notificationList?: unknown } | null;
  if (typeof backup !== "object" || backup === null || !Array.isArray(backup.monitorList)) {
    const keys = typeof backup === "object" && backup !== null ? Object.keys(backup).slice(0, 8).join(", ") : typeof backup;
    throw new NotThatFormat(`it is JSON without a monitorList (it has: ${keys || "nothing"}), so not an Uptime Kuma backup; export one from Settings > Backup, or give kuma.db`);
  }
  const builder = new DocumentBuilder();
  const channels = channelsFrom(Array.isArray(backup.notificationList) ? (backup.notificationList as Record<string, unknown>[]) : [], builder);
  return carry((backup.monitorList as Record<string, unknown>[]).map(monitorFrom), defaultServer, builder, channels);
}

function carry(monitors: readonly Monitor[], defaultServer: string, builder: DocumentBuilder, channels: ReadonlyMap<number, string>): Imported {
  const byId = new Map(monitors.map((m) => [m.id, m]));
  /** The server of a monitor: its nearest group, by the group's name. */
  const serverOf = (m: Monitor): string => {
    const seen = new Set<number>();
    for (let parent = m.parent; parent !== null && !seen.has(parent); parent = byId.get(parent)?.parent ?? null) {
      seen.add(parent);
      const group = byId.get(parent);
      if (group?.type === "group") return groupId(group);
    }
    return defaultServer;
  };
  const groupId = (g: Monitor) => slug(g.name, `group-${g.id}`);
  for (const m of monitors) if (m.type === "group") builder.server(groupId(m), m.name);
  for (const m of monitors) {
    if (m.type === "group") continue;
    const what = `monitor ${JSON.stringify(m.name)} (${m.type})`;
    if (m.upsideDown) {
      builder.note(what, "upside-down mode (up when the check fails) has no healthd equivalent; not carried over");
      continue;
    }
    const check = checkOf(m, (why) => builder.note(what, why));
    const named = m.notifications.flatMap((id) => channels.get(id) ?? []);
    if (check) builder.add(serverOf(m), m.name, named.length > 0 ? { ...check, channels: named } : check, `monitor-${m.id}`, undefined, m.tags);
  }
  uniquePushTokens(builder);
  for (const [id, server] of Object.entries(builder.servers)) if (server.services.length === 0) delete builder.servers[id];
  return builder.finish();
}

/** A cloned Kuma monitor keeps its original's push token, and Kuma pings only one of them: so does healthd. */
function uniquePushTokens(builder: DocumentBuilder): void {
  const owners = new Map<string, string>();
  for (const [serverId, server] of Object.entries(builder.servers)) {
    for (const service of server.services) {
      const token = service.check.pushToken;
      if (typeof token !== "string") continue;
      const owner = owners.get(token);
      if (owner === undefined) owners.set(token, `${serverId}/${service.id}`);
      else {
        service.check.pushToken = true;
        builder.note(`${serverId}/${service.id}`, `its push token is also ${owner}'s, which keeps it; healthd makes this one a new one (pushToken: true)`);
      }
    }
  }
}

/** What every kind takes from a monitor: reminders and pause. */
function alerting(m: Monitor): Check {
  const interval = clamp(m.interval, 20, 86_400);
  return {
    ...(m.resendInterval > 0 ? { remindEveryMinutes: clamp((m.resendInterval * interval) / 60, 1, 10_080) } : {}),
    ...(m.active ? {} : { paused: true }),
  };
}

/**
 * An active check's retries. Kuma alerts on the failure after maxretries retries (server/model/monitor.js: a
 * failure while retries < maxretries is PENDING, the next one DOWN), so on failure N + 1; healthd alerts when
 * the failures in a row exceed notifyThreshold, so on failure notifyThreshold + 1: the same N. Kuma retries
 * every retryInterval; healthd keeps checking at the interval, so a different retryInterval is said.
 */
function retries(m: Monitor, note: (why: string) => void): Check {
  const retryEvery = m.retryInterval > 0 ? m.retryInterval : m.interval;
  if (m.maxretries > 0 && retryEvery !== m.interval) {
    const n = m.maxretries;
    note(
      `its retry interval (${m.retryInterval} s) does not carry over: healthd has none and keeps checking every ${m.interval} s while it fails, so the alert on the same check comes after ${n} × ${m.interval} s of retries rather than ${n} × ${m.retryInterval} s`,
    );
  }
  return { notifyThreshold: clamp(m.maxretries, 0, 1000) };
}

function active(m: Monitor): Check {
  const interval = clamp(m.interval, 1, 86_400);
  // Kuma's default timeout is 80 % of the interval, at most 48 s.
  const timeout = m.timeout !== null && m.timeout > 0 ? m.timeout : Math.min(interval * 0.8, 48);
  return { intervalSeconds: interval, timeoutMs: clamp(timeout * 1000, 1, 300_000) };
}

function checkOf(m: Monitor, note: (why: string) => void): Check | undefined {
  switch (m.type) {
    case "http":
    case "keyword":
    case "json-query":
      return httpCheck(m, note);
    case "port":
      if (!m.hostname || !m.port) return void note("it has no hostname or port");
      return { type: "tcp", host: m.hostname, port: m.port, ...active(m), ...retries(m, note), ...alerting(m) };
    case "dns": {
      if (!m.hostname) return void note("it has no hostname");
      const server = m.dnsResolveServer?.split(",")[0]?.trim();
      const port = m.port && m.port !== 53 ? m.port : null;
      const at = server ? (port ? (server.includes(":") ? `[${server}]:${port}` : `${server}:${port}`) : server) : null;
      return { type: "dns", name: m.hostname, recordType: m.dnsResolveType ?? "A", ...(at ? { server: at } : {}), ...active(m), ...retries(m, note), ...alerting(m) };
    }
    case "ping":
      // Kuma's monitor is down when its echo does not come back (any of its ping_count): no loss allowed.
      if (!m.hostname) return void note("it has no hostname");
      return { type: "icmp", host: m.hostname, count: clamp(m.pingCount, 1, 10), ...active(m), ...retries(m, note), ...alerting(m) };
    case "push": {
      // The token carries over, so the job's push URL keeps working once its base URL is healthd's.
      const kept = m.pushToken !== null && pushTokenPattern.test(m.pushToken);
      if (!kept) note(`its push token is ${m.pushToken === null ? "missing" : "not one healthd takes"}: healthd makes a new one (pushToken: true)`);
      // Kuma looks 1 s after a push's interval has run out (server/model/monitor.js: bufferTime), and from
      // then on every retryInterval (or interval), alerting on the look after maxretries retries. healthd
      // alerts on a heartbeat's first missed deadline (notifyThreshold 0, its default: a further missed
      // period comes a whole period later), so the retries go into the grace: the deadline is Kuma's alert.
      const retryEvery = m.retryInterval > 0 ? m.retryInterval : m.interval;
      const period = clamp(m.interval, 1, 31_536_000);
      const grace = clamp(1 + m.maxretries * retryEvery, 1, 31_536_000);
      return { type: "heartbeat", periodSeconds: period, graceSeconds: grace, pushToken: kept ? m.pushToken! : true, ...alerting(m) };
    }
    case "grpc-keyword": {
      const grpc = grpcFromKuma(m, note);
      return grpc && { ...grpc, ...active(m), ...retries(m, note), ...alerting(m) };
    }
    case "websocket-upgrade": {
      if (!m.url) return void note("it has no URL");
      const headers = headersOf(m, note);
      return { type: "websocket", url: m.url, ...websocketFromKuma(m, note), ...(Object.keys(headers).length > 0 ? { headers } : {}), ...active(m), ...retries(m, note), ...alerting(m) };
    }
    case "smtp": {
      const smtp = smtpFromKuma(m, note);
      return smtp && { ...smtp, ...active(m), ...retries(m, note), ...alerting(m) };
    }
    case "postgres":
    case "mysql":
    case "redis": {
      const own = databaseCheck({ ...m, type: m.type }, note);
      return own && { ...own, ...active(m), ...retries(m, note), ...alerting(m) };
    }
    default:
      return void note(`healthd has no ${m.type} check (it has http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql, redis and heartbeat); not carried over`);
  }
}

/** A monitor's headers, with its basic authentication as one. */
function headersOf(m: Monitor, note: (why: string) => void): Record<string, string> {
  const headers: Record<string, string> = {};
  if (m.headers) {
    try {
      const parsed = JSON.parse(m.headers) as unknown;
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
      for (const [name, value] of Object.entries(parsed)) headers[name.toLowerCase()] = String(value);
    } catch {
      note("its headers are not a JSON object; left out");
    }
  }
  if (m.basicAuthUser !== null && (m.authMethod === null || m.authMethod === "basic")) {
    headers.authorization = `Basic ${Buffer.from(`${m.basicAuthUser}:${m.basicAuthPass ?? ""}`).toString("base64")}`;
  } else if (m.authMethod !== null && m.authMethod !== "basic") {
    note(`its ${m.authMethod} authentication does not carry over; left out`);
  }
  return headers;
}

function httpCheck(m: Monitor, note: (why: string) => void): Check | undefined {
  if (!m.url) return void note("it has no URL");
  const headers = headersOf(m, note);
  if (m.body && m.bodyEncoding === "json" && !("content-type" in headers)) headers["content-type"] = "application/json";
  const status = statusOf(m.acceptedStatuscodes, note);
  const alternative: Check = { status };
  if (m.type === "keyword") {
    if (!m.keyword) return void note("it has no keyword");
    alternative[m.invertKeyword ? "bodyNotContains" : "bodyContains"] = m.keyword;
  }
  if (m.type === "json-query") {
    const json = jsonCondition(m, note);
    if (!json) return undefined;
    alternative.json = json;
  }
  return {
    url: m.url,
    ...(m.method && m.method.toUpperCase() !== "GET" ? { method: m.method.toUpperCase() } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(m.body ? { body: m.body } : {}),
    ...(m.maxredirects === 0 ? { followRedirects: false } : {}),
    ...(m.ignoreTls ? { verifyTls: false } : {}),
    ...(m.expiryNotification && m.url.startsWith("https:") && !m.ignoreTls ? { certWarnDays: 21 } : {}),
    ...(JSON.stringify(alternative) === JSON.stringify({ status: "2xx" }) ? {} : { expect: [alternative] }),
    ...active(m),
    ...retries(m, note),
    ...alerting(m),
  };
}

/** Kuma's accepted codes ("200-299", "301", "400-404") as healthd's: classes where a range is a whole class. */
function statusOf(codes: readonly string[], note: (why: string) => void): unknown {
  const out: (number | string)[] = [];
  for (const code of codes) {
    const range = /^(\d{3})(?:-(\d{3}))?$/.exec(code.trim());
    if (!range) {
      note(`accepted status code ${JSON.stringify(code)} is not a code or a range; left out`);
      continue;
    }
    const [from, to] = [Number(range[1]), Number(range[2] ?? range[1])];
    for (let c = from; c <= Math.min(to, 599); ) {
      if (c % 100 === 0 && c + 99 <= to && c >= 200) {
        out.push(`${c / 100}xx`);
        c += 100;
      } else out.push(c++);
    }
  }
  if (out.length === 0) return "2xx";
  if (out.length > 64) {
    note(`its accepted status codes make ${out.length} codes; healthd takes 64: the first 64 are kept`);
    return out.slice(0, 64);
  }
  return out.length === 1 ? out[0] : out;
}

/** A json-query monitor's JSONata path and expected value, when the path is a plain one (a.b[0].c). */
function jsonCondition(m: Monitor, note: (why: string) => void): Check | undefined {
  const path = m.jsonPath?.trim().replace(/^\$\.?/, "");
  if (!path || !/^[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?)*$/.test(path)) {
    return void note(`its JSON query ${JSON.stringify(m.jsonPath)} is a JSONata expression, not a plain path (a.b[0].c); not carried over`);
  }
  const expected = m.expectedValue ?? "";
  // Kuma compares the query's result with the expected text; a number or boolean is compared as one.
  const value = /^-?\d+(\.\d+)?$/.test(expected) ? Number(expected) : expected === "true" ? true : expected === "false" ? false : expected;
  const operator = m.jsonPathOperator ?? "==";
  const ops: Record<string, string> = { "==": "equals", "!=": "notEquals", "<": "lessThan", ">": "greaterThan" };
  const op = ops[operator];
  if (!op || ((op === "lessThan" || op === "greaterThan") && typeof value !== "number")) {
    return void note(`its JSON query operator ${operator} with ${JSON.stringify(expected)} has no healthd equivalent (==, != and < > with numbers do); not carried over`);
  }
  return { path: `$.${path}`, [op]: value };
}
