/**
 * The expectation evaluator: pure. Given what a server answered and a check's `expect` list, it says which
 * alternative held, or why none did. No clock, network or state: the controller hands in every fact. User
 * patterns run on a linear-time engine (pattern.ts), compiled once per alternative, matched through the
 * `Matches` the controller hands in (matching.ts decides where a costly one runs).
 */
import type { Alternative, ErrorKind } from "../domain/model.ts";
import { parseJsonPath, resolveJsonPath } from "../domain/jsonpath.ts";
import { compilePattern, type Pattern } from "../domain/pattern.ts";
import type { Matches } from "./matching.ts";

/** What a checked server answered, as the evaluator needs it. */
export interface Observation {
  readonly status: number;
  /** Lower-case header names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** The decoded body (invalid UTF-8 becomes U+FFFD); empty for HEAD and bodiless answers. */
  readonly body: string;
  readonly latencyMs: number;
  /** When the TLS certificate stops being valid (Unix ms), or null over plain HTTP. */
  readonly certValidTo: number | null;
  /** When the check ran (Unix ms), for the certificate's remaining days. */
  readonly checkedAt: number;
}

export type Verdict =
  | { readonly ok: true; readonly matched: number }
  | { readonly ok: false; readonly errorKind: ErrorKind; readonly error: string };

export interface Failure {
  readonly kind: ErrorKind;
  readonly message: string;
}

/** One condition of an alternative, on what a check of some kind observed: null when it holds. */
export type Condition<O> = (observed: O, matches: Matches) => Failure | null;

/**
 * The first alternative whose conditions all hold, or the failure of the closest one (most of its conditions
 * held; the first such), said with its index when there are several. Every kind of check judges this way.
 */
export function firstHolding<A, O>(expect: readonly A[], conditionsOf: (a: A) => readonly Condition<O>[], observed: O, matches: Matches): Verdict {
  let closest: { index: number; failure: Failure; score: number } | undefined;
  for (let index = 0; index < expect.length; index++) {
    // Every condition runs (the score counts those that held); no arrays: this runs for every check.
    const conditions = conditionsOf(expect[index]!);
    let failure: Failure | null = null;
    let failed = 0;
    for (const condition of conditions) {
      const result = condition(observed, matches);
      if (result === null) continue;
      failure ??= result;
      failed++;
    }
    if (failure === null) return { ok: true, matched: index };
    const score = (conditions.length - failed) / conditions.length;
    if (!closest || score > closest.score) closest = { index, failure, score };
  }
  if (!closest) return { ok: false, errorKind: "internal", error: "the check has no alternatives" };
  const where = expect.length > 1 ? ` (no alternative held; closest is #${closest.index})` : "";
  return { ok: false, errorKind: closest.failure.kind, error: closest.failure.message + where };
}

/**
 * `contains` and `matches` on an answer read as text (a datagram, a WebSocket message, a database's first row):
 * the conditions the kinds that answer in text share, each failing as `answer` with `shown(observed)` saying
 * what came. A pattern is compiled once, here, and tested through `matches` (a costly one off the loop).
 */
export function textConditions<O>(a: { readonly contains?: string; readonly matches?: string }, textOf: (o: O) => string, shown: (o: O) => string): Condition<O>[] {
  const list: Condition<O>[] = [];
  if (a.contains !== undefined) {
    const text = a.contains;
    list.push((o) => (textOf(o).includes(text) ? null : { kind: "answer", message: `${shown(o)} does not contain ${quote(text)}` }));
  }
  if (a.matches !== undefined) {
    const source = a.matches;
    const compiled = compilePattern(source);
    list.push((o, matches) => {
      if (!compiled.ok) return { kind: "answer", message: cannotRun(compiled) };
      return matches.test(compiled, textOf(o)) ? null : { kind: "answer", message: `${shown(o)} does not match /${source}/` };
    });
  }
  return list;
}

export function latencyCondition(max: number): Condition<{ readonly latencyMs: number }> {
  return (o) => (o.latencyMs <= max ? null : { kind: "latency", message: `answered in ${Math.round(o.latencyMs)} ms, more than the ${max} ms allowed` });
}

export function certCondition(days: number, without: string): Condition<{ readonly certValidTo: number | null; readonly checkedAt: number }> {
  return (o) => {
    if (o.certValidTo === null) return { kind: "cert", message: without };
    const left = (o.certValidTo - o.checkedAt) / 86_400_000;
    if (left >= days) return null;
    const on = new Date(o.certValidTo).toISOString().slice(0, 10);
    return left < 0
      ? { kind: "cert", message: `TLS certificate expired on ${on}` }
      : { kind: "cert", message: `TLS certificate expires in ${Math.floor(left)} days (${on}), less than the ${days} required` };
  };
}

type StatusSpec = NonNullable<Alternative["status"]>;

export function evaluate(expect: readonly Alternative[], response: Observation, matches: Matches): Verdict {
  const verdict = firstHolding(expect, conditionsOf, new Context(response), matches);
  if (verdict.ok || expect.length === 0) return verdict;
  // When no alternative allows the status, that is what to say, whatever else failed.
  const statuses = expect.map((a) => a.status);
  if (statuses.every((s) => s !== undefined && !statusMatches(s, response.status))) {
    const wanted = [...new Set(statuses.flatMap((s) => (Array.isArray(s) ? s : [s!])))].join(", ");
    const which = expect.length > 1 ? "matched no alternative" : "was not expected";
    return { ok: false, errorKind: "status", error: `status ${response.status} ${which} (expected ${wanted})` };
  }
  return verdict;
}

// A check's alternatives are the same objects run after run: build their conditions once.
const built = new WeakMap<Alternative, Condition<Context>[]>();
function conditionsOf(a: Alternative): Condition<Context>[] {
  let list = built.get(a);
  if (!list) {
    list = buildConditions(a);
    built.set(a, list);
  }
  return list;
}

/** The conditions of one alternative, cheapest first (the body ones may parse JSON or run a regex). */
function buildConditions(a: Alternative): Condition<Context>[] {
  const list: Condition<Context>[] = [];
  if (a.status !== undefined) {
    const spec = a.status;
    list.push((c) =>
      statusMatches(spec, c.response.status)
        ? null
        : { kind: "status", message: `status ${c.response.status}, expected ${[spec].flat().join(", ")}` },
    );
  }
  if (a.header !== undefined) {
    const { name, matches: pattern, equals } = a.header;
    const compiled = pattern === undefined ? undefined : compilePattern(pattern);
    list.push((c, matches) => {
      const value = c.response.headers[name.toLowerCase()];
      if (value === undefined) return { kind: "header", message: `header ${name} is missing` };
      if (equals !== undefined && value !== equals) {
        return { kind: "header", message: `header ${name} is ${quote(value)}, expected ${quote(equals)}` };
      }
      if (compiled !== undefined) {
        if (!compiled.ok) return { kind: "header", message: cannotRun(compiled) };
        if (!matches.test(compiled, value)) return { kind: "header", message: `header ${name} is ${quote(value)}, expected to match /${pattern}/` };
      }
      return null;
    });
  }
  if (a.maxLatencyMs !== undefined) {
    const latency = latencyCondition(a.maxLatencyMs);
    list.push((c, matches) => latency(c.response, matches));
  }
  if (a.certValidDays !== undefined) {
    const cert = certCondition(a.certValidDays, "certValidDays needs an https URL");
    list.push((c, matches) => cert(c.response, matches));
  }
  if (a.bodyContains !== undefined) {
    const text = a.bodyContains;
    list.push((c) => (c.response.body.includes(text) ? null : { kind: "body", message: `body does not contain ${quote(text)}` }));
  }
  if (a.bodyNotContains !== undefined) {
    const text = a.bodyNotContains;
    list.push((c) => (c.response.body.includes(text) ? { kind: "body", message: `body contains ${quote(text)}` } : null));
  }
  if (a.bodyMatches !== undefined) {
    const source = a.bodyMatches;
    const compiled = compilePattern(source);
    list.push((c, matches) => {
      if (!compiled.ok) return { kind: "body", message: cannotRun(compiled) };
      return matches.test(compiled, c.response.body) ? null : { kind: "body", message: `body does not match /${source}/` };
    });
  }
  if (a.json !== undefined) list.push(jsonCondition(a.json));
  return list;
}

function jsonCondition(spec: NonNullable<Alternative["json"]>): Condition<Context> {
  const parsed = parseJsonPath(spec.path);
  return (c) => {
    if (!parsed.ok) return { kind: "json", message: parsed.error };
    const document = c.json();
    if (!document.ok) return { kind: "json", message: `body is not JSON (${document.error})` };
    const found = resolveJsonPath(document.value, parsed.path);
    const path = spec.path;
    if (spec.exists === false) {
      return found.found ? { kind: "json", message: `${path} exists, expected it to be absent` } : null;
    }
    if (!found.found) return { kind: "json", message: `${path} not found in the JSON body` };
    const value = found.value;
    const shown = JSON.stringify(value) ?? "undefined";
    if ("equals" in spec && spec.equals !== undefined && !jsonEqual(value, spec.equals)) {
      return { kind: "json", message: `${path} is ${shown}, expected ${JSON.stringify(spec.equals)}` };
    }
    if ("notEquals" in spec && spec.notEquals !== undefined && jsonEqual(value, spec.notEquals)) {
      return { kind: "json", message: `${path} is ${shown}, expected anything else` };
    }
    for (const [bound, holds, words] of [
      [spec.lessThan, (v: number, b: number) => v < b, "less than"],
      [spec.greaterThan, (v: number, b: number) => v > b, "greater than"],
    ] as const) {
      if (bound === undefined) continue;
      if (typeof value !== "number") return { kind: "json", message: `${path} is ${shown}, expected a number ${words} ${bound}` };
      if (!holds(value, bound)) return { kind: "json", message: `${path} is ${shown}, expected ${words} ${bound}` };
    }
    return null;
  };
}

/** Work shared by the conditions of one evaluation: the body is parsed as JSON at most once. */
class Context {
  #json: { ok: true; value: unknown } | { ok: false; error: string } | undefined;
  constructor(readonly response: Observation) {}
  json() {
    if (!this.#json) {
      try {
        this.#json = { ok: true, value: JSON.parse(this.response.body) as unknown };
      } catch (error) {
        this.#json = { ok: false, error: this.response.body === "" ? "the body is empty" : (error as Error).message };
      }
    }
    return this.#json;
  }
}

function statusMatches(spec: StatusSpec, status: number): boolean {
  const one = (s: number | string) => (typeof s === "number" ? s === status : Math.floor(status / 100) === Number(s[0]));
  return Array.isArray(spec) ? spec.some(one) : one(spec);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export const quote = (text: string) => JSON.stringify(text.length > 120 ? text.slice(0, 120) + "…" : text);

/** A pattern saved before the engine refused it (a lookahead from an older healthd): the check says so. */
export const cannotRun = (pattern: Extract<Pattern, { ok: false }>) => `${pattern.problem}, then save the service again`;
