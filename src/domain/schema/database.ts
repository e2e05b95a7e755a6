/**
 * Database checks (postgres, mysql, redis): a connection URL, a query (`SELECT 1` or `PING` when left out), and
 * expectations on the first row or answer, as text. The URL's password is never written in it: it is `${NAME}`,
 * a variable of healthd's environment read when the check runs (as a channel's secrets are), so the database,
 * GET answers, exports and entries only ever hold the variable's name. A password written out is refused: it
 * would be stored, answered to anyone who may read the check, and written into every export and backup.
 */
import { z } from "zod";
import { variablePattern } from "./channel.ts";
import { integer, limits, regex } from "./common.ts";

export const databaseKinds = ["postgres", "mysql", "redis"] as const;
export type DatabaseKind = (typeof databaseKinds)[number];

/** The URL schemes of each kind, its first the one it is shown with; MariaDB speaks MySQL's protocol. */
export const databaseSchemes: Readonly<Record<DatabaseKind, readonly string[]>> = {
  postgres: ["postgres", "postgresql"],
  mysql: ["mysql", "mariadb"],
  redis: ["redis", "rediss"],
};
export const defaultPorts: Readonly<Record<DatabaseKind, number>> = { postgres: 5432, mysql: 3306, redis: 6379 };
export const defaultQueries: Readonly<Record<DatabaseKind, string>> = { postgres: "SELECT 1", mysql: "SELECT 1", redis: "PING" };
const examples: Readonly<Record<DatabaseKind, string>> = {
  postgres: "postgres://healthd:${HEALTHD_SECRET_PG}@db.example.org:5432/app",
  mysql: "mysql://healthd:${HEALTHD_SECRET_MYSQL}@db.example.org:3306/app",
  redis: "redis://:${HEALTHD_SECRET_REDIS}@cache.example.org:6379/0",
};

/**
 * The query parameters each kind takes, with their values: TLS, named as the kind's own client names it. Any
 * other is refused: pg would read sslcert/sslkey as files of the daemon's machine, named by whoever may write checks.
 */
const parameters: Readonly<Record<DatabaseKind, Readonly<Record<string, readonly string[]>>>> = {
  postgres: { sslmode: ["disable", "require", "verify-full"] },
  mysql: { "ssl-mode": ["DISABLED", "REQUIRED", "VERIFY_IDENTITY"] },
  redis: {},
};

/** How a check reaches its database, read from its URL. */
export interface Connection {
  readonly host: string;
  readonly port: number;
  /** null: the client's default (redis: the default user; postgres and mysql need one). */
  readonly user: string | null;
  /** The `${NAME}` the password is read from, or null for none. */
  readonly password: string | null;
  /** postgres and mysql: the database's name; redis: its number as text. null: the server's default. */
  readonly database: string | null;
  /** none; encrypted without checking the certificate (sslmode=require); or verified for the host's name. */
  readonly tls: "none" | "unverified" | "verified";
}

const wholeVariable = new RegExp(`^${variablePattern.source}$`);
/**
 * The variables a check may read its password from. A check is written by any write token, even one limited to a
 * server, and can send what it reads to a host of its choosing: were any name allowed, such a token could read
 * HEALTHD_TOKEN, HEALTHD_DB's password or the cloud's keys. Channels may name any variable: only admins write them.
 */
export const checkSecretPrefix = "HEALTHD_SECRET_";

/** The URL read for `kind`, or the problem with it, in words a PUT's 400 or `healthd check` can print. */
export function readConnection(kind: DatabaseKind, url: string): { ok: true; connection: Connection } | { ok: false; problem: string } {
  const bad = (problem: string) => ({ ok: false as const, problem });
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return bad(`must be a ${databaseSchemes[kind][0]}:// URL, such as ${examples[kind]}`);
  if (!databaseSchemes[kind].includes(scheme)) {
    const other = databaseKinds.find((k) => databaseSchemes[k].includes(scheme));
    return bad(other ? `is a ${scheme}:// URL, which a ${other} check takes: set type: ${other}` : `must start with ${databaseSchemes[kind].map((s) => `${s}://`).join(" or ")} (got ${scheme}://)`);
  }
  // The password is taken out before the URL is parsed: a URL parser would percent-encode ${NAME}'s braces.
  const rest = url.slice(scheme.length + 3);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const at = authority.lastIndexOf("@");
  const userinfo = at < 0 ? null : authority.slice(0, at);
  const colon = userinfo?.indexOf(":") ?? -1;
  const password = userinfo !== null && colon >= 0 ? userinfo.slice(colon + 1) : null;
  if (password !== null && password !== "") {
    if (!wholeVariable.test(password)) {
      return bad(
        `holds a password: write it as \${${checkSecretPrefix}NAME}, a variable of healthd's environment (${examples[kind]}), and set it where healthd runs (systemd: EnvironmentFile=), in a file for healthd apply as $\${${checkSecretPrefix}NAME}, which apply keeps as \${${checkSecretPrefix}NAME}; a password written here would be stored, shown by GET and written by export`,
      );
    }
    if (password.includes(":-")) return bad("gives its password variable a default (${NAME:-...}), which is a password written here: write ${NAME} alone");
    if (!password.startsWith(`\${${checkSecretPrefix}`)) {
      return bad(
        `reads its password from ${password}, which a check may not read: name the variable ${checkSecretPrefix}something (such as \${${checkSecretPrefix}PG}), so that a check can read only what was set for checks, never healthd's own token or other secrets of its environment`,
      );
    }
  }
  let parsed: URL;
  try {
    const user = userinfo === null ? "" : (colon >= 0 ? userinfo.slice(0, colon) : userinfo) + "@";
    parsed = new URL(`${scheme}://${user}${rest.slice(at + 1)}`);
  } catch {
    return bad(`is not a URL that can be read; write it as ${examples[kind]}`);
  }
  if (parsed.hostname === "") return bad(`names no host; write it as ${examples[kind]}`);
  if (parsed.hash !== "") return bad("has a #fragment, which means nothing here; remove it");
  const port = parsed.port === "" ? defaultPorts[kind] : Number(parsed.port);
  let user: string | null;
  try {
    user = parsed.username === "" ? null : decodeURIComponent(parsed.username);
  } catch {
    return bad("has a user name with a broken %-escape");
  }
  if (user === null && kind !== "redis") return bad(`names no user; write it as ${examples[kind]}`);
  const path = parsed.pathname.replace(/^\//, "");
  let database: string | null = null;
  if (path !== "") {
    if (kind === "redis") {
      if (!/^\d{1,5}$/.test(path)) return bad("names a database that is not a number: a redis URL's path is the database's number (redis://cache:6379/0)");
    } else if (path.includes("/")) return bad("names a database with a / in it: the path is one database's name");
    try {
      database = decodeURIComponent(path);
    } catch {
      return bad("has a database name with a broken %-escape");
    }
  }
  let tls: Connection["tls"] = scheme === "rediss" ? "verified" : "none";
  const allowed = parameters[kind];
  for (const [name, value] of parsed.searchParams) {
    const values = allowed[name];
    if (!values) {
      const known = Object.keys(allowed);
      return bad(`has the parameter ${name}, which healthd does not take (${known.length > 0 ? `a ${kind} URL takes ${known.join(", ")}` : `a ${kind} URL takes none; rediss:// is TLS`})`);
    }
    if (!values.includes(value)) return bad(`has ${name}=${value}; ${name} is one of ${values.join(", ")}`);
    tls = value === values[0] ? "none" : value === values[1] ? "unverified" : "verified";
  }
  const bare = parsed.hostname.replace(/^\[|\]$/g, "");
  return { ok: true, connection: { host: bare, port, user, password: password === "" ? null : password, database, tls } };
}

/** The URL as people read it (a target, a title): without its password, even a variable's name. */
export function shownUrl(kind: DatabaseKind, url: string): string {
  const read = readConnection(kind, url);
  if (!read.ok) return url;
  const { host, port, user, database } = read.connection;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)![1]!.toLowerCase();
  const where = host.includes(":") ? `[${host}]` : host;
  return `${scheme}://${user === null ? "" : `${encodeURIComponent(user)}@`}${where}:${port}${database === null ? "" : `/${encodeURIComponent(database)}`}`;
}

/** Redis commands a check may not send: they end the session, change its login, or never answer once. */
const refusedCommands = new Set(["AUTH", "HELLO", "SELECT", "QUIT", "RESET", "MONITOR", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "SYNC", "PSYNC", "SHUTDOWN"]);

/**
 * A redis query as the words of its command: split at spaces, a word in double quotes may hold spaces (and \"
 * and \\). Pure; the problem in words when it cannot be read.
 */
export function redisWords(query: string): { ok: true; words: string[] } | { ok: false; problem: string } {
  const words: string[] = [];
  const pattern = /\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))/gy;
  let match: RegExpExecArray | null;
  let end = 0;
  while ((match = pattern.exec(query)) !== null) {
    if (match[0] === "") break;
    words.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : match[2]!);
    end = pattern.lastIndex;
  }
  if (query.slice(end).trim() !== "") return { ok: false, problem: 'has a quote that is not closed: write a word with spaces as "two words"' };
  if (words.length === 0) return { ok: false, problem: "must name a command, such as PING or GET healthd:ok" };
  const command = words[0]!.toUpperCase();
  if (refusedCommands.has(command)) {
    return {
      ok: false,
      problem: ["AUTH", "HELLO", "SELECT"].includes(command)
        ? `sends ${command}, which the URL does (its user, its password as \${NAME}, its /database); send the command to check`
        : `sends ${command}, which ends the session or never answers once; a check sends a command that answers, such as PING`,
    };
  }
  return { ok: true, words };
}

const conditions = ["contains", "matches", "equals", "maxLatencyMs"] as const;
export const databaseAlternative = z
  .strictObject({
    /** Text the first row (or redis's answer) holds. */
    contains: z.string().min(1).max(limits.patternLength).optional(),
    matches: regex.optional(),
    /** The first row (or answer) is this text exactly; "" for a NULL or no row. */
    equals: z.string().max(limits.patternLength).optional(),
    maxLatencyMs: integer(1, 600_000, 500).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), { message: `an alternative needs at least one condition (${conditions.join(", ")})` });

/** The fields of one kind of database check. */
export function databaseFields<K extends DatabaseKind>(kind: K) {
  return {
    url: z
      .string()
      .max(limits.urlLength)
      .superRefine((url, ctx) => {
        const read = readConnection(kind, url);
        if (!read.ok) ctx.addIssue({ code: "custom", message: read.problem });
      })
      .describe(`${databaseSchemes[kind].map((s) => `${s}://`).join(" or ")}user:\${${checkSecretPrefix}NAME}@host:port/${kind === "redis" ? "number" : "database"}: the password only as \${${checkSecretPrefix}NAME}, read from healthd's environment${Object.keys(parameters[kind]).length > 0 ? `; ?${Object.keys(parameters[kind])[0]}= for TLS` : "; rediss:// for TLS"}`),
    // The statement whose first row is judged (redis: the command whose answer is). Run with the URL's user's
    // rights: give healthd a user that may only read what it checks.
    query: z
      .string()
      .min(1, "must not be empty; leave it out for " + defaultQueries[kind])
      .max(4096)
      .refine((q) => !q.includes("\u0000"), "must not hold a NUL character")
      .superRefine((q, ctx) => {
        if (kind !== "redis") return;
        const read = redisWords(q);
        if (!read.ok) ctx.addIssue({ code: "custom", message: read.problem });
      })
      .default(defaultQueries[kind])
      .describe(kind === "redis" ? "The command whose answer is judged: words split at spaces, \"quoted\" words may hold them" : "The statement whose first row is judged, its values joined by | as psql -At prints them"),
    expect: z
      .array(databaseAlternative)
      .max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`)
      .default([])
      .describe("Alternatives of contains, matches, equals and maxLatencyMs on the answer; none: an answer without an error passes"),
  };
}
