/**
 * The words of an http check's `steps`, pure: where a step takes a value from (`extract`), and the references
 * `{{steps.STEP.VALUE}}` by which a later step's url, headers and body use it. The schema (schema/steps.ts)
 * refuses what cannot work when a check is saved; the controller (checks/steps.ts) fills them when it runs.
 */
import { parseJsonPath, type JsonPath } from "./jsonpath.ts";

/**
 * Where an extracted value comes from: `$...` a JSONPath into the step's JSON body, `header:NAME` a header of
 * its answer (repeated ones joined with ", "), `cookie:NAME` the value of the cookie NAME its Set-Cookie sets.
 */
export type Source =
  | { readonly from: "json"; readonly path: JsonPath; readonly text: string }
  | { readonly from: "header"; readonly name: string; readonly text: string }
  | { readonly from: "cookie"; readonly name: string; readonly text: string };

const token = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;

export function parseSource(text: string): { ok: true; source: Source } | { ok: false; error: string } {
  if (text.startsWith("$")) {
    const parsed = parseJsonPath(text);
    return parsed.ok ? { ok: true, source: { from: "json", path: parsed.path, text } } : parsed;
  }
  const m = /^(header|cookie):(.*)$/i.exec(text);
  if (m && token.test(m[2]!)) {
    const from = m[1]!.toLowerCase() as "header" | "cookie";
    return { ok: true, source: { from, name: from === "header" ? m[2]!.toLowerCase() : m[2]!, text } };
  }
  return {
    ok: false,
    error: `must be a JSONPath into the JSON body ($.access_token), header:NAME (header:location) or cookie:NAME (cookie:session); got ${JSON.stringify(text.slice(0, 80))}`,
  };
}

/** One `{{steps.STEP.VALUE}}` in a text, where it starts and ends. */
export interface Reference {
  readonly step: string;
  readonly value: string;
  readonly start: number;
  readonly end: number;
}

// Spaces inside the braces are allowed ({{ steps.login.token }}); other {{...}} are not ours and stay as written.
const reference = /\{\{\s*steps\.([^.\s{}]*)\.([^\s{}]*)\s*\}\}/g;
const begun = /\{\{\s*steps\b/g;

/**
 * The references of `text`, and the first `{{steps` that is not one (a typo would otherwise be sent as written,
 * every run, and fail far from its cause).
 */
export function referencesOf(text: string): { references: Reference[]; malformed: string | null } {
  const references: Reference[] = [];
  const starts = new Set<number>();
  for (const m of text.matchAll(reference)) {
    references.push({ step: m[1]!, value: m[2]!, start: m.index, end: m.index + m[0].length });
    starts.add(m.index);
  }
  for (const m of text.matchAll(begun)) {
    if (!starts.has(m.index)) return { references, malformed: text.slice(m.index, m.index + 40) };
  }
  return { references, malformed: null };
}

/** `text` with each reference replaced by `valueOf`'s answer for it (it is only asked for references that exist). */
export function fillReferences(text: string, valueOf: (ref: Reference) => string): string {
  const { references } = referencesOf(text);
  if (references.length === 0) return text;
  let out = "";
  let at = 0;
  for (const ref of references) {
    out += text.slice(at, ref.start) + valueOf(ref);
    at = ref.end;
  }
  return out + text.slice(at);
}

/** Whether a text holds anything that looks like a reference (for fields that may not hold one). */
export const mentionsSteps = (text: string) => /\{\{\s*steps\b/.test(text);

/** The value of cookie `name` in an answer's Set-Cookie headers (joined with ", "), or undefined. */
export function cookieValue(setCookie: string, name: string): string | undefined {
  // A cookie's value holds no comma or semicolon (RFC 6265 4.1.1); an Expires date's comma starts no name=.
  for (const part of setCookie.split(/,\s*/)) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).split(";")[0]!.trim();
      return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
    }
  }
  return undefined;
}
