/**
 * Gatus's suites (README "Suites (ALPHA)", config/suite/suite.go) as http checks with steps: a suite's
 * endpoints run in order with a shared context, which `store` fills from an answer ([BODY].path) and
 * `[CONTEXT].key` reads in a later endpoint's url, headers and body. Each endpoint becomes a step (its
 * conditions translated as a plain endpoint's are), each stored [BODY].path an `extract`, each [CONTEXT].key a
 * `{{steps.STEP.key}}` of the step that stored it last, or the suite's initial `context` value, written in.
 * The suite's interval (default 10m) and timeout (default 5m, healthd's timeoutMs is at most 300000) are the
 * check's.
 *
 * What does not map, said in the notes: a suite with an endpoint that is not http (steps are http requests),
 * a stored value other than a [BODY] path ([STATUS], [RESPONSE_TIME]... have no extract), so a suite that
 * reads one is not carried over; a condition that compares with [CONTEXT] from a step (healthd's expect
 * compares with what is written; an initial context value is written in); always-run (healthd stops at the
 * first failing step, so a clean-up step runs only when the steps before it pass).
 */
import { parseJsonPath } from "../domain/jsonpath.ts";
import { clamp, durationSeconds, slug, type Check, type DocumentBuilder } from "./common.ts";

type Endpoint = Record<string, unknown>;

interface Suite {
  name?: unknown;
  group?: unknown;
  enabled?: unknown;
  interval?: unknown;
  timeout?: unknown;
  context?: unknown;
  endpoints?: unknown;
}

/** How gatus.ts makes a plain endpoint's check, and where a suite of a group goes. */
export interface SuiteParts {
  readonly endpointCheck: (e: Endpoint, note: (why: string) => void) => Check | undefined;
  readonly alerting: (e: Endpoint) => Check;
  readonly place: (e: { group?: unknown }) => string;
}

const contextRef = /\[CONTEXT\]\.([\w.-]+)/g;

export function importSuites(suites: unknown, builder: DocumentBuilder, parts: SuiteParts): void {
  if (!Array.isArray(suites)) return;
  let silent = 0;
  for (const [i, raw] of suites.entries()) {
    const s = (raw ?? {}) as Suite;
    const name = typeof s.name === "string" && s.name !== "" ? s.name : `suite ${i + 1}`;
    const note = (why: string) => builder.note(`suite ${JSON.stringify(name)}`, why);
    const check = suiteCheck(s, note, parts);
    if (!check) continue;
    if (check.notify === false) silent++;
    builder.add(parts.place(s), name, check, `suite-${i + 1}`);
  }
  if (silent > 0) builder.note("alerts", `${silent} suite${silent === 1 ? " has" : "s have"} no alerts on any endpoint in Gatus, so notify: false; remove it to be notified`);
}

function suiteCheck(s: Suite, note: (why: string) => void, parts: SuiteParts): Check | undefined {
  const endpoints = (Array.isArray(s.endpoints) ? s.endpoints : []) as Endpoint[];
  if (endpoints.length === 0) return void note("it has no endpoints; not carried over");
  if (endpoints.length > 10) return void note(`it has ${endpoints.length} endpoints, more than the 10 steps a healthd check makes; not carried over`);
  const initial = (typeof s.context === "object" && s.context !== null ? s.context : {}) as Record<string, unknown>;
  /** Which step stored each context key last, as far as the endpoints so far go. */
  const storedBy = new Map<string, string>();
  /** Keys an endpoint stored as something healthd cannot extract: a later read of one has no value to send. */
  const lost = new Set<string>();
  const names = new Set<string>();
  const steps: Check[] = [];
  let unresolved: string | undefined;
  /** `text` with each [CONTEXT].key made a reference or the initial value; undefined when one is neither. */
  const resolve = (text: string): string =>
    text.replace(contextRef, (whole, key: string) => {
      const step = storedBy.get(key);
      if (step !== undefined) return `{{steps.${step}.${key}}}`;
      const value = lost.has(key) ? undefined : initialValue(initial, key);
      if (value !== undefined) return value;
      unresolved ??= key;
      return whole;
    });

  for (const [j, e] of endpoints.entries()) {
    const label = typeof e.name === "string" && e.name !== "" ? e.name : `endpoint ${j + 1}`;
    const stepNote = (why: string) => note(`endpoint ${JSON.stringify(label)}: ${why}`);
    // A condition on a value a step stored compares two things an answer holds: healthd's expect cannot say it.
    const conditions = (Array.isArray(e.conditions) ? e.conditions : []).map(String).flatMap((c) => {
      const keys = [...c.matchAll(contextRef)].map((m) => m[1]!);
      if (keys.length === 0) return [c];
      if (keys.some((k) => storedBy.has(k) || lost.has(k) || initialValue(initial, k) === undefined)) {
        stepNote(`condition ${JSON.stringify(c)} compares with a value of the suite's context, which healthd's expect cannot (it compares with what is written); left out`);
        return [];
      }
      return [resolve(c)];
    });
    const made = parts.endpointCheck({ ...e, conditions, interval: undefined }, stepNote);
    if (!made) return void note(`its endpoint ${JSON.stringify(label)} could not be carried over (above), and a suite's steps go together; not carried over`);
    if (made.type !== undefined) return void note(`its endpoint ${JSON.stringify(label)} is a ${String(made.type)} check; healthd's steps are http requests; not carried over`);
    const client = e.client as { timeout?: unknown } | undefined;
    if (client?.timeout !== undefined) stepNote("its client timeout does not carry over: the suite's timeout (the check's timeoutMs) covers all its steps");
    if (e["always-run"] === true) stepNote("always-run: Gatus runs it even after a failure; healthd stops at the first failing step, so it runs only when the steps before it pass");

    const stepName = uniqueName(label, j, names);
    const extract: Record<string, string> = {};
    for (const [key, placeholder] of Object.entries((typeof e.store === "object" && e.store !== null ? e.store : {}) as Record<string, unknown>)) {
      const path = bodyPath(String(placeholder));
      if (path === undefined || !/^[A-Za-z0-9_-]{1,32}$/.test(key)) {
        stepNote(`store ${key}: ${JSON.stringify(placeholder)} is not a [BODY].path healthd can extract (only JSON paths of the body are); not stored`);
        storedBy.delete(key);
        lost.add(key);
        continue;
      }
      extract[key] = path;
    }
    const step: Check = { name: stepName, url: resolve(String(made.url)) };
    if (made.method !== undefined) step.method = made.method;
    if (made.headers !== undefined) step.headers = Object.fromEntries(Object.entries(made.headers as Record<string, string>).map(([k, v]) => [k, resolve(v)]));
    if (typeof made.body === "string") step.body = resolve(made.body);
    if (made.expect !== undefined) step.expect = made.expect;
    if (Object.keys(extract).length > 0) step.extract = extract;
    if (unresolved !== undefined) {
      return void note(`its endpoint ${JSON.stringify(label)} reads [CONTEXT].${unresolved}, which no endpoint before it stores as a [BODY] path and the suite's context does not set; not carried over`);
    }
    // Stored after this step's own references are resolved: a step reads the values of the steps before it.
    for (const key of Object.keys(extract)) {
      storedBy.set(key, stepName);
      lost.delete(key);
    }
    steps.push(step);
  }

  const interval = durationSeconds(s.interval ?? "10m");
  if (interval === undefined) note(`its interval ${JSON.stringify(s.interval)} is not a duration such as 30s or 5m; it is checked every 10 minutes`);
  const timeout = durationSeconds(s.timeout ?? "5m");
  if (timeout === undefined) note(`its timeout ${JSON.stringify(s.timeout)} is not a duration; 5 minutes (Gatus's default) is kept`);
  else if (timeout > 300) note(`its timeout of ${timeout} s is more than healthd's 300 s; timeoutMs is 300000`);
  const alerted = endpoints.find((e) => Array.isArray(e.alerts) && e.alerts.length > 0);
  const first = parts.endpointCheck({ ...endpoints[0]!, conditions: [] }, () => {}) ?? {};
  return {
    url: steps[0]!.url,
    intervalSeconds: clamp(interval ?? 600, 1, 86_400),
    timeoutMs: clamp((timeout ?? 300) * 1000, 1, 300_000),
    ...(first.followRedirects === false ? { followRedirects: false } : {}),
    ...(first.verifyTls === false ? { verifyTls: false } : {}),
    steps,
    // Gatus alerts per endpoint of a suite: the first endpoint with alerts gives the check's thresholds.
    ...parts.alerting(alerted ?? {}),
    ...(s.enabled === false ? { paused: true } : {}),
  };
}

/** A Gatus store placeholder as a JSONPath: [BODY].a.b and [BODY][0].a; undefined for anything else. */
function bodyPath(placeholder: string): string | undefined {
  const m = /^\s*\[BODY\]((?:\.|\[).+?)\s*$/i.exec(placeholder);
  if (!m) return undefined;
  const path = `$${m[1]}`;
  return parseJsonPath(path).ok ? path : undefined;
}

/** The suite's initial context value at a dotted key, as text; undefined when it has none (or not a scalar). */
function initialValue(context: Record<string, unknown>, key: string): string | undefined {
  let value: unknown = context;
  for (const part of key.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? String(value) : undefined;
}

/** A step name from an endpoint's: a-z 0-9 _ -, at most 32, once in the check. */
function uniqueName(label: string, index: number, taken: Set<string>): string {
  const base = slug(label, `step-${index + 1}`).replace(/\./g, "-").slice(0, 28).replace(/-+$/, "") || `step-${index + 1}`;
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
  taken.add(name);
  return name;
}
