/** Hostile targets, as services of a running daemon: each gives a classified failed entry, and the daemon goes on. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget, notTlsUrl } from "./support/targets.ts";

for (const engine of engines) {
  test(`${engine}: endless, dribbling, looping, bombing, broken, backtracking, resetting, TLS-confused and header-flooding targets each fail classified within their timeout`, async (t) => {
    const target = await httpTarget(t);
    const d = await testDaemon(t, { engine });
    const hostile: [string, string, string, object?][] = [
      ["endless", `${target.url}/endless`, "size"],
      ["dribble", `${target.url}/dribble`, "timeout"],
      ["silent", `${target.url}/slow-headers`, "timeout"],
      ["loop", `${target.url}/redirect-loop-a`, "redirect"],
      ["forever", `${target.url}/hops/50`, "redirect"],
      ["bomb", `${target.url}/gzip-bomb`, "size"],
      ["bad-gzip", `${target.url}/bad-gzip`, "body"],
      ["broken-json", `${target.url}/broken-json`, "json", { expect: [{ json: { path: "$.status", equals: "up" } }] }],
      ["control-chars", `${target.url}/nul-json`, "json", { expect: [{ json: { path: "$.status", equals: "up" } }] }],
      ["bad-utf8", `${target.url}/invalid-utf8`, "body", { expect: [{ bodyContains: "never there" }] }],
      ["redos", `${target.url}/evil-body`, "body", { expect: [{ bodyMatches: "^(a+)+$" }] }],
      ["reset", `${target.url}/reset`, "connect"],
      ["garbage", `${target.url}/garbage`, "connect"],
      ["not-tls", await notTlsUrl(t), "tls"],
      ["many-headers", `${target.url}/many-headers`, "size"],
      ["huge-header", `${target.url}/huge-header`, "size"],
      ["growing-redirects", `${target.url}/grow`, "redirect"],
    ];
    const firsts = new Map(hostile.map(([id]) => [id, nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id)]));
    // A target that only the timeout stops fails with kind timeout; any other kind shows the check ended by
    // itself, before its timeout (no clock is read here: a slow machine makes no test fail).
    const put = await d.api("PUT", "/services/hostile", {
      services: hostile.map(([id, url, kind, extra]) => ({ id, check: { url, intervalSeconds: 60, timeoutMs: kind === "timeout" ? 1000 : 20_000, ...extra } })),
    });
    assert.equal(put.status, 201);
    for (const [id, , kind] of hostile) {
      const [done] = await firsts.get(id)!;
      assert.equal(done.entry.ok, false, id);
      assert.equal(done.entry.errorKind, kind, `${id}: ${done.entry.error}`);
      assert.ok(done.entry.error!.length < 1000, `${id}: an error of ${done.entry.error!.length} characters is stored`);
      // What a target sends ends up in errors, logs and notifications: never as control characters.
      assert.doesNotMatch(done.entry.error!, /[\u0000-\u001f\u007f]/, `${id}: ${JSON.stringify(done.entry.error)}`);
    }
    const [stored] = (await d.api("GET", "/services/hostile/control-chars/data")).body.entries;
    // The parser's own words are V8's; what healthd owes is its prefix, and every control character written out.
    assert.match(stored.error, /^body is not JSON \(.*x\\u0000\\u001b\[31m\\u000d\\u000anot JSON.*\)$/);
    // HTTP/1.0 without a length is not hostile: it is read to the end.
    const old = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "http10");
    await d.api("PUT", "/services/fine", { services: [{ id: "http10", check: { url: `${target.url}/http10` } }] });
    assert.equal((await old)[0].entry.ok, true);
    assert.equal((await d.api("GET", "/healthz")).body.status, "ok");
  });
}
