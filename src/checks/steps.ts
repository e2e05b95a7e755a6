/**
 * An http check with `steps`: its requests made in order, each by the http controller (a fresh connection,
 * its own expectations judged through matching.ts), under the check's one deadline: each step gets what is
 * left of `timeoutMs`, so a server that stalls at any step fails the check at `timeoutMs`, whatever the
 * number of steps. The check fails at its first failing step, named in the entry's error; the entry's
 * answers hold each step's status and latency.
 *
 * Extracted values are credentials often (a token, a session cookie): they live in this function's memory for
 * one run only, are never logged or stored, and an error that would quote one (a redirect's URL, a header an
 * expectation quotes) shows its reference, {{steps.login.token}}, instead.
 */
import type { Outcome } from "../domain/model.ts";
import type { Step } from "../domain/schema/steps.ts";
import { stepLimits } from "../domain/schema/steps.ts";
import { resolveJsonPath } from "../domain/jsonpath.ts";
import { cookieValue, fillReferences, parseSource, type Reference } from "../domain/steps.ts";
import { systemClock } from "../platform/clock.ts";
import type { Observation } from "./expect.ts";
import { CheckFailure, printable, round } from "./failure.ts";
import { runCheck, type CheckRequest, type ControllerOptions } from "./http.ts";

export type StepsRequest = CheckRequest & { readonly steps: readonly Step[] };

/** A step's values by step name, then by value name. */
type Values = Map<string, Map<string, string>>;

export async function runSteps(check: StepsRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const values: Values = new Map();
  const lines: string[] = [];
  let certExpiresAt: number | undefined;
  const finish = (outcome: Outcome, at: number): Outcome => {
    for (const step of check.steps.slice(at + 1)) lines.push(`${step.name}: not run`);
    const cert = certExpiresAt === undefined ? {} : { certExpiresAt };
    return { ...outcome, latencyMs: round(clock.monotonic() - started), checkedAt, answers: lines, ...cert };
  };
  const failed = (at: number, kind: CheckFailure["kind"], message: string, status: number | null = null): Outcome =>
    finish({ ok: false, status, latencyMs: 0, matched: null, errorKind: kind, error: printable(masked(`step ${check.steps[at]!.name}: ${message}`, values)), checkedAt }, at);

  let last: Outcome | undefined;
  for (const [at, step] of check.steps.entries()) {
    const left = Math.floor(check.timeoutMs - (clock.monotonic() - started));
    if (left < 1 || options.signal?.aborted) {
      lines.push(`${step.name}: not run`);
      return failed(at, "timeout", `not started: the check's timeoutMs (${check.timeoutMs} ms), which covers all its steps, ran out before it`);
    }
    let request: CheckRequest;
    try {
      request = stepRequest(check, step, values, left);
    } catch (error) {
      lines.push(`${step.name}: not run`);
      if (error instanceof CheckFailure) return failed(at, error.kind, error.message);
      throw error;
    }
    let observed: Observation | undefined;
    const outcome = await runCheck(request, { ...options, clock, observe: (answer) => (observed = answer) });
    lines.push(`${step.name}: ${outcome.status === null ? "no answer" : `status ${outcome.status}`} in ${outcome.latencyMs} ms`);
    if (outcome.certExpiresAt !== undefined) certExpiresAt = Math.min(certExpiresAt ?? Infinity, outcome.certExpiresAt);
    if (!outcome.ok) {
      // The step had what was left of the check's deadline: say so, rather than a time the user never wrote.
      const error = outcome.error.replace(`within ${left} ms`, `within the ${left} ms left of the check's timeoutMs (${check.timeoutMs} ms)`);
      const shortage = outcome.shortage ? { shortage: outcome.shortage } : {};
      return { ...failed(at, outcome.errorKind, error, outcome.status), ...shortage };
    }
    const extracted = extract(step, observed!);
    if ("kind" in extracted) return failed(at, extracted.kind, extracted.message, outcome.status);
    values.set(step.name, extracted);
    last = outcome;
  }
  return finish(last!, check.steps.length - 1);
}

/** A step's request: the check's fields where the step leaves them out, its references filled. */
function stepRequest(check: StepsRequest, step: Step, values: Values, timeoutMs: number): CheckRequest {
  const valueOf = (ref: Reference) => values.get(ref.step)?.get(ref.value) ?? "";
  // Encoded in the url: a value can fill a path segment or a query parameter, never change the host or path.
  const written = fillReferences(step.url ?? check.url, (ref) => encodeURIComponent(valueOf(ref)));
  let url: string;
  try {
    url = new URL(written, check.url).href;
  } catch {
    throw new CheckFailure("internal", `its url ${JSON.stringify(written.slice(0, 200))} is not a URL once its references are filled`);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(check.headers)) headers[name.toLowerCase()] = value;
  for (const [name, value] of Object.entries(step.headers ?? {})) {
    const filled = fillReferences(value, valueOf);
    // A header carries Latin-1 at most; a value beyond it would be sent mangled.
    if (filled !== value && !/^[\t\x20-\x7e\x80-\xff]*$/.test(filled)) {
      throw new CheckFailure("header", `headers.${name.toLowerCase()}: a value it uses holds characters beyond Latin-1, which a header cannot carry`);
    }
    headers[name.toLowerCase()] = filled;
  }
  const body = step.body === undefined ? check.body : step.body === null ? null : fillReferences(step.body, valueOf);
  return {
    url,
    method: step.method ?? check.method,
    headers,
    body,
    timeoutMs,
    followRedirects: check.followRedirects,
    verifyTls: check.verifyTls,
    expect: step.expect ?? check.expect,
  };
}

/** A step's extracted values, or why one could not be taken (a json or header failure of the step). */
function extract(step: Step, observed: Observation): Map<string, string> | { kind: "json" | "header" | "internal"; message: string } {
  const found = new Map<string, string>();
  let json: { ok: true; value: unknown } | { ok: false; error: string } | undefined;
  for (const [name, text] of Object.entries(step.extract ?? {})) {
    const parsed = parseSource(text);
    if (!parsed.ok) return { kind: "internal", message: `extract.${name}: ${parsed.error}` };
    const source = parsed.source;
    const kind = source.from === "json" ? "json" : "header";
    let value: string | undefined;
    if (source.from === "json") {
      if (!json) {
        try {
          json = { ok: true, value: JSON.parse(observed.body) as unknown };
        } catch (error) {
          json = { ok: false, error: observed.body === "" ? "the body is empty" : (error as Error).message };
        }
      }
      if (!json.ok) return { kind, message: `extract.${name}: the body is not JSON (${json.error}), so ${text} has nothing to read` };
      const at = resolveJsonPath(json.value, source.path);
      if (!at.found) return { kind, message: `extract.${name}: ${text} not found in the JSON body` };
      if (typeof at.value === "string") value = at.value;
      else if (typeof at.value === "number" || typeof at.value === "boolean") value = String(at.value);
      else return { kind, message: `extract.${name}: ${text} is ${at.value === null ? "null" : Array.isArray(at.value) ? "an array" : "an object"}, not a string, number or boolean a later step could send` };
    } else if (source.from === "header") {
      value = observed.headers[source.name];
      if (value === undefined) return { kind, message: `extract.${name}: the answer has no ${source.name} header` };
    } else {
      const cookies = observed.headers["set-cookie"];
      value = cookies === undefined ? undefined : cookieValue(cookies, source.name);
      if (value === undefined) return { kind, message: `extract.${name}: the answer sets no cookie ${source.name}` };
    }
    if (value.length > stepLimits.valueBytes) return { kind, message: `extract.${name}: ${text} is ${value.length} characters long, more than the ${stepLimits.valueBytes} a value may be` };
    // CR or LF in a value a later step puts in a header would split that request: never sent.
    if (/[\u0000-\u001f\u007f]/.test(value)) return { kind, message: `extract.${name}: ${text} holds control characters (CR, LF, ...), which a later step could not send` };
    found.set(name, value);
  }
  return found;
}

/**
 * `message` with every extracted value of 4 characters or more shown as its reference: an error is stored,
 * shown and sent, and a value is a credential often. Shorter ones would mask digits of every status and
 * latency, and guard little.
 */
function masked(message: string, values: Values): string {
  let out = message;
  for (const [step, named] of values) {
    for (const [name, value] of named) {
      if (value.length < 4) continue;
      out = out.replaceAll(value, `{{steps.${step}.${name}}}`);
      const encoded = encodeURIComponent(value);
      if (encoded !== value) out = out.replaceAll(encoded, `{{steps.${step}.${name}}}`);
    }
  }
  return out;
}
