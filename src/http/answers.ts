/**
 * The shapes of the API's answers, as zod schemas: the OpenAPI document describes them, and the tests check
 * real answers against them, so the description cannot drift from what the daemon says.
 */
import { z } from "zod";
import { entryKinds, errorKinds } from "../domain/model.ts";
import { kinds, maintenanceWindow } from "../domain/schema/index.ts";
import { shownStatuses } from "../status/shown.ts";

const time = z.iso.datetime().describe("ISO 8601 UTC time with milliseconds");

export const entryAnswer = z.strictObject({
  id: z.string().describe("Opaque; increases as entries are stored"),
  checkedAt: time,
  ok: z.boolean(),
  status: z.int().nullable().describe("The HTTP status; null when no response arrived"),
  latencyMs: z.number(),
  errorKind: z.enum(errorKinds).nullable(),
  error: z.string().nullable(),
  matched: z.int().nullable().describe("Index of the alternative of `expect` that held"),
  location: z.string().describe("The location of the node that ran it"),
  type: z.enum(Object.keys(kinds) as [keyof typeof kinds]).describe("The kind of check it is of"),
  kind: z.enum(entryKinds).nullable().describe("A heartbeat's: the ping (start, success, fail, exit, log) or what healthd saw (missed, too-long)"),
  exitCode: z.int().nullable().describe("A heartbeat's: the job's exit code"),
  durationMs: z.number().nullable().describe("A heartbeat's: the run's duration, start to finish"),
  body: z.string().nullable().describe("A heartbeat's: what the ping sent, its first 10,000 bytes"),
  answers: z.array(z.string()).nullable().describe("A dns check's: the records of the type asked, as text"),
  method: z.string().nullable().describe("A heartbeat ping's: the HTTP method it came with"),
  userAgent: z.string().nullable().describe("A heartbeat ping's: its User-Agent, its first 200 characters"),
  remoteAddr: z.string().nullable().describe("A heartbeat ping's: its sender's address (X-Forwarded-For's first behind serve --trust-proxy)"),
  scheme: z.string().nullable().describe("A heartbeat ping's: http or https (X-Forwarded-Proto behind serve --trust-proxy)"),
  rid: z.string().nullable().describe("A heartbeat ping's: its ?rid=, in lower case"),
});

export const stateAnswer = z.strictObject({
  status: z
    .enum(shownStatuses)
    .describe(
      "paused: its check is paused; blocked: it fails while a service it depends on has an open incident; new: a heartbeat not pinged yet; late: a heartbeat whose ping is due, within its grace; degraded: up, its last check passing slower than slowMs",
    ),
  blockedBy: z.array(z.string()).optional().describe('With status blocked: those services, as "serverId/serviceId"'),
  silencedUntil: time.optional().describe("Silenced (a silence, or a maintenance window): nothing is published until then"),
  silenceReason: z.string().nullable().optional().describe("With silencedUntil: the silence's or the window's reason"),
  maintenance: z.boolean().optional().describe("With silencedUntil: it is a maintenance window of its server, not a silence"),
  locations: z
    .record(z.string(), z.strictObject({ status: z.enum(["up", "down", "unmonitored"]), lastCheckedAt: time.nullable() }))
    .optional()
    .describe("With check.locations: each location's latest result; unmonitored while no live node is there"),
  consecutiveFailures: z.int(),
  lastCheckedAt: time.nullable(),
  lastEntry: entryAnswer.nullable(),
  incidentOpenSince: time.nullable().describe("When its open incident opened (the check past notifyThreshold)"),
  incidentStartedAt: time.nullable().describe("Its open incident's first failed check: the outage counts from here"),
  lastPingAt: time.nullable().optional().describe("A heartbeat's last ping"),
  lastStartAt: time.nullable().optional().describe("A heartbeat's: the start of its latest run going, if one is"),
  lastDurationMs: z.number().nullable().optional().describe("A heartbeat's: its last run's duration"),
  nextDueAt: time.nullable().optional().describe("A heartbeat's: when its next ping is due"),
});

/** A check as stored and answered: every field present, the notify defaults filled in by the data layer. */
const stored = { notify: z.boolean(), notifyThreshold: z.int() };
export const storedCheckAnswer = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("http"), ...kinds.http, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("tcp"), ...kinds.tcp, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("tls"), ...kinds.tls, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("udp"), ...kinds.udp, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("icmp"), ...kinds.icmp, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("dns"), ...kinds.dns, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("websocket"), ...kinds.websocket, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("grpc"), ...kinds.grpc, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("postgres"), ...kinds.postgres, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("mysql"), ...kinds.mysql, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({ type: z.literal("redis"), ...kinds.redis, ...stored, intervalSeconds: z.int().nullable(), cron: z.string().nullable() }),
  z.strictObject({
    type: z.literal("heartbeat"),
    ...kinds.heartbeat,
    ...stored,
    periodSeconds: z.int().nullable(),
    cron: z.string().nullable(),
    graceSeconds: z.int(),
    pingKey: z.string().optional().describe("The secret of its ping URLs: /ping/{pingKey}; absent for a read token"),
    pushToken: z.string().nullable().optional().describe("Its Uptime Kuma push token: /api/push/{pushToken} pings it (null: none); absent for a read token"),
    gatusKey: z.string().nullable().describe("Its Gatus external-endpoint key: POST /api/v1/endpoints/{gatusKey}/external pings it (null: none)"),
  }),
]);

export const serviceAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  tags: z.array(z.string()).describe("Its labels, lowercase ([] when none); GET /services?tag= and the console filter by them"),
  check: storedCheckAnswer,
  state: stateAnswer,
});

export const serverAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  maintenance: z.array(maintenanceWindow),
  channels: z.array(z.string()).nullable().describe("Where its services' notifications go when their checks name none; null: the daemon's default"),
  pingKey: z.string().optional().describe("The first segment of its slug URLs: /ping/{pingKey}/{serviceId}; absent for a read token"),
  autoProvision: z.boolean().describe("Whether a slug URL's ?create=1 makes the heartbeat it names"),
  heartbeatDefaults: z.record(z.string(), z.unknown()).nullable().describe("The heartbeat check such a ping makes; null: a period of a day, a grace of an hour"),
  groupThreshold: z.number().int().describe("More of its services than this failing within one check interval send one grouped DOWN (0: never grouped)"),
  escalate: z
    .array(z.strictObject({ afterMinutes: z.int(), channels: z.array(z.string()) }))
    .optional()
    .describe("Escalation steps of its services whose checks have none; absent: none"),
  createdAt: time,
  updatedAt: time,
  services: z.array(serviceAnswer),
});

export const serverListAnswer = z.strictObject({
  servers: z.array(
    z.strictObject({
      id: z.string(),
      name: z.string(),
      serviceCount: z.int(),
      up: z.int(),
      down: z.int(),
      unknown: z.int(),
      paused: z.int().describe("Services whose check is paused, counted in none of up, down and unknown"),
      blocked: z.int().describe("Services failing while one they depend on has an open incident (status blocked), not counted in down"),
      late: z.int().describe("Heartbeats whose ping is due and has not come, within their grace (status late), counted in none of the others"),
      degraded: z.int().describe("Services up whose last check passed slower than their slowMs (status degraded), counted in none of the others"),
      services: z.array(z.string()).optional().describe("With ?tag= only: the ids of its services carrying every tag asked for (the counts count only them)"),
    }),
  ),
});

export const entriesAnswer = z.strictObject({
  entries: z.array(entryAnswer),
  next: z.string().nullable().describe("Pass as `before` for the next page; null on the last"),
});

export const statsAnswer = z.strictObject({
  window: z.enum(["24h", "7d", "30d", "365d"]),
  since: time,
  checks: z.int(),
  failures: z.int(),
  silencedChecks: z.int().describe("Of `checks`, those made while silenced (a silence or a maintenance window)"),
  degraded: z.int().describe("Of `checks`, those that passed slower than the check's slowMs (counted as up in `uptime`)"),
  uptime: z.number().min(0).max(1).nullable().describe("Passing share of the checks not silenced; null without any"),
  latencyMs: z.strictObject({ mean: z.number().nullable(), p50: z.number().nullable(), p95: z.number().nullable() }),
});

export const silenceAnswer = z.strictObject({
  id: z.string(),
  server: z.string(),
  service: z.string().nullable().describe("null: every service of the server"),
  startsAt: time,
  endsAt: time,
  reason: z.string().nullable(),
  createdAt: time,
});

export const silencesAnswer = z.strictObject({ silences: z.array(silenceAnswer) });

export const incidentAnswer = z.strictObject({
  id: z.string(),
  server: z.string(),
  service: z.string(),
  startedAt: time.describe("Its first failed check: the outage counts from here"),
  openedAt: time.describe("The check past notifyThreshold that opened it (its DOWN is due then)"),
  closedAt: time.nullable().describe("The first passing check that closed it"),
  durationMs: z.number().describe("From startedAt until it closed, or until now while open"),
  failures: z.int().describe("Checks that failed while it was open"),
  firstError: z.string().nullable(),
  notified: z.boolean().describe("Its DOWN was published"),
  acknowledged: z
    .strictObject({
      by: z.string().describe('The token\'s name, or "link" / "ntfy" when acknowledged from the notification'),
      at: time,
      note: z.string().nullable(),
    })
    .nullable()
    .describe("Who took it on, and when; null: nobody yet (reminders and escalations go on)"),
});

export const incidentsAnswer = z.strictObject({
  incidents: z.array(incidentAnswer),
  next: z.string().nullable().describe("Pass as `before` for the next page; null on the last"),
});

export const nodesAnswer = z.strictObject({
  nodes: z.array(
    z.strictObject({
      name: z.string(),
      location: z.string(),
      version: z.string(),
      startedAt: time,
      lastSeenAt: time,
      services: z.int().describe("How many checks it runs now (0 when it is not live)"),
      self: z.boolean().describe("It is the node that answers"),
      live: z.boolean().describe("Its heartbeat is younger than its lease"),
    }),
  ),
});

export const serverPingKeyAnswer = z.strictObject({ pingKey: z.string().describe("The server's new ping key: its slug URLs are /ping/{pingKey}/{serviceId}") });
export const pingKeyAnswer = z.strictObject({ pingKey: z.string().describe("The heartbeat's new ping key: its ping URLs are /ping/{pingKey}") });

export const pushAnswer = z.strictObject({ id: z.string().describe("ntfy's message id"), time, topic: z.string() });

export const healthAnswer = z.strictObject({
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  problems: z.array(z.string()).optional().describe("What is wrong but not fatal, while degraded"),
});

export const problemAnswer = z.strictObject({
  type: z.string(),
  title: z.string(),
  status: z.int(),
  detail: z.string(),
  errors: z.array(z.strictObject({ path: z.string().describe("JSON Pointer into the input"), message: z.string() })).optional(),
});

export const tokenAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  scope: z.enum(["read", "write", "ping", "admin"]),
  servers: z.array(z.string()).nullable().describe("The servers it may use; null: all of them"),
  createdAt: time,
});

export const tokensAnswer = z.strictObject({ tokens: z.array(tokenAnswer) });

export const createdTokenAnswer = tokenAnswer.extend({ token: z.string().describe("The secret: shown this once, never stored (only its SHA-256 is)") });

export const channelAnswer = z
  .looseObject({
    name: z.string(),
    type: z.string(),
    events: z.array(z.string()).nullable(),
    builtIn: z.boolean().describe("The ntfy channel the daemon's --ntfy-* flags make: shown, not stored"),
    createdAt: time.nullable(),
    updatedAt: time.nullable(),
  })
  .describe("The channel's fields as written, secrets shown as ***");

export const channelListAnswer = z.strictObject({ channels: z.array(channelAnswer) });

export const channelTestAnswer = z.strictObject({ channel: z.string(), ok: z.literal(true), id: z.string().describe("What the destination calls the message") });

const severity = z.enum(["info", "maintenance", "degraded", "outage"]);

export const announcementAnswer = z.strictObject({
  id: z.string(),
  title: z.string(),
  message: z.string().describe("Markdown, as written"),
  severity,
  servers: z.array(z.string()).nullable().describe("null: all servers"),
  startsAt: time,
  endsAt: time.nullable(),
  active: z.boolean().describe("Shown now: begun and not ended"),
  createdAt: time,
  updatedAt: time,
  updates: z
    .array(z.strictObject({ id: z.string(), message: z.string(), severity: severity.nullable().describe("The severity it set; null: unchanged"), createdAt: time }))
    .describe("Newest first"),
});
export const announcementsAnswer = z.strictObject({ announcements: z.array(announcementAnswer) });

export const statusPageAnswer = z.strictObject({
  slug: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  servers: z.array(z.string()).describe("Every server it shows anything of, in the order named"),
  sections: z.array(z.strictObject({ title: z.string(), services: z.array(z.string()) })).nullable().describe("Its sections; null: its servers whole"),
  public: z.boolean(),
  accentColor: z.string().nullable(),
  footerLinks: z.array(z.strictObject({ label: z.string(), url: z.string() })),
  hostnames: z.array(z.string()),
  showUptime: z.boolean(),
  showLatency: z.boolean(),
  showHistory: z.boolean(),
  timeZone: z.string().describe("The IANA time zone its dates are told in"),
  logo: z.string().nullable().describe("Where its logo is served (PUT /status-pages/{slug}/logo); null: none"),
  url: z.string().describe("Its path: /status/p/{slug}, or /status for the page main"),
  createdAt: time,
  updatedAt: time,
});
export const statusPagesAnswer = z.strictObject({ pages: z.array(statusPageAnswer) });

const serviceReport = z.strictObject({
  server: z.string(),
  service: z.string(),
  name: z.string(),
  uptime: z.number().nullable().describe("0 to 1; checks made while silenced or in maintenance left out; null without checks"),
  checks: z.int(),
  failures: z.int(),
  incidents: z.int().describe("Incidents open at any time in the month"),
  downtimeMs: z.number().describe("Time in incidents within the month, less the time silenced or in maintenance"),
  latencyMs: z.strictObject({ p50: z.number().nullable(), p95: z.number().nullable() }),
  slaTarget: z.number().nullable().describe("The check's slaTarget, percent"),
  slaMet: z.boolean().nullable().describe("null: no target, or no checks"),
  excluded: z.strictObject({ checks: z.int(), quietMs: z.number() }).describe("What was left out: checks made while silenced or in maintenance, and how long that was"),
});
export const reportAnswer = z.strictObject({
  month: z.string(),
  from: time,
  until: time.describe("The month's end, or now while it lasts"),
  complete: z.boolean().describe("The month is over"),
  note: z.string(),
  services: z.array(serviceReport),
});
