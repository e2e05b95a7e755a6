/** A scoped token as POST /tokens and `healthd token create` take it. */
import { z } from "zod";
import { id } from "./common.ts";

export const scopes = ["read", "write", "ping", "admin"] as const;

export const tokenBody = z.strictObject({
  name: id.describe("Unique: what the token is for (ci-deploy, grafana)"),
  scope: z.enum(scopes, 'must be "read", "write", "ping" or "admin"').describe(
    "read: GET; write: also change servers, services and silences; ping: only pings (by server and service); admin: everything",
  ),
  servers: z
    .array(id)
    .min(1, "must name at least one server, or be null for all")
    .max(1000)
    .refine((ids) => new Set(ids).size === ids.length, "names a server twice; name each once")
    .nullable()
    .optional()
    .describe("The servers it may use; null or absent: all of them"),
});
