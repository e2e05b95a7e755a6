/**
 * An HTTP check: its request and its expectations, the alternatives of which one must hold.
 */
import { z } from "zod";
import { parseJsonPath } from "../jsonpath.ts";
import { integer, limits, regex } from "./common.ts";
import { headerName, sentHeaders } from "./headers.ts";

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

const requestHeaders = sentHeaders("a check").default({});

/** The fields of an HTTP check as a document writes them: every one but `url` may be left out. */
export const httpFields = {
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
  followRedirects: z.boolean().default(true),
  verifyTls: z.boolean().default(true),
  expect: expectList.default([{ status: "2xx" }]),
  certWarnDays: integer(0, 3650, 14).nullable().default(null),
};
