/**
 * The part of RFC 9535 (JSONPath) that a health check needs: singular queries made of name and index
 * selectors, e.g. `$.status`, `$.checks[0].state`, `$['content-type']`, `$.items[-1]`.
 * Wildcards, slices, filters and descendant segments select many nodes, which has no clear meaning for an
 * `equals` condition, so they are refused when the check is saved rather than guessed at when it runs.
 */

export type JsonPath = readonly (string | number)[];

export type ParsedPath = { readonly ok: true; readonly path: JsonPath } | { readonly ok: false; readonly error: string };

const nameFirst = /[A-Za-z_\u0080-\uffff]/;
const nameChar = /[A-Za-z0-9_\u0080-\uffff]/;
const escapes: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", "/": "/", "\\": "\\", "'": "'", '"': '"' };

export function parseJsonPath(text: string): ParsedPath {
  const fail = (at: number, what: string): ParsedPath => ({
    ok: false,
    error: `invalid JSONPath ${JSON.stringify(text)} at character ${at + 1}: ${what} (use $.name, $['name'] or $[0])`,
  });
  if (text[0] !== "$") return fail(0, "a path starts with $");
  const path: (string | number)[] = [];
  let i = 1;
  while (i < text.length) {
    const c = text[i];
    if (c === ".") {
      let j = i + 1;
      if (!nameFirst.test(text[j] ?? "")) return fail(j, "expected a member name after '.'");
      while (j < text.length && nameChar.test(text[j]!)) j++;
      path.push(text.slice(i + 1, j));
      i = j;
    } else if (c === "[") {
      const quote = text[i + 1];
      if (quote === "'" || quote === '"') {
        let j = i + 2;
        let name = "";
        while (j < text.length && text[j] !== quote) {
          if (text[j] === "\\") {
            const e = text[j + 1] ?? "";
            if (e === "u" && /^[0-9A-Fa-f]{4}$/.test(text.slice(j + 2, j + 6))) {
              name += String.fromCharCode(parseInt(text.slice(j + 2, j + 6), 16));
              j += 6;
              continue;
            }
            const decoded = escapes[e];
            if (decoded === undefined) return fail(j, `unknown escape \\${e}`);
            name += decoded;
            j += 2;
          } else {
            name += text[j];
            j++;
          }
        }
        if (text[j] !== quote || text[j + 1] !== "]") return fail(j, "unterminated name selector");
        path.push(name);
        i = j + 2;
      } else {
        const m = /^(-?(?:0|[1-9][0-9]*))\]/.exec(text.slice(i + 1));
        if (!m || m[1] === "-0") return fail(i + 1, "expected a quoted name or an integer index inside [ ]");
        const index = Number(m[1]);
        if (!Number.isSafeInteger(index)) return fail(i + 1, "index out of range");
        path.push(index);
        i += m[0].length + 1;
      }
    } else {
      return fail(i, "expected '.' or '['");
    }
  }
  return { ok: true, path };
}

/** The value at `path`, or `found: false` when any step does not resolve (a missing path is never a zero). */
export function resolveJsonPath(root: unknown, path: JsonPath): { found: true; value: unknown } | { found: false } {
  let node = root;
  for (const step of path) {
    if (typeof step === "number") {
      if (!Array.isArray(node)) return { found: false };
      const index = step < 0 ? node.length + step : step;
      if (index < 0 || index >= node.length) return { found: false };
      node = node[index];
    } else {
      if (node === null || typeof node !== "object" || Array.isArray(node)) return { found: false };
      if (!Object.hasOwn(node, step)) return { found: false };
      node = (node as Record<string, unknown>)[step];
    }
  }
  return { found: true, value: node };
}
