/**
 * Which ad-hoc check `healthd check`'s flags ask for, and which flags go with which kind: one table, so a flag
 * given to a kind that cannot use it is refused by name with the kinds that take it, rather than ignored.
 */
import { UsageError } from "../platform/config.ts";

/** The flags that each name a kind of ad-hoc check, with what they take. */
export const adHocKinds = ["url", "websocket", "grpc", "icmp", "udp", "tcp", "tls", "dns", "postgres", "mysql", "redis"] as const;
export type AdHocKind = (typeof adHocKinds)[number];

/** The flags as commander parsed them, seen only for whether each was given. */
export interface GivenFlags {
  readonly [flag: string]: unknown;
  /** `--tls` alone (true) is gRPC over TLS; `--tls HOST:PORT` (text) is a tls check. */
  readonly tls?: boolean | string;
  readonly grpc?: string;
  /** --no-follow sets it false. */
  readonly follow?: boolean;
}

const databases = ["postgres", "mysql", "redis"] as const;

/** Each flag that only some kinds take (keys as commander names them), and those kinds. */
const takenBy: Record<string, readonly AdHocKind[]> = {
  method: ["url"],
  body: ["url"],
  follow: ["url"],
  header: ["url", "websocket"],
  expect: ["url", "websocket", "udp", "tcp", "tls", "dns", ...databases],
  timeout: adHocKinds,
  insecure: ["url", "websocket", "grpc", "tls"],
  send: ["websocket", "udp", "tcp"],
  sendHex: ["udp"],
  service: ["grpc"],
  count: ["icmp"],
  starttls: ["tls"],
  servername: ["tls"],
  server: ["dns"],
  type: ["dns"],
  query: databases,
};

/** Why a kind takes no --expect, for the message that refuses one. */
const noExpect: Partial<Record<AdHocKind, string>> = {
  grpc: "a health check passes on SERVING",
  icmp: "an icmp check passes when every echo comes back",
};

const flagName = (key: string) => (key === "follow" ? "--no-follow" : `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
const given = (flags: GivenFlags, key: string) => (key === "follow" ? flags.follow === false : flags[key] !== undefined && (key !== "header" || (flags[key] as unknown[]).length > 0));
const listed = (kinds: readonly AdHocKind[]) => kinds.map((k) => `--${k}`).join(", ");

/**
 * The kind of ad-hoc check the flags ask for (undefined: the stored checks), after refusing two kinds at once
 * and any flag the kind (or the stored checks) does not take.
 */
export function chosenKind(parsed: object): AdHocKind | undefined {
  const flags = parsed as GivenFlags;
  if (flags.tls === true && flags.grpc === undefined) {
    throw new UsageError("--tls alone goes with --grpc (gRPC over TLS); to check a TLS port, name it: --tls HOST:PORT");
  }
  if (typeof flags.tls === "string" && flags.grpc !== undefined) {
    throw new UsageError(`--tls ${flags.tls} is a tls check of its own; for gRPC over TLS give --tls alone, after --grpc ${flags.grpc}`);
  }
  const kinds = adHocKinds.filter((k) => (k === "tls" ? typeof flags.tls === "string" : flags[k] !== undefined));
  if (kinds.length > 1) throw new UsageError(`give one kind of ad-hoc check at a time, not ${kinds.map((k) => `--${k}`).join(" and ")}`);
  const kind = kinds[0];
  for (const [key, owners] of Object.entries(takenBy)) {
    if (!given(flags, key) || (kind !== undefined && owners.includes(kind))) continue;
    if (kind === undefined) {
      const which = owners.length === adHocKinds.length ? "" : ` (${listed(owners)})`;
      throw new UsageError(`${flagName(key)} goes with an ad-hoc check${which}, not with stored checks`);
    }
    const why = key === "expect" ? noExpect[kind] : undefined;
    throw new UsageError(`${flagName(key)} does not go with --${kind}${why ? `: ${why}` : ""} (it goes with ${listed(owners)})`);
  }
  return kind;
}
