/**
 * A gRPC check: the gRPC Health Checking Protocol (grpc.health.v1.Health/Check) asked of `target` for
 * `service` ("" is the server as a whole); SERVING passes, any other status or a gRPC error fails.
 */
import { isIP } from "node:net";
import { z } from "zod";
import { integer } from "./common.ts";
import { host } from "./tcp.ts";

/** host:port, [v6]:port: where the server listens (no scheme: tls says whether it is grpcs). */
export const grpcTarget = z
  .string()
  .max(260)
  .superRefine((text, ctx) => {
    const at = /^(\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
    const name = at?.[2] ?? at?.[3];
    const port = Number(at?.[4]);
    const ok = at !== null && name !== undefined && (at[2] !== undefined ? isIP(name) === 6 : host.safeParse(name).success && isIP(name) !== 6) && port >= 1 && port <= 65535;
    if (!ok) ctx.addIssue({ code: "custom", message: "must be host:port such as grpc.example.org:443, 192.0.2.10:50051 or [2001:db8::1]:50051 (no scheme: set tls)" });
  });

export const grpcFields = {
  target: grpcTarget,
  // Over TLS (grpcs), the chain verified for the target's host unless verifyTls is false.
  tls: z.boolean().default(false),
  verifyTls: z.boolean().default(true),
  // The service asked about, as the server registered it (grpc.health.v1.HealthCheckRequest.service).
  service: z.string().max(200).default(""),
  // The most the call may take, in ms, to pass (null: any within timeoutMs).
  maxLatencyMs: integer(1, 600_000, 500).nullable().default(null),
};

export function grpcRules(c: { tls?: unknown; verifyTls?: unknown }, ctx: z.RefinementCtx): void {
  if (c.tls !== true && c.verifyTls === false) ctx.addIssue({ code: "custom", path: ["verifyTls"], message: "needs tls: true (a plain connection has no certificate)" });
}
