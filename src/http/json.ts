/**
 * Reading a JSON body strictly. JSON.parse keeps the last of two equal keys, so `{"services": [...],
 * "services": []}` would silently delete every service: a key given twice in one object is refused, with the
 * JSON Pointer of the second. Nesting is bounded too, so that no body can exhaust the stack.
 */
import { limits } from "../domain/schema/common.ts";
import { pointer, type FieldError } from "../domain/validate.ts";

export const maxDepth = limits.nesting;

/** Parse `text`; answers the value, or the problems (syntax, a repeated key, too deep) as field errors. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; errors: FieldError[]; detail: string } {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    return { ok: false, detail: `the body is not valid JSON: ${(error as Error).message}`, errors: [{ path: "", message: "malformed JSON" }] };
  }
  const problem = scan(text);
  if (problem) return { ok: false, detail: `the body is invalid: ${problem.path || "/"}: ${problem.message}`, errors: [problem] };
  return { ok: true, value };
}

/**
 * Walk valid JSON text, without recursion, looking for a key given twice in one object or nesting deeper than
 * `maxDepth`. Strings are skipped by their quotes and escapes; keys are decoded to compare them as JSON does.
 */
function scan(text: string): FieldError | undefined {
  const frames: { keys: Set<string> | null; path: (string | number)[]; index: number }[] = [];
  let i = 0;
  let pendingKey: string | undefined;
  const readString = (): string => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  while (i < text.length) {
    const c = text[i]!;
    const top = frames.at(-1);
    if (c === "{" || c === "[") {
      const path = top ? [...top.path, top.keys ? pendingKey! : top.index] : [];
      if (frames.length >= maxDepth) return { path: pointer(path), message: `nests deeper than ${maxDepth} levels` };
      frames.push({ keys: c === "{" ? new Set() : null, path, index: 0 });
      pendingKey = undefined;
      i++;
    } else if (c === "}" || c === "]") {
      frames.pop();
      i++;
    } else if (c === ",") {
      if (top && !top.keys) top.index++;
      i++;
    } else if (c === '"') {
      const expectsKey = top?.keys && pendingKey === undefined;
      const s = readString();
      if (expectsKey) {
        if (top.keys!.has(s)) return { path: pointer([...top.path, s]), message: "is given twice in the same object; give each key once" };
        top.keys!.add(s);
        pendingKey = s;
      } else if (top?.keys) pendingKey = undefined; // a string value: the next string is a key
    } else {
      // Whitespace, ':', or a number, true, false, null: a value ends a key's pair like a string does.
      if (c !== ":" && c !== " " && c !== "\t" && c !== "\n" && c !== "\r" && top?.keys) pendingKey = undefined;
      i++;
    }
  }
  return undefined;
}
