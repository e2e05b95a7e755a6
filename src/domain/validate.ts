/**
 * Validation of what comes from outside against the schemas of schema.ts: every problem, each with the JSON
 * Pointer (RFC 6901) of where it is, in words that say what to write instead.
 */
import type { z } from "zod";

/** Fields the API's answers add, which a document sent back must leave out. */
const readOnly = ["createdAt", "updatedAt", "state"] as const;

/** One problem with an input document, located by a JSON Pointer (RFC 6901) into it. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export function pointer(path: readonly PropertyKey[]): string {
  return path.map((p) => "/" + String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("");
}

/** Parse `input` against `schema`, returning every problem with a path, or the parsed value. */
export function validate<S extends z.ZodType>(
  schema: S,
  input: unknown,
): { ok: true; value: z.output<S> } | { ok: false; errors: FieldError[] } {
  const nul = nulStrings(input);
  const result = schema.safeParse(input, { error: plainMessage });
  if (result.success && nul.length === 0) return { ok: true, value: result.data };
  // Every problem, each place once: a NUL is the one to name where the schema objects to the same string.
  const errors = result.success ? [] : result.error.issues.flatMap(describeIssue).filter((e) => !nul.some((n) => n.path === e.path));
  return { ok: false, errors: [...nul, ...errors] };
}

/**
 * Every string (key or value) in `input` that holds a NUL: PostgreSQL's text cannot store one, so a document
 * with one is refused by name on both engines before anything is written, rather than failing a write.
 * Without recursion, and each object once: a YAML file's aliases may nest deep or refer to themselves.
 */
function nulStrings(input: unknown): FieldError[] {
  const found: FieldError[] = [];
  const message = "contains a NUL character (\\u0000), which cannot be stored; remove it";
  const seen = new Set<object>();
  const stack: [unknown, PropertyKey[]][] = [[input, []]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (value.includes("\u0000")) found.push({ path: pointer(path), message });
    } else if (typeof value === "object" && value !== null && !seen.has(value)) {
      seen.add(value);
      for (const [key, child] of Object.entries(value)) {
        const at = [...path, Array.isArray(value) ? Number(key) : key];
        if (key.includes("\u0000")) found.push({ path: pointer(at), message });
        stack.push([child, at]);
      }
    }
  }
  return found;
}

/**
 * healthd's words for the rules a schema states without a message of its own (zod's defaults read "Invalid
 * input: expected object, received undefined"). The path names the field; this says the rule.
 */
function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  const got = (value: unknown) =>
    value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "string" ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : typeof value === "object" ? "an object" : String(value);
  const kinds: Record<string, string> = { object: "an object", array: "a list", string: "a string", number: "a number", int: "an integer", boolean: "true or false" };
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `must be ${kinds[issue.expected] ?? issue.expected} (got ${got(issue.input)})`;
    case "too_small":
    case "too_big": {
      const limit = Number(issue.code === "too_small" ? issue.minimum : issue.maximum);
      const bound = issue.code === "too_small" ? "at least" : "at most";
      if (issue.origin === "string") return limit === 1 && issue.code === "too_small" ? "must not be empty" : `must be ${bound} ${limit} characters`;
      if (issue.origin === "array") return `must hold ${bound} ${limit} items`;
      return `must be ${bound} ${limit} (got ${got(issue.input)})`;
    }
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      return "does not match any of the forms it may take; see GET /openapi.json";
    case "invalid_format":
      return `must be a valid ${issue.format}`;
    default:
      return undefined;
  }
}

function describeIssue(issue: z.core.$ZodIssue): FieldError[] {
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => ({
      path: pointer([...issue.path, key]),
      message: (readOnly as readonly string[]).includes(key)
        ? "is read-only (the GET answer adds it); leave it out"
        : "is not a known field; remove it or check its spelling",
    }));
  }
  return [{ path: pointer(issue.path), message: issue.message }];
}
