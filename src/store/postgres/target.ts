/**
 * A PostgreSQL URL as `--db` takes it, and how to speak of it without its password.
 */
export interface PostgresTarget {
  readonly url: string;
  /** Host and port as the connection will use them (the URL, else PGHOST/PGPORT, else the defaults). */
  readonly host: string;
  readonly port: string;
  readonly database: string;
}

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Parse a postgres:// or postgresql:// URL; throws an Error that names the problem, never the password. */
export function parsePostgresUrl(value: string): PostgresTarget {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error("--db is not a valid PostgreSQL URL; write it as postgres://user:password@host:5432/database?sslmode=require");
  }
  const env = process.env;
  const host = decodeURIComponent(url.hostname) || env.PGHOST || "localhost";
  return {
    url: value,
    host: host.startsWith("/") ? `socket ${host}` : host,
    port: url.port || env.PGPORT || "5432",
    database: decodeURIComponent(url.pathname.slice(1)) || env.PGDATABASE || decodeURIComponent(url.username) || env.PGUSER || "postgres",
  };
}

/** The URL with its password replaced, fit for logs and error messages. */
export function describe(target: PostgresTarget): string {
  try {
    const url = new URL(target.url);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return `postgres://${target.host}:${target.port}/${target.database}`;
  }
}
