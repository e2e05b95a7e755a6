/**
 * Users' patterns (`bodyMatches`, header `matches`, `banner.matches`, `answers.matches`), compiled for a
 * linear-time engine: re2js, a pure-JavaScript port of RE2. A match costs time in proportion to the text, never
 * exponential in it, so (A+)+B on a body a hostile target shapes is as cheap as ^ok: no budget to run out of
 * on a loaded machine. The factor grows with the pattern's size where no automaton fits it (a[ab]{200}c on
 * 1 MiB of a and b: seconds; bench:patterns): checks/matching.ts runs such matches off the event loop. The price
 * is what RE2 cannot express (backreferences, lookaround): those are refused when the service is saved, by
 * the schema, through `patternProblem`.
 *
 * The syntax is JavaScript's as far as RE2 goes: `translateRegExp` turns the JavaScript-only spellings
 * (`\u00e9`, `\cA`, `[^]`, `(?<name>`) into RE2's, and RE2 adds inline flags such as `(?i)`. Where the two
 * differ on the same spelling, RE2's meaning holds: `\s` is ASCII white space, `.` matches `\r`.
 */
import { RE2JS } from "re2js";

/**
 * A compiled pattern: `test` says whether it matches anywhere in a text. `size` is its program's length in
 * instructions: a match costs at most about `size` steps per character of text, whatever the text.
 */
export type Pattern =
  | { readonly ok: true; readonly source: string; readonly size: number; readonly test: (text: string) => boolean }
  | { readonly ok: false; readonly problem: string };

/** Why a pattern cannot run, as a sentence naming it and saying what to do; null when it can. */
export function patternProblem(source: string): string | null {
  const pattern = compilePattern(source);
  return pattern.ok ? null : pattern.problem;
}

// Checks run the same few patterns over and over: compile each once. Bounded, as the old cache was, against a
// stream of distinct patterns (each is at most 1,000 characters; the engine's own DFA cache is bounded too).
const compiled = new Map<string, Pattern>();

/** The pattern compiled, or why it cannot be. Cached by its text. */
export function compilePattern(source: string): Pattern {
  let pattern = compiled.get(source);
  if (!pattern) {
    if (compiled.size >= 10_000) compiled.clear();
    pattern = compile(source);
    compiled.set(source, pattern);
  }
  return pattern;
}

const engine = "healthd runs patterns on a linear-time engine (RE2 syntax), which has no backreferences or lookaround";

function compile(source: string): Pattern {
  const unsupported = unsupportedConstruct(source);
  if (unsupported) {
    return {
      ok: false,
      problem: `/${source}/ uses ${unsupported}: ${engine}; rewrite it without them (for a backreference, spell the repeated text out; for lookaround, match the text around it)`,
    };
  }
  try {
    const re = RE2JS.compile(RE2JS.translateRegExp(source));
    // The engine keeps the automaton states a text made it build: up to 2 MB a pattern after 1 MiB shaped for
    // it, for as long as the pattern is cached. Dropped after each match; rebuilding them costs nothing
    // measurable (bench:patterns' patterns on 100 KB: 0.64 ms kept, 0.66 ms rebuilt).
    return {
      ok: true,
      source,
      size: re.programSize(),
      test: (text) => {
        try {
          return re.test(text);
        } finally {
          re.reset();
        }
      },
    };
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, "");
    return { ok: false, problem: `/${source}/ is not a valid pattern (${reason}); ${engine}, and otherwise reads JavaScript's syntax: fix the pattern` };
  }
}

/**
 * The JavaScript constructs RE2 cannot run, found before translation: `translateRegExp` would turn `\k<name>`
 * into the letters `k<name>` (JavaScript's own reading when there are no named groups), a pattern that silently
 * means something else; the others RE2 refuses with a message that does not say why.
 */
function unsupportedConstruct(source: string): string | null {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      if (!inClass && /[1-9]/.test(next)) return `a backreference (\\${next})`;
      if (!inClass && next === "k" && source[i + 2] === "<") return `a backreference (${source.slice(i, source.indexOf(">", i) + 1 || undefined)})`;
      i++;
    } else if (inClass) {
      if (c === "]") inClass = false;
    } else if (c === "[") {
      // `[]` and `[^]` are whole classes in JavaScript (nothing, anything); `[]a]` is not a class holding `]`.
      if (source[i + 1] === "]") i++;
      else if (source[i + 1] === "^" && source[i + 2] === "]") i += 2;
      else inClass = true;
    } else if (c === "(" && source[i + 1] === "?") {
      const rest = source.slice(i + 2, i + 4);
      if (rest.startsWith("=")) return "lookahead ((?=...))";
      if (rest.startsWith("!")) return "negative lookahead ((?!...))";
      if (rest === "<=") return "lookbehind ((?<=...))";
      if (rest === "<!") return "negative lookbehind ((?<!...))";
    }
  }
  return null;
}
