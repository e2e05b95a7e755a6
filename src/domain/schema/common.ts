/**
 * What every document and every kind of check shares: bounds, ids, times, topics, patterns, cron patterns, time
 * zones, maintenance windows, and the fields every check has (its alerting) or every active check has (its
 * schedule, timeout and locations). Messages say what is wrong and what to write instead.
 */
import { Cron } from "croner";
import { z } from "zod";
import { patternProblem } from "../pattern.ts";

/** Bounds on what one document may hold; they keep one PUT from exhausting the daemon. */
export const limits = {
  servicesPerServer: 1000,
  alternatives: 16,
  headersPerCheck: 50,
  headerValueBytes: 8192,
  requestBodyBytes: 65536,
  nameLength: 200,
  urlLength: 2048,
  patternLength: 1000,
  dependencies: 32,
  locations: 16,
  maintenanceWindows: 32,
  tagsPerService: 20,
  /** Levels of nesting of a JSON body, or of a file apply and import read (past it, recursive parsers overflow). */
  nesting: 64,
  /** A file apply and import read (a servers file of 1,000 servers is a few MiB); past it, refused unread. */
  fileBytes: 10 * 1024 * 1024,
} as const;

/** An integer from `min` to `max`, with a message that says so and gives an example. */
export const integer = (min: number, max: number, example: number) => {
  const message = `must be an integer from ${min} to ${max} (for example ${example})`;
  return z.int(message).min(min, message).max(max, message);
};

/**
 * A time in a query string or a body: ISO 8601 with a zone (2026-01-31T12:00:00Z, ...+02:00) or a plain
 * date (midnight UTC). A `+` sent unencoded in a query arrives as a space; the message says how to send it.
 */
export const time = z.string().transform((text, ctx) => {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const full = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  if (!date && !full) {
    const hint = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)? \d{2}:\d{2}$/.test(text)
      ? `; a + in a query string arrives as a space: send it as %2B (${text.replace(" ", "%2B")})`
      : "";
    ctx.addIssue({ code: "custom", message: `must be an ISO 8601 date or time such as 2026-01-31 or 2026-01-31T12:00:00Z${hint}` });
    return z.NEVER;
  }
  const ms = Date.parse(date ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: "custom", message: "is not a real date and time" });
    return z.NEVER;
  }
  return ms;
});

const idPattern = /^[A-Za-z0-9._-]{1,64}$/;
export const id = z
  .string()
  .regex(idPattern, "must be 1 to 64 characters of A-Z a-z 0-9 . _ - (for example web-01)")
  // They would be path segments of their own in every URL that names them (/services/..).
  .refine((value) => value !== "." && value !== "..", 'cannot be "." or ".." (they mean something else in a URL path)');

/**
 * Tags label a service: the console and GET /services?tag= filter by them. A word without spaces as
 * Healthchecks.io's are ("backups"), or Uptime Kuma's name and value joined by a colon ("env:prod"); lowercased,
 * so "Prod" and "prod" are one tag and a filter need not guess the case. Labels only: a change of them never
 * restarts a check. A few per service (a filter, not a database), a dozen characters each in practice.
 */
export const tagPattern = /^[a-z0-9][a-z0-9_.:\/-]{0,63}$/;
export const tag = z
  .string()
  .transform((text) => text.toLowerCase())
  .pipe(z.string().regex(tagPattern, 'must be 1 to 64 characters of a-z 0-9 _ . : / - starting with a letter or digit (for example backups or env:prod)'));
export const tagList = z
  .array(tag)
  .max(limits.tagsPerService, `holds at most ${limits.tagsPerService} tags`)
  .refine((tags) => new Set(tags).size === tags.length, "names a tag twice (tags are lowercased); name each once")
  .default([]);

/** ntfy refuses other topic names, and these reserved ones, so healthd refuses them when they are saved. */
export const topicPattern = /^[-_A-Za-z0-9]{1,64}$/;
export const reservedTopics = ["docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1"];
export const topic = z
  .string()
  .regex(topicPattern, "must be 1 to 64 characters of A-Z a-z 0-9 - _ (an ntfy topic)")
  .refine((t) => !reservedTopics.includes(t), `is reserved by ntfy (${reservedTopics.join(", ")}); choose another`);

/** A user's pattern: one the linear-time engine checks run on can compile (see domain/pattern.ts). */
export const regex = z
  .string()
  .max(limits.patternLength)
  .superRefine((source, ctx) => {
    const problem = patternProblem(source);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  });


export const cron = z
  .string()
  .max(200)
  .superRefine((pattern, ctx) => {
    const fields = pattern.trim().split(/\s+/).length;
    if (fields !== 5 && fields !== 6) {
      ctx.addIssue({ code: "custom", message: `must have 5 fields (or 6, seconds first); got ${fields}` });
      return;
    }
    let next: Date | null;
    try {
      next = new Cron(pattern, { paused: true }).nextRun();
    } catch (error) {
      ctx.addIssue({ code: "custom", message: `is not a valid cron pattern: ${(error as Error).message}` });
      return;
    }
    // A date that no month has (0 0 30 2 *): a check that never runs, a window that never opens.
    if (next === null) ctx.addIssue({ code: "custom", message: `never fires (${pattern.trim()} names no date that exists); check its day and month` });
  });


/** A service this one depends on: "serverId/serviceId", or "serviceId" of the same server. */
export const dependency = z
  .string()
  .regex(/^([A-Za-z0-9._-]{1,64}\/)?[A-Za-z0-9._-]{1,64}$/, 'must be "serverId/serviceId", or "serviceId" of the same server (for example web-01/db)');

/** An IANA time zone such as Europe/Berlin, as the runtime knows them. */
export const timezone = z.string().refine((zone) => {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}, "must be an IANA time zone such as Europe/Berlin or UTC");

/** A recurring window in which a server's services (or some) are silenced. */
export const maintenanceWindow = z.strictObject({
  cron,
  durationMinutes: integer(1, 10_080, 60),
  services: z.array(id).min(1).max(limits.servicesPerServer).optional(),
  timezone: timezone.optional(),
  reason: z.string().max(limits.nameLength).optional(),
});

/** The channels a check or a server sends to (their names; `ntfy` is the daemon's). */
export const channelList = z
  .array(id)
  .min(1, "must name at least one channel, or be null for the default")
  .max(16)
  .refine((names) => new Set(names).size === names.length, "names a channel twice; name each once")
  .nullable()
  .default(null);

/**
 * Escalation: each step sends an open, unacknowledged incident's DOWN to its channels `afterMinutes` after the
 * incident opened, once (policy/escalation.ts). Steps ascend; a check's list overrides its server's.
 */
export const escalationSteps = z
  .array(
    z.strictObject({
      afterMinutes: integer(1, 10_080, 10),
      channels: z
        .array(id)
        .min(1, "must name at least one channel")
        .max(16)
        .refine((names) => new Set(names).size === names.length, "names a channel twice; name each once"),
    }),
  )
  .min(1, "must hold at least one step, or be null for none")
  .max(8, "holds at most 8 steps")
  .superRefine((steps, ctx) => {
    steps.forEach((step, i) => {
      const before = steps[i - 1];
      if (before && step.afterMinutes <= before.afterMinutes) {
        ctx.addIssue({ code: "custom", path: [i, "afterMinutes"], message: `must be more than the step before it (${before.afterMinutes}): steps ascend` });
      }
    });
  })
  // Optional rather than defaulted to null: documents and answers without escalation stay as they were.
  .nullable()
  .optional();

/** Where a node probes from (--location), as checks name it. */
export const locationName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1 to 64 characters of A-Z a-z 0-9 . _ - (for example eu-west)");

/**
 * What every check has: who is told and when (see docs/guide/silences-and-maintenance.md). Left-out `notify` and
 * `notifyThreshold` are the data layer's to fill (notify true; notifyThreshold 2, and 0 for a heartbeat).
 */
export const alertingFields = {
  notify: z.boolean().optional(),
  notifyThreshold: integer(0, 1000, 2).optional(),
  notifyTopic: topic.nullable().default(null),
  paused: z.boolean().default(false),
  recoverThreshold: integer(1, 1000, 3).default(1),
  remindEveryMinutes: integer(1, 10_080, 60).nullable().default(null),
  dependsOn: z
    .array(dependency)
    .max(limits.dependencies, `holds at most ${limits.dependencies} services`)
    .refine((refs) => new Set(refs).size === refs.length, "names a service twice; give each once")
    .default([]),
  // Where its notifications go (policy/route.ts); null: its server's channels, else the default.
  channels: channelList,
  // Who is told when nobody acknowledges an incident (policy/escalation.ts); null: its server's steps.
  escalate: escalationSteps,
  // The uptime a month should reach, in percent: reports say whether it was met. null: no target.
  slaTarget: z
    .number("must be a percentage such as 99.9, or null")
    .gt(0, "must be a percentage above 0 and at most 100 (for example 99.9)")
    .lte(100, "must be a percentage above 0 and at most 100 (for example 99.9)")
    .nullable()
    .default(null),
};

/** What every active check (one healthd makes: http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql, redis) has: its schedule, its timeout, where it runs. */
export const activeFields = {
  intervalSeconds: integer(1, 86400, 60).nullable().optional(),
  cron: cron.nullable().optional(),
  timeoutMs: integer(1, 300_000, 10_000).default(10_000),
  // Several locations (see docs/guide/several-nodes.md): null runs it once on any node.
  locations: z
    .array(locationName)
    .min(1, "names at least one location, or is null")
    .max(limits.locations, `holds at most ${limits.locations} locations`)
    .refine((names) => new Set(names).size === names.length, "names a location twice; give each once")
    .nullable()
    .default(null),
  quorum: integer(1, limits.locations, 2).nullable().default(null),
  // A pass slower than this makes the service degraded (amber, still up for uptime); null: never slow.
  slowMs: integer(1, 600_000, 1000).nullable().default(null),
  notifySlow: z.boolean().default(false),
  // Warn (DOMAIN) when the registration of the host's registered domain expires in fewer days (RDAP, daily).
  domainWarnDays: integer(1, 3650, 30).nullable().default(null),
};

/** The rules between the active fields: one schedule, and a quorum among the locations listed. */
export function activeRules(c: { cron?: unknown; intervalSeconds?: unknown; locations?: unknown; quorum?: unknown; slowMs?: unknown; notifySlow?: unknown; timeoutMs?: unknown }, ctx: z.RefinementCtx): void {
  if (c.notifySlow === true && c.slowMs == null) ctx.addIssue({ code: "custom", path: ["notifySlow"], message: "needs slowMs (how slow is slow); set it, or leave notifySlow out" });
  if (typeof c.slowMs === "number" && typeof c.timeoutMs === "number" && c.slowMs >= c.timeoutMs) {
    ctx.addIssue({ code: "custom", path: ["slowMs"], message: `must be less than timeoutMs (${c.timeoutMs}): a check that slow has failed` });
  }
  if (c.cron != null && c.intervalSeconds != null) {
    ctx.addIssue({ code: "custom", path: ["cron"], message: "set either intervalSeconds or cron, not both (set the other to null)" });
  }
  if (typeof c.quorum === "number") {
    const count = Array.isArray(c.locations) ? c.locations.length : 0;
    if (count === 0) ctx.addIssue({ code: "custom", path: ["quorum"], message: "needs locations; list them, or set quorum to null" });
    else if (c.quorum > count) ctx.addIssue({ code: "custom", path: ["quorum"], message: `must be from 1 to the number of locations (${count})` });
  }
}

/** An active check's schedule as stored: a cron pattern, or else an interval (60 s when neither is given). */
export function activeSchedule<T extends { cron?: string | null | undefined; intervalSeconds?: number | null | undefined }>({ cron, intervalSeconds, ...rest }: T) {
  return { ...rest, cron: cron ?? null, intervalSeconds: cron == null ? (intervalSeconds ?? 60) : null };
}
