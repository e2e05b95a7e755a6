/**
 * Uptime Kuma's postgres, mysql and redis monitors (server/monitor-types/postgres.js, mysql.js, redis.js): its
 * databaseConnectionString and databaseQuery, mysql's password in radiusPassword (Kuma's own reuse of the
 * column), mysql's conditions on the single value, and redis's ignoreTls. Kuma keeps the password in the
 * connection string; healthd never writes one down: it becomes `${NAME}`, a variable named for the user,
 * host and port it logs in to (one per login, shared by the monitors that use it), and the import says which
 * to set. What healthd does not take (a parameter, a condition) is said.
 */
import { checkSecretPrefix, databaseSchemes, readConnection, type DatabaseKind } from "../domain/schema/database.ts";
import type { Check } from "./common.ts";

export interface DatabaseMonitor {
  readonly type: DatabaseKind;
  readonly databaseConnectionString: string | null;
  readonly databaseQuery: string | null;
  /** A mysql monitor's password, when given apart from the connection string. */
  readonly radiusPassword: string | null;
  /** Kuma 2's conditions (JSON), on mysql's single value `result`. */
  readonly conditions: string | null;
  readonly ignoreTls: boolean;
}

/** The TLS parameters healthd takes, by what Kuma's connection strings (pg-connection-string, mysql2) may say. */
const tlsParameters: Readonly<Record<string, string>> = { sslmode: "sslmode", ssl: "sslmode", "ssl-mode": "ssl-mode" };

/** A check's own fields (url, query, expect) from a Kuma database monitor, or undefined with what was wrong said. */
export function databaseCheck(m: DatabaseMonitor, note: (why: string) => void): Check | undefined {
  const raw = m.databaseConnectionString?.trim();
  if (!raw) return void note("it has no connection string");
  // The user information ends at the last @ before the host: people write passwords with / and @ unescaped, and a
  // URL parser would take part of such a password for the host or the path (and print it).
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:(.*)@)?([^@/?#]*)([^?#]*)(?:\?([^#]*))?$/s.exec(raw);
  if (!match || !databaseSchemes[m.type].includes(match[1]!.toLowerCase())) {
    return void note(`its connection string is not a ${databaseSchemes[m.type].map((s) => `${s}://`).join(" or ")} URL`);
  }
  const [, scheme, info = "", hostPort = "", path = "", query = ""] = match;
  const colon = info.indexOf(":");
  const [user, written] = colon < 0 ? [info, ""] : [info.slice(0, colon), info.slice(colon + 1)];
  const password = m.type === "mysql" && m.radiusPassword ? m.radiusPassword : written;
  let userinfo = user;
  if (password !== "") {
    const name = variableFor(m.type, user, hostPort);
    userinfo = `${user}:\${${name}}`;
    note(`its password is not written here: set ${name} to it in healthd's environment (systemd: EnvironmentFile=), where the check reads it`);
  }
  const kept: string[] = [];
  for (const pair of query.split("&").filter(Boolean)) {
    const [key = "", value = ""] = pair.split("=");
    const name = tlsParameters[key];
    const mapped = name === "sslmode" && (value === "true" || value === "prefer" || value === "allow") ? "require" : value;
    if (name === (m.type === "postgres" ? "sslmode" : "ssl-mode") && readConnection(m.type, `${scheme}://x@h/?${name}=${mapped}`).ok) kept.push(`${name}=${mapped}`);
    else note(`its connection string's ${pair} is not carried over (a ${m.type} check takes ${m.type === "postgres" ? "sslmode" : m.type === "mysql" ? "ssl-mode" : "rediss:// for TLS"})`);
  }
  if (m.type === "redis" && scheme === "rediss" && m.ignoreTls) note("it ignored TLS errors; healthd's rediss:// verifies the certificate");
  const url = `${scheme}://${userinfo === "" ? "" : `${userinfo}@`}${hostPort}${path}${kept.length > 0 ? `?${kept.join("&")}` : ""}`;
  const read = readConnection(m.type, url);
  if (!read.ok) return void note(`its connection string, as healthd would write it (${url}), ${read.problem}`);
  // Kuma's redis monitor only PINGs (its query is not used); SQL runs the query, SELECT 1 when it has none.
  const check: Check = { type: m.type, url };
  if (m.type !== "redis" && m.databaseQuery?.trim()) check.query = m.databaseQuery.trim();
  const expect = conditionsOf(m, note);
  if (expect) check.expect = [expect];
  return check;
}

/** The variable a login's password is read from: HEALTHD_SECRET_POSTGRES_APP_DB_EXAMPLE_ORG_5432. */
function variableFor(kind: DatabaseKind, user: string, hostPort: string): string {
  const part = (text: string) => text.toUpperCase().replace(/[^A-Z0-9]+/g, "_").replace(/^_+|_+$/g, "");
  return [`${checkSecretPrefix}${kind.toUpperCase()}`, part(decodeURIComponent(user)), part(hostPort)].filter(Boolean).join("_");
}

/** Kuma's conditions on mysql's `result`, when they are all "and" and ones healthd has (equals, contains). */
function conditionsOf(m: DatabaseMonitor, note: (why: string) => void): Check | undefined {
  if (m.type !== "mysql" || !m.conditions) return undefined;
  let list: unknown;
  try {
    list = JSON.parse(m.conditions);
  } catch {
    return void note("its conditions are not JSON; not carried over");
  }
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const alternative: Check = {};
  for (const c of list as { type?: string; variable?: string; operator?: string; value?: string; andOr?: string }[]) {
    const op = c.operator === "equals" ? "equals" : c.operator === "contains" ? "contains" : undefined;
    if (c.type !== "expression" || c.variable !== "result" || op === undefined || c.andOr === "or" || alternative[op] !== undefined) {
      return void note("its conditions are more than result equals or contains, all joined by and; not carried over: add expect to the check");
    }
    alternative[op] = String(c.value ?? "");
  }
  return alternative;
}
