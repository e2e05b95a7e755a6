/**
 * An http check's `steps`: requests made in order, each judged by its own expectations, each able to extract
 * values that later steps send as `{{steps.STEP.VALUE}}` in their url, headers and body. A step's left-out
 * url, method, headers, body and expect are the check's (a url may be relative to the check's; headers merge,
 * the step's winning). Everything a run could not resolve is refused here, when the check is saved, at the
 * field that holds it.
 */
import { z } from "zod";
import { mentionsSteps, parseSource, referencesOf } from "../steps.ts";
import { limits } from "./common.ts";
import { sentHeaders } from "./headers.ts";
import { httpFields } from "./http.ts";

/** The most steps a check makes, and values a step extracts: each step is a request within one timeoutMs. */
export const stepLimits = { steps: 10, values: 16, valueBytes: 4096 } as const;

const stepName = z.string().regex(/^[a-z0-9_-]{1,32}$/, "must be 1 to 32 characters of a-z 0-9 _ - (for example login)");
const valueName = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, "must be 1 to 32 characters of A-Z a-z 0-9 _ - (for example token)");

const source = z
  .string()
  .max(limits.patternLength)
  .superRefine((text, ctx) => {
    const parsed = parseSource(text);
    if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.error });
  });

export const step = z.strictObject({
  name: stepName.describe("unique within the check; later steps name its values as {{steps.NAME.VALUE}}"),
  // Checked in stepsRules, with its references.
  url: z.string().min(1).max(limits.urlLength).describe("absolute, or relative to the check's url (/api/me); left out: the check's url").optional(),
  method: httpFields.method.unwrap().describe("left out: the check's method").optional(),
  headers: sentHeaders("a step").describe("sent over the check's headers (a step's wins by name)").optional(),
  body: httpFields.body.unwrap().describe("left out: the check's body").optional(),
  expect: httpFields.expect.unwrap().describe("this step's alternatives; left out: the check's expect").optional(),
  extract: z
    .record(valueName, source)
    .refine((values) => Object.keys(values).length <= stepLimits.values, `holds at most ${stepLimits.values} values`)
    .describe("value name: $.json.path, header:NAME or cookie:NAME, taken from this step's answer")
    .optional(),
});

export const stepsField = z
  .array(step)
  .min(1, "needs at least one step, or leave steps out")
  .max(stepLimits.steps, `holds at most ${stepLimits.steps} steps`)
  .describe("requests made in order under one timeoutMs; the check fails at the first failing one (below)")
  .optional();

export type Step = z.output<typeof step>;

type Issue = (path: readonly (string | number)[], message: string) => void;

/**
 * The rules between the steps and the check: names once each, every reference to a value a step before it
 * extracts, every url one that resolves, and no reference outside the steps (nothing there could fill it).
 */
export function stepsRules(c: { steps?: unknown; url?: unknown; headers?: unknown; body?: unknown }, ctx: z.RefinementCtx): void {
  if (!Array.isArray(c.steps)) return;
  const issue: Issue = (path, message) => ctx.addIssue({ code: "custom", path: [...path], message });
  const steps = c.steps as Partial<Step>[];
  for (const [field, text] of [["url", c.url], ["body", c.body], ...Object.entries((c.headers ?? {}) as Record<string, unknown>).map(([n, v]) => [`headers/${n}`, v])] as const) {
    if (typeof text === "string" && mentionsSteps(text)) {
      issue(String(field).split("/"), "holds a {{steps...}} reference, which only a step's url, headers and body may hold; move it into the step that sends it");
    }
  }
  const seen = new Map<string, number>();
  steps.forEach((s, i) => {
    if (typeof s?.name !== "string") return;
    const first = seen.get(s.name);
    if (first !== undefined) issue(["steps", i, "name"], `repeats the name of steps/${first}; step names are unique within a check`);
    else seen.set(s.name, i);
  });
  const names = steps.map((s) => s?.name);
  steps.forEach((s, i) => {
    if (!s || typeof s !== "object") return;
    const check = (path: readonly (string | number)[], text: unknown) => {
      if (typeof text !== "string") return;
      const { references, malformed } = referencesOf(text);
      if (malformed !== null) issue(path, `holds ${JSON.stringify(malformed)}, which is not a reference; write {{steps.STEP.VALUE}} (for example {{steps.login.token}})`);
      for (const ref of references) {
        const at = names.indexOf(ref.step);
        if (at < 0) {
          issue(path, `names step ${JSON.stringify(ref.step)}, which this check does not have (its steps: ${names.filter((n) => typeof n === "string").join(", ")})`);
        } else if (at >= i) {
          issue(path, `names step ${ref.step}, which ${at === i ? "is this step" : "runs after this one"}; a step uses only the values of the steps before it`);
        } else if (!Object.hasOwn(steps[at]?.extract ?? {}, ref.value)) {
          const has = Object.keys(steps[at]?.extract ?? {});
          issue(path, `names {{steps.${ref.step}.${ref.value}}}, but step ${ref.step} extracts no ${ref.value} (${has.length > 0 ? `it extracts: ${has.join(", ")}` : "give it extract"})`);
        }
      }
    };
    check(["steps", i, "url"], s.url);
    check(["steps", i, "body"], s.body);
    for (const [name, value] of Object.entries(s.headers ?? {})) check(["steps", i, "headers", name], value);
    if (typeof s.url === "string" && typeof c.url === "string") {
      const problem = urlProblem(s.url, c.url);
      if (problem) issue(["steps", i, "url"], problem);
    }
  });
}

/** Why a step's url (references filled with a sample) cannot be requested from the check's url, or null. */
function urlProblem(url: string, base: string): string | null {
  const sample = url.replace(/\{\{[^{}]*\}\}/g, "x");
  let parsed: URL;
  try {
    parsed = new URL(sample, base);
  } catch {
    return "must be an absolute URL or a path relative to the check's url (for example /api/me)";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `must use http or https (got ${parsed.protocol.slice(0, -1)})`;
  if (parsed.username || parsed.password) return "must not carry credentials; send them in the step's headers.authorization";
  return null;
}
