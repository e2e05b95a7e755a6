/**
 * Every default in one place. Layers, lowest first: these defaults, then HEALTHD_* environment variables,
 * then command-line flags (commander reads the environment for each option; see cli/options.ts).
 */
import { locationName, topic } from "../domain/schema/index.ts";
import { UsageError } from "./usage.ts";

export const defaults = {
  /** SQLite file. Env HEALTHD_DB. */
  db: "./healthd.db",
  /** Address the API listens on; loopback unless asked. Env HEALTHD_HOST. */
  host: "127.0.0.1",
  /** API port; 0 picks a free one. Env HEALTHD_PORT. */
  port: 8080,
  /** Minimum level of log lines: debug, info, warn, error, silent. Env HEALTHD_LOG_LEVEL. */
  logLevel: "info",
  /** Log one JSON object per line. Env HEALTHD_LOG_JSON. */
  logJson: false,
  /** Checks running at once, at most; protects the host and the targets. Env HEALTHD_MAX_IN_FLIGHT. */
  maxInFlight: 256,
  /**
   * API connections open at once, at most: beyond it new ones are closed at once, so that clients (or a flood
   * of silent sockets) can never take the file descriptors the checks need. Env HEALTHD_MAX_CONNECTIONS.
   */
  maxConnections: 256,
  /** The ntfy server notifications are published to. Env HEALTHD_NTFY_URL. */
  ntfyUrl: "https://ntfy.sh",
  /** Entries older than this many days are deleted. Env HEALTHD_RETENTION_DAYS. */
  retentionDays: 30,
  /** Hourly rollups (GET …/stats) older than this many days are deleted. Env HEALTHD_ROLLUP_RETENTION_DAYS. */
  rollupRetentionDays: 365,
  /** Where a node probes from. Env HEALTHD_LOCATION. */
  location: "default",
  /** A node that has not been heard from for this long is dead; others take over its checks. Env HEALTHD_LEASE_SECONDS. */
  leaseSeconds: 15,
} as const;

export { UsageError };

export function parsePort(text: string): number {
  const port = Number(text);
  if (!/^[0-9]+$/.test(text) || port > 65535) {
    throw new UsageError(`port must be an integer from 0 to 65535 (got ${JSON.stringify(text)})`);
  }
  return port;
}

export function parsePositiveInt(name: string, max: number): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!/^[0-9]+$/.test(text) || n < 1 || n > max) {
      throw new UsageError(`${name} must be an integer from 1 to ${max} (got ${JSON.stringify(text)})`);
    }
    return n;
  };
}

export function parseHttpUrl(name: string): (text: string) => string {
  return (text) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new UsageError(`${name} must be an http or https URL such as https://ntfy.sh (got ${JSON.stringify(text)})`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UsageError(`${name} must be an http or https URL (got ${url.protocol.slice(0, -1)})`);
    }
    return text;
  };
}

/** --node and --location: names as checks and /nodes show them. */
export function parseName(flag: string): (text: string) => string {
  return (text) => {
    const parsed = locationName.safeParse(text);
    if (!parsed.success) throw new UsageError(`${flag} ${parsed.error.issues[0]!.message} (got ${JSON.stringify(text)})`);
    return text;
  };
}

export function parseTopic(text: string): string {
  const parsed = topic.safeParse(text);
  if (!parsed.success) throw new UsageError(`--ntfy-topic ${parsed.error.issues[0]!.message} (got ${JSON.stringify(text)})`);
  return text;
}
