/**
 * Users' patterns run on a linear-time engine (issue 78): a tenant's backtracking pattern cannot fail another
 * tenant's check, and a pattern that engine cannot run is refused when saved, naming it, in every field that
 * takes one.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { test } from "node:test";
import { inlineSteps, judged } from "../src/checks/matching.ts";
import type { CheckDone } from "../src/daemon.ts";
import { compilePattern } from "../src/domain/pattern.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { serveOnLoopback } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

for (const engine of engines) {
  test(`${engine}: 40 checks with (A+)+B on a page of 40 As leave a neighbour's 250 ms check up, run after run`, async (t) => {
    // The page JavaScript's RegExp backtracks on for 2^40 steps; before, each match was stopped at 50 ms, and
    // 40 of them a second held the loop so long that the neighbour's answers were judged late (656 to 2,578 ms).
    const server = createServer((req, res) => res.end(req.url === "/aaaa" ? "A".repeat(40) : "ok"));
    const port = await serveOnLoopback(t, server);
    const d = await testDaemon(t, { engine });
    d.events.setMaxListeners(64); // one waiter per service below

    const runs = 6;
    const neighbour: Promise<[CheckDone]>[] = [];
    const seen: CheckDone[] = [];
    const collect = (done: CheckDone) => {
      if (done.service.serverId === "other" && done.service.serviceId === "api") seen.push(done);
    };
    d.events.on("check:done", collect);
    t.after(() => d.events.off("check:done", collect));
    const patterns = new Map([...Array(40).keys()].map((i) => [`re-${i}`, nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === `re-${i}`)]));
    for (let i = 0; i < runs; i++) neighbour.push(nextEvent<[CheckDone]>(d.events, "check:done", () => seen.length > i, 60_000));

    const tenant = await d.api("PUT", "/services/tenant", {
      services: [...patterns.keys()].map((id) => ({
        id,
        check: { url: `http://127.0.0.1:${port}/aaaa`, intervalSeconds: 1, expect: [{ bodyMatches: "(A+)+B" }] },
      })),
    });
    assert.equal(tenant.status, 201, JSON.stringify(tenant.body));
    const other = await d.api("PUT", "/services/other", {
      services: [{ id: "api", check: { url: `http://127.0.0.1:${port}/ok`, intervalSeconds: 1, expect: [{ status: 200, maxLatencyMs: 250 }] } }],
    });
    assert.equal(other.status, 201, JSON.stringify(other.body));

    await Promise.all(neighbour);
    const judged = seen.slice(0, runs).map((done) => (done.entry.ok ? "up" : done.entry.error));
    assert.deepEqual(judged, Array(runs).fill("up"), "the neighbour stays up beside 40 backtracking patterns");
    // Every backtracking pattern ran, and was judged on what the page holds, not on how long it took.
    for (const [id, first] of patterns) {
      const [done] = await first;
      assert.equal(done.entry.ok, false, id);
      assert.equal(done.entry.errorKind, "body", `${id}: ${done.entry.error}`);
      assert.equal(done.entry.error, "body does not match /(A+)+B/");
    }
  });
}

test("a pattern the linear-time engine cannot run is 400 at PUT, naming the field and the pattern, in every field that takes one", async (t) => {
  const d = await testDaemon(t);
  const bad = await d.api("PUT", "/services/web-01", {
    services: [
      { id: "body", check: { url: "http://127.0.0.1:9/", expect: [{ bodyMatches: "<(\\w+)>.*</\\1>" }] } },
      { id: "header", check: { url: "http://127.0.0.1:9/", expect: [{ header: { name: "server", matches: "^(?!Apache)" } }] } },
      { id: "banner", check: { type: "tcp", host: "127.0.0.1", port: 25, expect: [{ banner: { matches: "(?<=220 )mail" } }] } },
      { id: "answers", check: { type: "dns", name: "example.test", expect: [{ answers: { matches: "^(?<o>\\d+)\\.\\k<o>\\." } }] } },
      { id: "lookahead", check: { url: "http://127.0.0.1:9/", expect: [{ status: 200 }, { bodyMatches: "ok(?=\\s)" }] } },
    ],
  });
  assert.equal(bad.status, 400, JSON.stringify(bad.body));
  const engine = "healthd runs patterns on a linear-time engine (RE2 syntax), which has no backreferences or lookaround; rewrite it without them";
  const errors = Object.fromEntries(bad.body.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
  assert.deepEqual(Object.keys(errors).sort(), [
    "/services/0/check/expect/0/bodyMatches",
    "/services/1/check/expect/0/header/matches",
    "/services/2/check/expect/0/banner/matches",
    "/services/3/check/expect/0/answers/matches",
    "/services/4/check/expect/1/bodyMatches",
  ]);
  assert.ok(errors["/services/0/check/expect/0/bodyMatches"].startsWith(`/<(\\w+)>.*</\\1>/ uses a backreference (\\1): ${engine}`));
  assert.ok(errors["/services/1/check/expect/0/header/matches"].startsWith(`/^(?!Apache)/ uses negative lookahead ((?!...)): ${engine}`));
  assert.ok(errors["/services/2/check/expect/0/banner/matches"].startsWith(`/(?<=220 )mail/ uses lookbehind ((?<=...)): ${engine}`));
  assert.ok(errors["/services/3/check/expect/0/answers/matches"].startsWith(`/^(?<o>\\d+)\\.\\k<o>\\./ uses a backreference (\\k<o>): ${engine}`));
  assert.ok(errors["/services/4/check/expect/1/bodyMatches"].startsWith(`/ok(?=\\s)/ uses lookahead ((?=...)): ${engine}`));
  assert.match(bad.body.detail, /^the server document is invalid: \/services\/0\/check\/expect\/0\/bodyMatches: \/<\(\\w\+\)>\.\*<\/\\1>\/ uses a backreference/);
  assert.equal((await d.api("GET", "/services/web-01")).status, 404, "nothing of a refused document is saved");

  // What RE2 reads differently is still a plain syntax error that says which engine, and what JavaScript spells.
  const syntax = await d.api("PUT", "/services/web-01", { services: [{ id: "x", check: { url: "http://127.0.0.1:9/", expect: [{ bodyMatches: "(" }] } }] });
  assert.equal(syntax.status, 400);
  assert.match(syntax.body.errors[0].message, /^\/\(\/ is not a valid pattern \(missing closing \): `\(`\); healthd runs patterns on a linear-time engine \(RE2 syntax\)/);

  // Classes and escapes that only look like lookaround or backreferences are fine, as are RE2's inline flags.
  const fine = await d.api("PUT", "/services/web-01", {
    services: [{ id: "x", check: { url: "http://127.0.0.1:9/", intervalSeconds: 3600, expect: [{ bodyMatches: "[(?=]\\(\\?!\\\\1(?i)ok(?:x)(?<name>y)" }] } }],
  });
  assert.equal(fine.status, 201, JSON.stringify(fine.body));
});

test("apply refuses a backreference naming the file's line, the field and the pattern, and exits 2", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "healthd.yaml");
  writeFileSync(file, "web-01:\n  services:\n    - id: home\n      check: {url: 'http://127.0.0.1:9/', expect: [{bodyMatches: '(a)\\1'}]}\n");
  const run = await runHealthd(["apply", file, "--db", join(dir, "healthd.db")]);
  assert.equal(run.code, 2, run.stdout);
  assert.match(run.stderr, /healthd\.yaml:4:\d+: \/web-01\/services\/0\/check\/expect\/0\/bodyMatches: \/\(a\)\\1\/ uses a backreference \(\\1\): healthd runs patterns on a linear-time engine/);
});

/** 1 MiB of pseudo-random a and b, ending with `tail`: no automaton fits a[ab]{k}c on it, so every byte steps every state. */
function aAndB(tail: string): string {
  const bytes = Buffer.alloc(1024 * 1024 - 64); // under the 1 MiB a check reads, with room for the tail
  let seed = 12345;
  for (let i = 0; i < bytes.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    bytes[i] = (seed >> 16) & 1 ? 0x61 : 0x62;
  }
  return bytes.toString("latin1") + tail;
}

test("a costly match runs on the worker thread, leaves the event loop free meanwhile, and answers as it would inline", async () => {
  const costly = compilePattern("a[ab]{12}c");
  const cheap = compilePattern("^ok");
  assert.ok(costly.ok && cheap.ok);
  const matching = aAndB("abbbbbbbbbbbbc");
  const missing = aAndB("");
  assert.ok(costly.size * missing.length > inlineSteps, "the pattern on 1 MiB is over the inline budget");

  // A cheap match is answered at once: one evaluation.
  let evaluations = 0;
  assert.equal(await judged((m) => (evaluations++, m.test(cheap, "ok then"))), true);
  assert.equal(evaluations, 1);

  // A costly one: the loop turns while it runs (an immediate fires before the answer), and a second evaluation
  // sees the worker's answers, the same as the pattern's own.
  evaluations = 0;
  let turned = false;
  setImmediate(() => (turned = true));
  const answers = await judged((m) => (evaluations++, [m.test(costly, matching), m.test(costly, missing), m.test(cheap, "ok")]));
  assert.equal(turned, true, "the event loop ran while the costly matches did");
  assert.equal(evaluations, 2);
  assert.deepEqual(answers, [true, false, true]);
  assert.deepEqual(answers.slice(0, 2), [costly.test(matching), costly.test(missing)]);
});

test("the built healthd runs a costly body pattern on its worker: `check --url` judges 1 MiB both ways and exits", async (t) => {
  const pages: Record<string, string> = { "/match": aAndB("abbbbbbbbbbbbc"), "/miss": aAndB("") };
  const server = createServer((req, res) => res.end(pages[req.url!] ?? "not here"));
  const port = await serveOnLoopback(t, server);
  const expect = JSON.stringify([{ bodyMatches: "a[ab]{12}c" }]);
  const hit = await runHealthd(["check", "--url", `http://127.0.0.1:${port}/match`, "--expect", expect, "--json"]);
  assert.equal(hit.code, 0, hit.stderr);
  assert.equal(JSON.parse(hit.stdout).ok, true, hit.stdout);
  const miss = await runHealthd(["check", "--url", `http://127.0.0.1:${port}/miss`, "--expect", expect, "--json"]);
  assert.notEqual(miss.code, 0, miss.stdout);
  assert.equal(JSON.parse(miss.stdout).error, "body does not match /a[ab]{12}c/", miss.stdout);
});
