/**
 * The documents healthd accepts from outside, as zod schemas. The HTTP API, `healthd apply` and the OpenAPI
 * document all come from these, so a rule is written once. Messages say what is wrong and what to write instead.
 */
import { Cron } from "croner";
import { z } from "zod";
import { parseJsonPath } from "./checks/jsonpath.ts";

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

/** ntfy refuses other topic names, and these reserved ones, so healthd refuses them when they are saved. */
export const topicPattern = /^[-_A-Za-z0-9]{1,64}$/;
export const reservedTopics = ["docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1"];
export const topic = z
  .string()
  .regex(topicPattern, "must be 1 to 64 characters of A-Z a-z 0-9 - _ (an ntfy topic)")
  .refine((t) => !reservedTopics.includes(t), `is reserved by ntfy (${reservedTopics.join(", ")}); choose another`);

const regex = z
  .string()
  .max(limits.patternLength)
  .superRefine((source, ctx) => {
    try {
      new RegExp(source);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: `is not a valid regular expression: ${(error as Error).message}` });
    }
  });

const statusCode = z
  .int("must be an HTTP status code, an integer from 100 to 599")
  .min(100, "must be an HTTP status code from 100 to 599")
  .max(599, "must be an HTTP status code from 100 to 599");
const statusClass = z.enum(["2xx", "3xx", "4xx", "5xx"], 'must be a status code or one of "2xx", "3xx", "4xx", "5xx"');
const statusOne = z.union([statusCode, statusClass], 'must be a status code such as 200 or a class such as "2xx"');
export const statusCondition = z.union([statusOne, z.array(statusOne).min(1).max(64)], {
  error: 'must be a status code, a class such as "2xx", or a list of those',
});

const jsonPath = z
  .string()
  .max(limits.patternLength)
  .superRefine((text, ctx) => {
    const parsed = parseJsonPath(text);
    if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.error });
  });

const jsonOperators = ["equals", "notEquals", "exists", "lessThan", "greaterThan"] as const;
const jsonCondition = z
  .strictObject({
    path: jsonPath,
    // Any JSON value (the document is JSON or YAML already parsed; a recursive schema would say no more).
    equals: z.unknown().describe("any JSON value").optional(),
    notEquals: z.unknown().describe("any JSON value").optional(),
    exists: z.boolean().optional(),
    lessThan: z.number().optional(),
    greaterThan: z.number().optional(),
  })
  .refine((c) => jsonOperators.some((op) => op in c), {
    message: "needs one of equals, notEquals, exists, lessThan, greaterThan",
  });

const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, "must be an HTTP header name such as content-type");
const headerCondition = z
  .strictObject({ name: headerName, matches: regex.optional(), equals: z.string().max(limits.headerValueBytes).optional() })
  .refine((c) => (c.matches === undefined) !== (c.equals === undefined), {
    message: "needs exactly one of matches or equals",
  });

const conditions = [
  "status",
  "bodyContains",
  "bodyNotContains",
  "bodyMatches",
  "json",
  "header",
  "maxLatencyMs",
  "certValidDays",
] as const;
export const alternative = z
  .strictObject({
    status: statusCondition.optional(),
    bodyContains: z.string().min(1).max(limits.patternLength).optional(),
    bodyNotContains: z.string().min(1).max(limits.patternLength).optional(),
    bodyMatches: regex.optional(),
    json: jsonCondition.optional(),
    header: headerCondition.optional(),
    maxLatencyMs: integer(1, 600_000, 2000).optional(),
    certValidDays: integer(0, 3650, 14).optional(),
  })
  .refine((a) => conditions.some((c) => a[c] !== undefined), {
    message: `an alternative needs at least one condition (${conditions.join(", ")})`,
  });

export const expectList = z
  .array(alternative)
  .min(1, "needs at least one alternative, for example [{\"status\": \"2xx\"}]")
  .max(limits.alternatives, `holds at most ${limits.alternatives} alternatives`);

const cron = z
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

/** Where a node probes from (--location), as checks name it. */
export const locationName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1 to 64 characters of A-Z a-z 0-9 . _ - (for example eu-west)");

/** A service this one depends on: "serverId/serviceId", or "serviceId" of the same server. */
const dependency = z
  .string()
  .regex(/^([A-Za-z0-9._-]{1,64}\/)?[A-Za-z0-9._-]{1,64}$/, 'must be "serverId/serviceId", or "serviceId" of the same server (for example web-01/db)');

/** An IANA time zone such as Europe/Berlin, as the runtime knows them. */
const timezone = z.string().refine((zone) => {
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

const methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

const url = z
  .string()
  .max(limits.urlLength)
  .superRefine((text, ctx) => {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be an absolute URL such as https://example.org/health" });
      return;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      ctx.addIssue({ code: "custom", message: `must use http or https (got ${parsed.protocol.slice(0, -1)})` });
    }
    if (parsed.username || parsed.password) {
      ctx.addIssue({ code: "custom", message: "must not carry credentials; send them in headers.authorization" });
    }
  });

/**
 * Headers healthd sends itself, or that only make sense between two hops: set by hand they would break every
 * request (undici refuses several outright), so they are refused when the check is saved.
 */
const reservedHeaders = ["connection", "content-length", "expect", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"];

/** What an HTTP/1.1 field value may hold (RFC 9110 5.5): visible characters, spaces and tabs, Latin-1 at most. */
const fieldValue = /^[\t\x20-\x7e\x80-\xff]*$/;

const requestHeaders = z
  .record(headerName, z.string().max(limits.headerValueBytes))
  .superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (reservedHeaders.includes(lower)) {
        ctx.addIssue({ code: "custom", path: [name], message: `is set by healthd itself (or is hop-by-hop) and cannot be sent by a check; remove it` });
      } else if (!fieldValue.test(value)) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "must not contain control characters (CR, LF, NUL, ...) or characters beyond Latin-1; percent-encode or remove them",
        });
      } else if (lower === "host" && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$/.test(value)) {
        ctx.addIssue({ code: "custom", path: [name], message: "must be a host name with an optional port, such as example.org:8080" });
      }
    }
    const names = Object.keys(headers).map((n) => n.toLowerCase());
    const repeated = names.find((n, i) => names.indexOf(n) !== i);
    if (repeated) ctx.addIssue({ code: "custom", message: `names ${repeated} twice (header names are case-insensitive); give it once` });
    if (names.length > limits.headersPerCheck) ctx.addIssue({ code: "custom", message: `holds at most ${limits.headersPerCheck} headers` });
  })
  .default({});

/** A check as it is written in a document: every field but `url` may be left out. */
/** The fields of a check as a document writes them; `checkInput` adds the rules between fields. */
export const checkFields = {
  url,
  // Methods are case-sensitive in HTTP, but `post` can only mean POST: one rule for the API and the CLI.
  method: z
    .preprocess((m) => (typeof m === "string" ? m.toUpperCase() : m), z.enum(methods, `must be one of ${methods.join(", ")}`))
    .default("GET"),
  headers: requestHeaders,
  body: z
    .string()
    .max(limits.requestBodyBytes, `must be at most ${limits.requestBodyBytes} characters`)
    .nullable()
    .default(null),
  intervalSeconds: integer(1, 86400, 60).nullable().optional(),
  cron: cron.nullable().optional(),
  timeoutMs: integer(1, 300_000, 10_000).default(10_000),
  followRedirects: z.boolean().default(true),
  verifyTls: z.boolean().default(true),
  expect: expectList.default([{ status: "2xx" }]),
  // Left out on purpose when absent: the data layer's column defaults supply them (notify true, threshold 2).
  notify: z.boolean().optional(),
  notifyThreshold: integer(0, 1000, 2).optional(),
  notifyTopic: topic.nullable().default(null),
  // Alerting controls (see the README): all optional, with the defaults in brackets there.
  paused: z.boolean().default(false),
  recoverThreshold: integer(1, 1000, 3).default(1),
  remindEveryMinutes: integer(1, 10_080, 60).nullable().default(null),
  certWarnDays: integer(0, 3650, 14).nullable().default(null),
  dependsOn: z
    .array(dependency)
    .max(limits.dependencies, `holds at most ${limits.dependencies} services`)
    .refine((refs) => new Set(refs).size === refs.length, "names a service twice; give each once")
    .default([]),
  // Several locations (see "Locations and quorum" in the README): null runs it once on any node.
  locations: z
    .array(locationName)
    .min(1, "names at least one location, or is null")
    .max(limits.locations, `holds at most ${limits.locations} locations`)
    .refine((names) => new Set(names).size === names.length, "names a location twice; give each once")
    .nullable()
    .default(null),
  quorum: integer(1, limits.locations, 2).nullable().default(null),
};

export const checkInput = z
  .strictObject(checkFields)
  .superRefine(
    (c: { cron?: unknown; intervalSeconds?: unknown; locations?: unknown; quorum?: unknown }, ctx) => {
      if (c.cron != null && c.intervalSeconds != null) {
        ctx.addIssue({
          code: "custom",
          path: ["cron"],
          message: "set either intervalSeconds or cron, not both (set the other to null)",
        });
      }
      if (typeof c.quorum === "number") {
        const count = Array.isArray(c.locations) ? c.locations.length : 0;
        if (count === 0) ctx.addIssue({ code: "custom", path: ["quorum"], message: "needs locations; list them, or set quorum to null" });
        else if (c.quorum > count) ctx.addIssue({ code: "custom", path: ["quorum"], message: `must be from 1 to the number of locations (${count})` });
      }
    },
    // Say it even when other fields are wrong too, so one round trip shows every problem.
    { when: (payload) => typeof payload.value === "object" && payload.value !== null },
  )
  .transform(({ cron, intervalSeconds, ...rest }) => ({
    ...rest,
    cron: cron ?? null,
    intervalSeconds: cron == null ? (intervalSeconds ?? 60) : null,
  }));

export const serviceDocument = z.strictObject({
  id,
  name: z.string().min(1).max(limits.nameLength).optional(),
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
}).superRefine((doc, ctx) => {
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
export type ServiceDocument = z.output<typeof serviceDocument>;
export type ServerDocument = z.output<typeof serverDocument>;
export type MaintenanceWindow = z.output<typeof maintenanceWindow>;
