/**
 * `healthd check --websocket URL` and `--grpc TARGET`: an ad-hoc check of a kind other than http, built as the
 * same document a PUT takes (so the same rules and messages), from the flags that belong to it and those the
 * kinds share (--header, --expect, --timeout, --insecure), parsed by check.ts.
 */
import { Option } from "commander";
import type { Probed } from "../checks/probe.ts";
import { UsageError } from "../platform/config.ts";
import { targetOf } from "../domain/model.ts";
import { checkInput } from "../domain/schema/index.ts";
import { validate } from "../domain/validate.ts";

export interface KindFlags {
  readonly websocket?: string;
  readonly send?: string;
  readonly grpc?: string;
  readonly service?: string;
  readonly tls?: boolean;
}

/** The options of the ad-hoc kinds, for `check`. */
export const kindOptions = () => [
  new Option("--websocket <url>", "run an ad-hoc WebSocket check of this ws:// or wss:// URL instead"),
  new Option("--send <text>", "ad-hoc WebSocket: a message to send once open (the first answer is judged)"),
  new Option("--grpc <host:port>", "run an ad-hoc gRPC health check (grpc.health.v1.Health/Check) of this target instead"),
  new Option("--service <name>", 'ad-hoc gRPC: the service asked about (default "", the server as a whole)'),
  new Option("--tls", "ad-hoc gRPC: over TLS"),
];

/** Which ad-hoc kind the flags ask for, if any; a usage error for flags of a kind not asked for. */
export function askedKind(flags: KindFlags & { readonly url?: string }): "websocket" | "grpc" | undefined {
  const asked = (["url", "websocket", "grpc"] as const).filter((k) => flags[k] !== undefined);
  if (asked.length > 1) throw new UsageError(`give one of --url, --websocket and --grpc, not ${asked.map((k) => `--${k}`).join(" and ")}`);
  if (flags.send !== undefined && flags.websocket === undefined) throw new UsageError("--send goes with --websocket");
  if ((flags.service !== undefined || flags.tls) && flags.grpc === undefined) throw new UsageError("--service and --tls go with --grpc");
  return flags.websocket !== undefined ? "websocket" : flags.grpc !== undefined ? "grpc" : undefined;
}

/** What the kinds share, as check.ts parsed it from --header, --expect, --timeout and --insecure. */
export interface Shared {
  readonly headers: Record<string, string>;
  readonly expect: unknown;
  readonly timeoutMs: number | undefined;
  readonly insecure: boolean | undefined;
}

export function adHocKind(kind: "websocket" | "grpc", flags: KindFlags, shared: Shared): { name: string; check: Probed } {
  if (kind === "grpc" && (Object.keys(shared.headers).length > 0 || shared.expect !== undefined)) {
    throw new UsageError("--header and --expect do not go with --grpc: a health check passes on SERVING");
  }
  const input =
    kind === "websocket"
      ? { type: kind, url: flags.websocket, headers: shared.headers, send: flags.send, expect: shared.expect, timeoutMs: shared.timeoutMs, verifyTls: shared.insecure ? false : undefined }
      : { type: kind, target: flags.grpc, service: flags.service, tls: flags.tls, timeoutMs: shared.timeoutMs, verifyTls: shared.insecure ? false : undefined };
  const parsed = validate(checkInput, Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
  if (!parsed.ok) throw new UsageError(parsed.errors.map((e) => `${flagOf(kind, e.path)}: ${e.message}`).join("\n"));
  const check = parsed.value as Probed;
  return { name: targetOf(check)!, check };
}

/** Which flag an error of the ad-hoc document is about. */
function flagOf(kind: "websocket" | "grpc", path: string): string {
  if (path.startsWith("/expect")) return `--expect ${path.slice("/expect".length) || "/"}`;
  if (path.startsWith("/headers")) return "--header";
  const flags: Record<string, string> = { "/url": "--websocket", "/target": "--grpc", "/send": "--send", "/service": "--service", "/timeoutMs": "--timeout", "/verifyTls": kind === "grpc" ? "--insecure (with --tls)" : "--insecure" };
  return flags[path] ?? path;
}
