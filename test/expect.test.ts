import assert from "node:assert/strict";
import { test } from "node:test";
import { evaluate, type Observation } from "../src/checks/expect.ts";
import { matchesHere } from "../src/checks/matching.ts";
import { parseJsonPath, resolveJsonPath } from "../src/domain/jsonpath.ts";
import type { Alternative } from "../src/domain/model.ts";

const day = 86_400_000;
const response = (more: Partial<Observation> = {}): Observation => ({
  status: 200,
  headers: { "content-type": "application/json", "retry-after": "120" },
  body: JSON.stringify({ status: "up", load: 0.5, checks: [{ ok: true }, { ok: false }], nothing: null, "a.b": 1 }),
  latencyMs: 40,
  certValidTo: null,
  checkedAt: 0,
  ...more,
});
const run = (expect: Alternative[], more?: Partial<Observation>) => evaluate(expect, response(more), matchesHere);

test("status: numbers, classes and lists", () => {
  assert.deepEqual(run([{ status: 200 }]), { ok: true, matched: 0 });
  assert.deepEqual(run([{ status: "2xx" }]), { ok: true, matched: 0 });
  assert.deepEqual(run([{ status: [301, "2xx"] }]), { ok: true, matched: 0 });
  assert.deepEqual(run([{ status: "5xx" }], { status: 503 }), { ok: true, matched: 0 });
  assert.deepEqual(run([{ status: [200, 204] }], { status: 404 }), {
    ok: false,
    errorKind: "status",
    error: "status 404 was not expected (expected 200, 204)",
  });
});

test("alternatives: the first that holds is matched; none holding names every status wanted", () => {
  const expect: Alternative[] = [{ status: [200, 204], bodyContains: "Welcome" }, { status: [503], header: { name: "retry-after", matches: "^[0-9]+$" } }];
  assert.deepEqual(run(expect, { status: 503 }), { ok: true, matched: 1 });
  assert.deepEqual(run(expect, { status: 500 }), {
    ok: false,
    errorKind: "status",
    error: "status 500 matched no alternative (expected 200, 204, 503)",
  });
  const closest = run(expect, { status: 200 });
  assert.deepEqual(closest, {
    ok: false,
    errorKind: "body",
    error: 'body does not contain "Welcome" (no alternative held; closest is #0)',
  });
});

test("body conditions", () => {
  assert.equal(run([{ bodyContains: '"status":"up"' }]).ok, true);
  assert.deepEqual(run([{ bodyNotContains: "up" }]), { ok: false, errorKind: "body", error: 'body contains "up"' });
  assert.equal(run([{ bodyMatches: '"load":0\\.\\d' }]).ok, true);
  assert.deepEqual(run([{ bodyMatches: "^down" }]), { ok: false, errorKind: "body", error: "body does not match /^down/" });
  assert.equal(run([{ bodyNotContains: "x" }], { body: "" }).ok, true);
});

test("json: equals, notEquals, exists, lessThan, greaterThan", () => {
  assert.equal(run([{ json: { path: "$.status", equals: "up" } }]).ok, true);
  assert.equal(run([{ json: { path: "$.checks[0]", equals: { ok: true } } }]).ok, true);
  assert.equal(run([{ json: { path: "$.checks[-1].ok", equals: false } }]).ok, true);
  assert.equal(run([{ json: { path: "$['a.b']", equals: 1 } }]).ok, true);
  assert.equal(run([{ json: { path: "$.nothing", equals: null } }]).ok, true);
  assert.equal(run([{ json: { path: "$.status", notEquals: "down" } }]).ok, true);
  assert.equal(run([{ json: { path: "$.load", lessThan: 1, greaterThan: 0 } }]).ok, true);
  assert.equal(run([{ json: { path: "$.missing", exists: false } }]).ok, true);
  assert.deepEqual(run([{ json: { path: "$.status", equals: "down" } }]), {
    ok: false,
    errorKind: "json",
    error: '$.status is "up", expected "down"',
  });
  assert.deepEqual(run([{ json: { path: "$.load", greaterThan: 0.9 } }]), {
    ok: false,
    errorKind: "json",
    error: "$.load is 0.5, expected greater than 0.9",
  });
  assert.deepEqual(run([{ json: { path: "$.status", lessThan: 3 } }]), {
    ok: false,
    errorKind: "json",
    error: '$.status is "up", expected a number less than 3',
  });
  assert.deepEqual(run([{ json: { path: "$.status", exists: false } }]).ok, false);
});

test("json: a path that does not resolve fails, never a silent zero", () => {
  for (const path of ["$.missing", "$.checks[5]", "$.status.deeper", "$.checks.ok", "$.load[0]"]) {
    const verdict = run([{ json: { path, lessThan: 1 } }]);
    assert.deepEqual(verdict, { ok: false, errorKind: "json", error: `${path} not found in the JSON body` });
  }
});

test("json: a body that is not JSON, or empty, fails with kind json", () => {
  assert.deepEqual(run([{ json: { path: "$", exists: true } }], { body: "" }), {
    ok: false,
    errorKind: "json",
    error: "body is not JSON (the body is empty)",
  });
  const broken = run([{ json: { path: "$.a", exists: true } }], { body: '{"a": ' });
  assert.equal(broken.ok ? "" : broken.errorKind, "json");
  assert.match(broken.ok ? "" : broken.error, /^body is not JSON \(/);
});

test("header: equals and matches, case-insensitive names, missing header", () => {
  assert.equal(run([{ header: { name: "Content-Type", equals: "application/json" } }]).ok, true);
  assert.equal(run([{ header: { name: "retry-after", matches: "^\\d+$" } }]).ok, true);
  assert.deepEqual(run([{ header: { name: "x-missing", equals: "1" } }]), {
    ok: false,
    errorKind: "header",
    error: "header x-missing is missing",
  });
  assert.deepEqual(run([{ header: { name: "retry-after", matches: "^[a-z]+$" } }]), {
    ok: false,
    errorKind: "header",
    error: 'header retry-after is "120", expected to match /^[a-z]+$/',
  });
});

test("maxLatencyMs and certValidDays", () => {
  assert.equal(run([{ maxLatencyMs: 40 }]).ok, true);
  assert.deepEqual(run([{ maxLatencyMs: 10 }]), {
    ok: false,
    errorKind: "latency",
    error: "answered in 40 ms, more than the 10 ms allowed",
  });
  assert.equal(run([{ certValidDays: 14 }], { certValidTo: 20 * day, checkedAt: 0 }).ok, true);
  assert.deepEqual(run([{ certValidDays: 14 }], { certValidTo: 10.5 * day, checkedAt: 0 }), {
    ok: false,
    errorKind: "cert",
    error: "TLS certificate expires in 10 days (1970-01-11), less than the 14 required",
  });
  assert.deepEqual(run([{ certValidDays: 1 }]), { ok: false, errorKind: "cert", error: "certValidDays needs an https URL" });
});

test("a pattern that backtracks without end in JavaScript is an ordinary verdict: patterns run in linear time", () => {
  // V8 would take longer than the universe's age on this body; the old healthd stopped it after 50 ms.
  const body = "a".repeat(100_000) + "!";
  assert.deepEqual(run([{ bodyMatches: "^(a+)+$" }], { body }), { ok: false, errorKind: "body", error: "body does not match /^(a+)+$/" });
  const header = run([{ header: { name: "x-evil", matches: "^(a+)+$" } }], { headers: { "x-evil": "a".repeat(8000) + "!" } });
  assert.equal(header.ok ? "" : header.errorKind, "header");
  assert.match(header.ok ? "" : header.error, /^header x-evil is "a{120}…", expected to match \/\^\(a\+\)\+\$\/$/);
  assert.equal(run([{ bodyMatches: "^(a+)+$" }], { body: "aaaa" }).ok, true);
  assert.equal(run([{ bodyMatches: "(A+)+B" }], { body: "A".repeat(40) + "B" }).ok, true);
});

test("patterns read JavaScript's spellings, and RE2's inline flags", () => {
  assert.equal(run([{ bodyMatches: "caf\\u00e9" }], { body: "un café" }).ok, true);
  assert.equal(run([{ bodyMatches: "(?<word>caf).$" }], { body: "un café" }).ok, true);
  assert.equal(run([{ bodyMatches: "a\\/b" }], { body: "a/b" }).ok, true);
  assert.equal(run([{ bodyMatches: "^[^]*ok$" }], { body: "line\nok" }).ok, true);
  assert.equal(run([{ bodyMatches: "(?i)^STATUS: UP$" }], { body: "status: up" }).ok, true);
  assert.equal(run([{ bodyMatches: "^up$" }], { body: "up\n" }).ok, false, "$ is the end of the text, as in JavaScript without m");
  assert.equal(run([{ bodyMatches: "(?m)^up$" }], { body: "x\nup\n" }).ok, true);
});

test("a pattern saved before healthd refused it fails its check, saying what to change", () => {
  for (const [pattern, uses] of [["(a)\\1", "a backreference (\\1)"], ["ok(?=!)", "lookahead ((?=...))"], ["(?<!x)ok", "negative lookbehind ((?<!...))"]] as const) {
    const verdict = run([{ bodyMatches: pattern }], { body: "aa ok!" });
    assert.equal(verdict.ok ? "" : verdict.errorKind, "body");
    assert.equal(
      verdict.ok ? "" : verdict.error,
      `/${pattern}/ uses ${uses}: healthd runs patterns on a linear-time engine (RE2 syntax), which has no backreferences or lookaround; ` +
        "rewrite it without them (for a backreference, spell the repeated text out; for lookaround, match the text around it), then save the service again",
    );
  }
});

test("invalid UTF-8 arrives as replacement characters and still matches text around it", () => {
  const body = new TextDecoder().decode(Buffer.from([0x4f, 0x4b, 0xff, 0x21]));
  assert.equal(run([{ bodyContains: "OK" }, { bodyMatches: "^never$" }], { body }).ok, true);
  assert.equal(run([{ bodyMatches: "^OK\uFFFD!$" }], { body }).ok, true);
});

test("JSONPath: RFC 9535 names and indexes; everything else refused with a hint", () => {
  assert.deepEqual(parseJsonPath("$"), { ok: true, path: [] });
  assert.deepEqual(parseJsonPath("$.a.b_c[0]['x y'][\"q\\\"\"][-2]"), { ok: true, path: ["a", "b_c", 0, "x y", 'q"', -2] });
  assert.deepEqual(parseJsonPath("$['\\u0041']"), { ok: true, path: ["A"] });
  for (const bad of ["status", "$..a", "$.*", "$[1:2]", "$[?@.a]", "$.1a", "$[01]", "$[-0]", "$['open", "$.a."]) {
    const parsed = parseJsonPath(bad);
    assert.equal(parsed.ok, false, bad);
    assert.match(parsed.ok ? "" : parsed.error, /use \$\.name, \$\['name'\] or \$\[0\]/);
  }
  assert.deepEqual(resolveJsonPath({ a: [1, 2] }, ["a", -1]), { found: true, value: 2 });
  assert.deepEqual(resolveJsonPath({ a: [1, 2] }, ["a", 2]), { found: false });
  assert.deepEqual(resolveJsonPath({}, ["toString"]), { found: false });
});
