/**
 * `healthd check --websocket URL`, `--grpc TARGET`, `--icmp HOST`, `--udp HOST:PORT`, `--tcp HOST:PORT`,
 * `--tls HOST:PORT` and `--dns NAME`: an ad-hoc check of a kind other than http and the databases, built as the
 * same document a PUT takes (so the same rules and messages), from the flags that belong to it and those the
 * kinds share (--header, --expect, --timeout, --insecure), parsed by check.ts. Which flag goes with which kind
 * is check-flags.ts's; the options themselves are check-options.ts's.
 */
import type { Probed } from "../checks/probe.ts";
import { UsageError } from "../platform/config.ts";
import { targetOf } from "../domain/model.ts";
import { checkInput } from "../domain/schema/index.ts";
import { validate } from "../domain/validate.ts";

export type Kind = "websocket" | "grpc" | "icmp" | "udp" | "tcp" | "tls" | "dns";

export interface KindFlags {
  readonly websocket?: string;
  readonly send?: string;
  readonly grpc?: string;
  readonly service?: string;
  /** `--tls` alone: gRPC over TLS; `--tls HOST:PORT`: a tls check. */
  readonly tls?: boolean | string;
  readonly icmp?: string;
  readonly count?: number;
  readonly udp?: string;
  readonly sendHex?: string;
  readonly tcp?: string;
  readonly starttls?: string;
  readonly servername?: string;
  readonly dns?: string;
  readonly server?: string;
  readonly type?: string;
}

/** What the kinds share, as check.ts parsed it from --header, --expect, --timeout and --insecure. */
export interface Shared {
  readonly headers: Record<string, string>;
  readonly expect: unknown;
  readonly timeoutMs: number | undefined;
  readonly insecure: boolean | undefined;
}

/** HOST:PORT or [IPv6]:PORT, as --udp, --tcp and --tls take it; the host's own rules are the schema's. */
export function hostPort(text: string, flag: string): { host: string; port: number } {
  const at = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (!at) throw new UsageError(`${flag} must be HOST:PORT, such as 192.0.2.10:443 or [2001:db8::1]:443 (got ${JSON.stringify(text)})`);
  return { host: (at[1] ?? at[2])!, port: Number(at[3]) };
}

/** The document of the ad-hoc check, before validation: as a PUT would carry it. */
function documentOf(kind: Kind, flags: KindFlags, shared: Shared): Record<string, unknown> {
  const verifyTls = shared.insecure ? false : undefined;
  const { expect, timeoutMs } = shared;
  switch (kind) {
    case "websocket":
      return { type: kind, url: flags.websocket, headers: shared.headers, send: flags.send, expect, timeoutMs, verifyTls };
    case "grpc":
      return { type: kind, target: flags.grpc, service: flags.service, tls: flags.tls === true ? true : undefined, timeoutMs, verifyTls };
    case "icmp":
      return { type: kind, host: flags.icmp, count: flags.count, timeoutMs };
    case "udp":
      return { type: kind, ...hostPort(flags.udp!, "--udp"), send: flags.send, sendHex: flags.sendHex, expect, timeoutMs };
    case "tcp":
      return { type: kind, ...hostPort(flags.tcp!, "--tcp"), send: flags.send, expect, timeoutMs };
    case "tls":
      return { type: kind, ...hostPort(flags.tls as string, "--tls"), starttls: flags.starttls, servername: flags.servername, expect, timeoutMs, verifyTls };
    case "dns":
      return { type: kind, name: flags.dns, server: flags.server, recordType: flags.type?.toUpperCase(), expect, timeoutMs };
  }
}

export function adHocKind(kind: Kind, flags: KindFlags, shared: Shared): { name: string; check: Probed } {
  const input = documentOf(kind, flags, shared);
  const parsed = validate(checkInput, Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
  if (!parsed.ok) throw new UsageError(parsed.errors.map((e) => `${flagOf(kind, e.path)}: ${e.message}`).join("\n"));
  const check = parsed.value as Probed;
  return { name: targetOf(check)!, check };
}

/** Which flag an error of the ad-hoc document is about. */
function flagOf(kind: Kind, path: string): string {
  if (path.startsWith("/expect")) return `--expect ${path.slice("/expect".length) || "/"}`;
  if (path.startsWith("/headers")) return "--header";
  const address = `--${kind}`;
  const flags: Record<string, string> = {
    "/url": address,
    "/target": address,
    "/name": address,
    "/host": kind === "icmp" ? address : `${address} (its host)`,
    "/port": `${address} (its port)`,
    // udp wants one of them; the schema names the one it misses or the second.
    "/send": kind === "udp" ? "--send (or --send-hex)" : "--send",
    "/sendHex": "--send-hex",
    "/service": "--service",
    "/count": "--count",
    "/starttls": "--starttls",
    "/servername": "--servername",
    "/server": "--server",
    "/recordType": "--type",
    "/timeoutMs": "--timeout",
    "/verifyTls": kind === "grpc" ? "--insecure (with --tls)" : "--insecure",
  };
  return flags[path] ?? path;
}
