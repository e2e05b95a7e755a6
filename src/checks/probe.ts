/** The controller of each kind of active check: config in, outcome out. */
import type { Check, Outcome } from "../domain/model.ts";
import { runDnsCheck } from "./dns.ts";
import { runCheck, type ControllerOptions } from "./http.ts";
import { runTcpCheck } from "./tcp.ts";
import { runIcmpCheck } from "./icmp.ts";
import { runTlsCheck } from "./tls.ts";
import { runUdpCheck } from "./udp.ts";
import { runSteps } from "./steps.ts";
import { runWebsocketCheck } from "./websocket.ts";
import { runGrpcCheck } from "./grpc.ts";
import { runDatabaseCheck } from "./database.ts";

/** A check healthd makes (every kind but heartbeat), as stored or as `healthd check --url` builds it. */
export type Probed = Exclude<Check, { readonly type: "heartbeat" }>;

export function probe(check: Probed, options: ControllerOptions = {}): Promise<Outcome> {
  switch (check.type) {
    case "http":
      return check.steps === undefined ? runCheck(check, options) : runSteps({ ...check, steps: check.steps }, options);
    case "tcp":
      return runTcpCheck(check, options);
    case "udp":
      return runUdpCheck(check, options);
    case "tls":
      return runTlsCheck(check, options);
    case "dns":
      return runDnsCheck(check, options);
    case "icmp":
      return runIcmpCheck(check, options);
    case "websocket":
      return runWebsocketCheck(check, options);
    case "grpc":
      return runGrpcCheck(check, options);
    case "postgres":
    case "mysql":
    case "redis":
      return runDatabaseCheck(check, options);
  }
}
