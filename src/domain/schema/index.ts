/**
 * The documents healthd accepts from outside, as zod schemas. The HTTP API, `healthd apply` and the OpenAPI
 * document all come from these, so a rule is written once. Messages say what is wrong and what to write instead.
 *
 * A check is of a kind (`type`): http (the default when `type` is left out), tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql, redis or heartbeat. Each kind has its
 * own fields (its file here) beside those every check has (common.ts); a field of another kind is refused
 * by name.
 */
import { z } from "zod";
import { cronOf } from "../schedule.ts";
import { activeFields, activeRules, activeSchedule, alertingFields, channelList, escalationSteps, id, integer, limits, maintenanceWindow, tagList } from "./common.ts";
import { heartbeatFields, heartbeatRules, heartbeatSchedule } from "./heartbeat.ts";
import { dnsFields } from "./dns.ts";
import { alternative, httpFields } from "./http.ts";
import { tcpFields, tcpRules } from "./tcp.ts";
import { udpFields, udpRules } from "./udp.ts";
import { tlsFields } from "./tls.ts";
import { icmpFields, icmpRules } from "./icmp.ts";
import { stepsField, stepsRules } from "./steps.ts";
import { websocketFields } from "./websocket.ts";
import { grpcFields, grpcRules } from "./grpc.ts";
import { databaseFields } from "./database.ts";

export { integer, limits, locationName, maintenanceWindow, time, id, tag, tagPattern, topic, topicPattern, reservedTopics } from "./common.ts";

/** The fields of each kind of check, as a document writes them (what the API answers adds: answers.ts). */
export const kinds = {
  http: { ...httpFields, steps: stepsField, ...alertingFields, ...activeFields },
  tcp: { ...tcpFields, ...alertingFields, ...activeFields },
  udp: { ...udpFields, ...alertingFields, ...activeFields },
  tls: { ...tlsFields, ...alertingFields, ...activeFields },
  dns: { ...dnsFields, ...alertingFields, ...activeFields },
  icmp: { ...icmpFields, ...alertingFields, ...activeFields },
  websocket: { ...websocketFields, ...alertingFields, ...activeFields },
  grpc: { ...grpcFields, ...alertingFields, ...activeFields },
  postgres: { ...databaseFields("postgres"), ...alertingFields, ...activeFields },
  mysql: { ...databaseFields("mysql"), ...alertingFields, ...activeFields },
  redis: { ...databaseFields("redis"), ...alertingFields, ...activeFields },
  heartbeat: { ...heartbeatFields, ...alertingFields },
};
export type CheckType = keyof typeof kinds;
export const checkTypes = Object.keys(kinds) as CheckType[];

/**
 * The object schema of each kind of check, for the OpenAPI document: they take any key so that a field of
 * another kind is refused by name, yet a document may hold only their own fields (and `type`, which an http
 * check may leave out).
 */
export const kindObjects = new WeakMap<z.ZodType, CheckType>();

/** The kinds of check that have `key`, for a message about a field given to another kind. */
const kindsWith = (key: string) => checkTypes.filter((type) => key in kinds[type]);

/**
 * A kind of check: its fields, and a check on every other key (a field of another kind is named as such), run
 * even when its fields are wrong too, so one round trip shows every problem.
 */
function kind<T extends CheckType, F extends z.ZodRawShape>(type: T, fields: F, rules: (value: Record<string, unknown>, ctx: z.RefinementCtx) => void) {
  const object = z
    .looseObject({ type: z.literal(type), ...fields })
    .superRefine(
      (value: Record<string, unknown>, ctx) => {
        for (const key of Object.keys(value)) {
          if (key === "type" || key in fields) continue;
          const owners = kindsWith(key);
          const message =
            owners.length > 0
              ? `is a field of ${listed(owners)} checks, not of ${type} ones; remove it, or set type`
              : "is not a known field; remove it or check its spelling";
          ctx.addIssue({ code: "custom", path: [key], message });
        }
        rules(value, ctx);
      },
      { when: (payload) => typeof payload.value === "object" && payload.value !== null },
    );
  kindObjects.set(object, type);
  return object.transform((value) => Object.fromEntries(Object.entries(value).filter(([key]) => key === "type" || key in fields)) as z.output<z.ZodObject<F>> & { type: T });
}

/** The seconds between the next two runs of a cron pattern (in a time zone): a heartbeat's grace is a tenth of it. */
const cronGap = (pattern: string, timezone: string | null) => {
  const [first, second] = cronOf(pattern, timezone ?? undefined).nextRuns(2);
  return first && second ? (second.getTime() - first.getTime()) / 1000 : 86_400;
};

const httpCheck = kind("http", kinds.http, (c, ctx) => (activeRules(c, ctx), stepsRules(c, ctx))).transform((c) => activeSchedule(c));
const tcpCheck = kind("tcp", kinds.tcp, (c, ctx) => (activeRules(c, ctx), tcpRules(c, ctx))).transform((c) => activeSchedule(c));
const udpCheck = kind("udp", kinds.udp, (c, ctx) => (activeRules(c, ctx), udpRules(c, ctx))).transform((c) => activeSchedule(c));
const tlsCheck = kind("tls", kinds.tls, activeRules).transform((c) => activeSchedule(c));
const dnsCheck = kind("dns", kinds.dns, activeRules).transform((c) => activeSchedule(c));
const icmpCheck = kind("icmp", kinds.icmp, (c, ctx) => (activeRules(c, ctx), icmpRules(c, ctx))).transform((c) => activeSchedule(c));
const websocketCheck = kind("websocket", kinds.websocket, activeRules).transform((c) => activeSchedule(c));
const grpcCheck = kind("grpc", kinds.grpc, (c, ctx) => (activeRules(c, ctx), grpcRules(c, ctx))).transform((c) => activeSchedule(c));
const postgresCheck = kind("postgres", kinds.postgres, activeRules).transform((c) => activeSchedule(c));
const mysqlCheck = kind("mysql", kinds.mysql, activeRules).transform((c) => activeSchedule(c));
const redisCheck = kind("redis", kinds.redis, activeRules).transform((c) => activeSchedule(c));
const heartbeatCheck = kind("heartbeat", kinds.heartbeat, heartbeatRules).transform((c) => heartbeatSchedule(c, (pattern) => cronGap(pattern, c.timezone)));

/** A check as a document writes it: `type` left out is an HTTP check. */
export const checkInput = z.preprocess(
  (value) => (typeof value === "object" && value !== null && !Array.isArray(value) && !("type" in value) ? { ...value, type: "http" } : value),
  z.discriminatedUnion("type", [httpCheck, tcpCheck, udpCheck, tlsCheck, dnsCheck, icmpCheck, websocketCheck, grpcCheck, postgresCheck, mysqlCheck, redisCheck, heartbeatCheck], {
    error: (issue) => (issue.code === "invalid_union" ? `must be one of ${checkTypes.join(", ")}` : undefined),
  }),
);

export const serviceDocument = z.strictObject({
  id,
  name: z.string().min(1).max(limits.nameLength).optional(),
  tags: tagList,
  check: checkInput,
});

/** Reports a repeated service id at the repeat. Runs even when some services are invalid otherwise. */
function uniqueServiceIds(services: readonly unknown[], ctx: z.RefinementCtx): void {
  const seen = new Map<unknown, number>();
  services.forEach((service, index) => {
    const serviceId = (service as { id?: unknown } | null)?.id;
    if (typeof serviceId !== "string") return;
    const first = seen.get(serviceId);
    if (first === undefined) seen.set(serviceId, index);
    else {
      ctx.addIssue({
        code: "custom",
        path: [index, "id"],
        message: `repeats the id of /services/${first}; service ids are unique within a server`,
      });
    }
  });
}

export const serverDocument = z.strictObject({
  id: id.optional(),
  name: z.string().min(1).max(limits.nameLength).optional(),
  services: z
    .array(serviceDocument)
    .max(limits.servicesPerServer, `holds at most ${limits.servicesPerServer} services`)
    .superRefine(uniqueServiceIds, { when: (payload) => Array.isArray(payload.value) })
    .default([]),
  maintenance: z.array(maintenanceWindow).max(limits.maintenanceWindows, `holds at most ${limits.maintenanceWindows} windows`).default([]),
  channels: channelList,
  // Escalation steps of its services that have none of their own (policy/escalation.ts).
  escalate: escalationSteps,
  // The first segment of its slug URLs, /ping/{pingKey}/{serviceId}: made by healthd when left out (and kept by a
  // PUT that leaves it out); set it to a Healthchecks.io project's ping key to keep its jobs' slug URLs.
  pingKey: z
    .string()
    .regex(/^[A-Za-z0-9_-]{22}$/, "must be 22 characters of A-Z a-z 0-9 _ - (a Healthchecks.io project's ping key), or left out")
    .optional(),
  // A slug URL's ?create=1 may make the heartbeat it names, from heartbeatDefaults.
  autoProvision: z.boolean().default(false),
  // The heartbeat check such a ping makes (null: Healthchecks.io's, a period of a day and a grace of an hour).
  heartbeatDefaults: z.record(z.string(), z.unknown()).nullable().default(null),
  // More of its services than this failing within one check interval send one grouped DOWN naming them all,
  // then one grouped RECOVERED (policy/storm.ts); 0: each service speaks for itself.
  groupThreshold: integer(0, 1000, 5).default(5).describe("More of its services than this failing within one check interval send one grouped DOWN, then one grouped RECOVERED; 0: never grouped"),
}).superRefine((doc, ctx) => {
  if (doc.heartbeatDefaults !== null) {
    const parsed = heartbeatCheck.safeParse({ ...doc.heartbeatDefaults, type: "heartbeat" });
    if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: ["heartbeatDefaults", ...issue.path.filter((p) => typeof p !== "symbol")], message: issue.message });
    if ("pingKey" in doc.heartbeatDefaults) ctx.addIssue({ code: "custom", path: ["heartbeatDefaults", "pingKey"], message: "each heartbeat gets its own ping key; remove it" });
  }
  // A window naming a service the server does not have would silence nothing, silently.
  const ids = new Set(doc.services.map((s) => s.id));
  doc.maintenance.forEach((window, w) =>
    window.services?.forEach((serviceId, i) => {
      if (!ids.has(serviceId)) {
        ctx.addIssue({ code: "custom", path: ["maintenance", w, "services", i], message: `names ${serviceId}, which is not a service of this server` });
      }
    }),
  );
});

export type Alternative = z.output<typeof alternative>;
export type CheckInput = z.input<typeof checkInput>;
export type Check = z.output<typeof checkInput>;
export type HttpCheck = Extract<Check, { type: "http" }>;
export type TcpCheck = Extract<Check, { type: "tcp" }>;
export type UdpCheck = Extract<Check, { type: "udp" }>;
export type TlsCheck = Extract<Check, { type: "tls" }>;
export type DnsCheck = Extract<Check, { type: "dns" }>;
export type IcmpCheck = Extract<Check, { type: "icmp" }>;
export type WebsocketCheck = Extract<Check, { type: "websocket" }>;
export type GrpcCheck = Extract<Check, { type: "grpc" }>;
export type PostgresCheck = Extract<Check, { type: "postgres" }>;
export type MysqlCheck = Extract<Check, { type: "mysql" }>;
export type RedisCheck = Extract<Check, { type: "redis" }>;
export type HeartbeatCheck = Extract<Check, { type: "heartbeat" }>;
export type ServiceDocument = z.output<typeof serviceDocument>;
export type ServerDocument = z.output<typeof serverDocument>;
export type MaintenanceWindow = z.output<typeof maintenanceWindow>;

/** "http", "http and tcp", "http, tcp and dns": the kinds a message names, as a sentence says them. */
function listed(words: readonly string[]): string {
  return words.length < 3 ? words.join(" and ") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}
