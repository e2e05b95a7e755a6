/**
 * Uptime Kuma's grpc-keyword and websocket-upgrade monitors (server/monitor-types/grpc.js and
 * websocket-upgrade.js). A grpc-keyword monitor calls any method its own protobuf defines and looks for a
 * keyword in the JSON of the answer; the one healthd has, Health/Check of the standard health service, carries
 * over as a grpc check, and any other method is said and left. A websocket-upgrade monitor opens the
 * connection and closes it (close code 1000 accepted): a websocket check without a message does the same.
 * An smtp monitor (smtp.js: nodemailer's verify) that asks for TLS, by SMTPS or by STARTTLS, is a tls check.
 */
import type { Check } from "./common.ts";
import { bool, str } from "./kuma-values.ts";

/** The columns of these monitors, whichever way Kuma wrote them down. */
export interface KumaNet {
  readonly grpcUrl: string | null;
  readonly grpcProtobuf: string | null;
  readonly grpcServiceName: string | null;
  readonly grpcMethod: string | null;
  readonly grpcBody: string | null;
  readonly grpcMetadata: string | null;
  readonly grpcEnableTls: boolean;
  readonly wsSubprotocol: string | null;
  readonly wsIgnoreSecWebsocketAcceptHeader: boolean;
  /** An smtp monitor's: "secure" (SMTPS), "starttls" (required), "nostarttls", or null (STARTTLS when offered). */
  readonly smtpSecurity: string | null;
}

export function kumaNetFrom(r: Record<string, unknown>): KumaNet {
  const pick = (camel: string, snake: string) => r[camel] ?? r[snake];
  return {
    grpcUrl: str(pick("grpcUrl", "grpc_url")),
    grpcProtobuf: str(pick("grpcProtobuf", "grpc_protobuf")),
    grpcServiceName: str(pick("grpcServiceName", "grpc_service_name")),
    grpcMethod: str(pick("grpcMethod", "grpc_method")),
    grpcBody: str(pick("grpcBody", "grpc_body")),
    grpcMetadata: str(pick("grpcMetadata", "grpc_metadata")),
    grpcEnableTls: bool(pick("grpcEnableTls", "grpc_enable_tls")),
    wsSubprotocol: str(pick("wsSubprotocol", "ws_subprotocol")),
    wsIgnoreSecWebsocketAcceptHeader: bool(pick("wsIgnoreSecWebsocketAcceptHeader", "ws_ignore_sec_websocket_accept_header")),
    smtpSecurity: str(pick("smtpSecurity", "smtp_security")),
  };
}

interface Monitor {
  readonly net: KumaNet;
  readonly hostname: string | null;
  readonly port: number | null;
  readonly keyword: string | null;
  readonly invertKeyword: boolean;
  readonly ignoreTls: boolean;
  readonly acceptedStatuscodes: readonly string[];
}

/** A grpc-keyword monitor of the standard health service as a grpc check's own fields; undefined (said) otherwise. */
export function grpcFromKuma(m: Monitor, note: (why: string) => void): Check | undefined {
  const { grpcUrl, grpcProtobuf, grpcServiceName, grpcMethod, grpcBody, grpcMetadata, grpcEnableTls } = m.net;
  const target = grpcUrl?.trim().replace(/^(dns:\/\/\/|grpcs?:\/\/)/, "").replace(/\/$/, "");
  if (!target || !/^(\[[^\]]+\]|[^:/[\]]+):\d{1,5}$/.test(target)) return void note(`its gRPC URL ${JSON.stringify(grpcUrl)} is not host:port`);
  const health = /\bpackage\s+grpc\.health\.v1\s*;/.test(grpcProtobuf ?? "") && /(^|\.)Health$/.test(grpcServiceName ?? "") && /^check$/i.test(grpcMethod ?? "");
  if (!health) {
    return void note(
      `it calls ${grpcServiceName ?? "?"}/${grpcMethod ?? "?"} with a protobuf of its own; healthd's grpc check asks the standard health service only (grpc.health.v1.Health/Check); not carried over`,
    );
  }
  let service = "";
  try {
    const body = JSON.parse(grpcBody || "{}") as { service?: unknown };
    if (typeof body.service === "string") service = body.service;
  } catch {
    note(`its gRPC body ${JSON.stringify(grpcBody)} is not JSON; the server as a whole (service "") is asked`);
  }
  // Kuma looks for the keyword in the answer's JSON, {"status":"SERVING"}: "SERVING" is found in NOT_SERVING too.
  if (m.keyword !== "SERVING" || m.invertKeyword) {
    note(`its keyword ${m.invertKeyword ? "not " : ""}${JSON.stringify(m.keyword)} does not carry over: healthd's grpc check passes on SERVING and fails on anything else`);
  } else note('Kuma found its keyword "SERVING" in NOT_SERVING too; healthd passes on SERVING only');
  if (grpcMetadata && grpcMetadata.trim() !== "" && grpcMetadata.trim() !== "{}") note("its gRPC metadata is left out (Kuma did not send it either)");
  return { type: "grpc", target, ...(grpcEnableTls ? { tls: true } : {}), ...(service !== "" ? { service } : {}) };
}

/** A websocket-upgrade monitor as a websocket check's own fields (url and headers come from kuma.ts). */
export function websocketFromKuma(m: Monitor, note: (why: string) => void): Check {
  const { wsSubprotocol, wsIgnoreSecWebsocketAcceptHeader } = m.net;
  const protocols = (wsSubprotocol ?? "").replace(/\s/g, "").split(",").filter((p) => p !== "");
  if (wsIgnoreSecWebsocketAcceptHeader) note("it ignored a wrong Sec-WebSocket-Accept; healthd does not (such a server fails as protocol)");
  // A clean close after the upgrade is 1000; healthd's check passes on the upgrade, so other codes say nothing.
  if (!m.acceptedStatuscodes.includes("1000")) note(`its accepted close codes (${m.acceptedStatuscodes.join(", ")}) do not carry over: healthd's check passes when the upgrade succeeds`);
  return { type: "websocket", ...(protocols.length > 0 ? { protocols } : {}), ...(m.ignoreTls ? { verifyTls: false } : {}) };
}

/**
 * An smtp monitor whose TLS is required as a tls check: SMTPS ("secure") the handshake on its port, "starttls"
 * SMTP's STARTTLS first; the chain is verified, as nodemailer does. Plain SMTP has no tls check to become.
 */
export function smtpFromKuma(m: Monitor, note: (why: string) => void): Check | undefined {
  if (!m.hostname) return void note("it has no hostname");
  const security = m.net.smtpSecurity;
  if (security !== "secure" && security !== "starttls") {
    return void note(`its SMTP is ${security === "nostarttls" ? "plain" : "plain unless the server offers STARTTLS"}: healthd's tls check wants TLS; a tcp check of port ${m.port || 25} with a banner of 220 is the nearest; not carried over`);
  }
  return { type: "tls", host: m.hostname, port: m.port || 25, ...(security === "starttls" ? { starttls: "smtp" } : {}) };
}
