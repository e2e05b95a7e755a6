import assert from "node:assert/strict";
import { test } from "node:test";
import { runCheck } from "../src/checks/http.ts";
import { expired, selfSigned } from "./support/certs.ts";
import { httpCheck as check, httpsTarget, httpTarget, notTlsUrl, refusedUrl, silentTlsUrl } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

test("a passing check reports status, latency and the alternative that held", async (t) => {
  const target = await httpTarget(t);
  const result = await runCheck(
    check(`${target.url}/maintenance`, {
      expect: [{ status: 200 }, { status: [503], header: { name: "Retry-After", matches: "^[0-9]+$" } }],
    }),
  );
  assert.equal(result.ok, true);
  assert.equal(result.status, 503);
  assert.equal(result.matched, 1);
  assert.equal(result.errorKind, null);
  assert.ok(result.latencyMs > 0);
});

test("method, headers and body are sent; a fresh connection each time", async (t) => {
  const target = await httpTarget(t);
  let connections = 0;
  target.server.on("connection", () => connections++);
  const request = check(`${target.url}/echo`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-token": "abc" },
    body: '{"ping":1}',
    expect: [{ json: { path: "$.body", equals: '{"ping":1}' } }],
  });
  const result = await runCheck(request);
  assert.equal(result.ok, true, result.error ?? "");
  const echoed = await runCheck({ ...request, expect: [{ json: { path: "$.headers['x-token']", equals: "abc" } }] });
  assert.equal(echoed.ok, true, echoed.error ?? "");
  assert.equal(connections, 2);
});

test("a status outside expect fails with kind status", async (t) => {
  const target = await httpTarget(t);
  const result = await runCheck(check(`${target.url}/teapot`));
  assert.deepEqual([result.ok, result.status, result.errorKind], [false, 418, "status"]);
  assert.equal(result.error, "status 418 was not expected (expected 2xx)");
});

test("a refused port fails with kind connect", async () => {
  const result = await runCheck(check(await refusedUrl()));
  assert.equal(result.errorKind, "connect");
  assert.match(result.error!, /connection refused by 127\.0\.0\.1:\d+/);
  assert.equal(result.status, null);
});

test("a name that does not resolve fails with kind dns", async () => {
  const result = await runCheck(check("http://healthd-test.invalid/", { timeoutMs: 10_000 }));
  assert.equal(result.errorKind, "dns", result.error ?? "");
  assert.match(result.error!, /could not resolve healthd-test\.invalid/);
});

test("no answer in time, a handshake that never ends and a body that never ends fail with kind timeout", async (t) => {
  // The check's one deadline covers every stage: undici's own connect, head and body timeouts are off.
  const target = await httpTarget(t);
  const handshake = await runCheck(check(await silentTlsUrl(t), { timeoutMs: 300 }));
  assert.equal(handshake.errorKind, "timeout");
  assert.match(handshake.error!, /no complete answer within 300 ms \(timed out connecting\)/);
  const silent = await runCheck(check(`${target.url}/slow-headers`, { timeoutMs: 300 }));
  assert.equal(silent.errorKind, "timeout");
  assert.match(silent.error!, /no complete answer within 300 ms \(timed out waiting for the response\)/);
  const dribble = await runCheck(check(`${target.url}/dribble`, { timeoutMs: 300 }));
  assert.equal(dribble.errorKind, "timeout");
  assert.match(dribble.error!, /reading the body/);
});

test("every check sharing a signal ends at once when it aborts (the daemon stopping), long before its deadline", async (t) => {
  const target = await httpTarget(t);
  const stop = new AbortController();
  const done = await runCheck(check(`${target.url}/ok`), { signal: stop.signal }); // over before the stop: forgotten
  assert.equal(done.ok, true, done.error ?? "");
  let requests = 0;
  target.server.on("request", () => ++requests === 2 && stop.abort());
  const slow = check(`${target.url}/slow-headers`, { timeoutMs: 60_000 });
  const results = await Promise.all([runCheck(slow, { signal: stop.signal }), runCheck(slow, { signal: stop.signal })]);
  for (const result of results) {
    assert.equal(result.errorKind, "timeout");
    assert.ok(result.latencyMs < 60_000, `ended after ${result.latencyMs} ms`);
  }
  // A check asked for once the daemon is stopping ends before it connects.
  const late = await runCheck(slow, { signal: stop.signal });
  assert.equal(late.errorKind, "timeout");
  assert.match(late.error!, /timed out connecting/);
  assert.equal(requests, 2);
});

test("an endless or oversized body fails with kind size, compressed or not", async (t) => {
  const target = await httpTarget(t);
  for (const path of ["/endless", "/big", "/gzip-bomb", "/gzip-endless"]) {
    const result = await runCheck(check(`${target.url}${path}`, { timeoutMs: 10_000 }));
    assert.equal(result.errorKind, "size", `${path}: ${result.error}`);
    assert.equal(result.status, 200);
  }
});

test("gzip bodies are decoded; a corrupt one fails with kind body", async (t) => {
  const target = await httpTarget(t);
  const ok = await runCheck(check(`${target.url}/gzip`, { expect: [{ json: { path: "$.status", equals: "up" } }] }));
  assert.equal(ok.ok, true, ok.error ?? "");
  const bad = await runCheck(check(`${target.url}/bad-gzip`));
  assert.equal(bad.errorKind, "body");
  assert.match(bad.error!, /could not be decompressed/);
});

test("a body of many reads is read whole, plain, compressed and over TLS", async (t) => {
  const target = await httpTarget(t);
  const secure = await httpsTarget(t, selfSigned(tempDir(t), 10));
  const expect = [{ json: { path: "$.last", equals: 3999 } }, { json: { path: "$.items[2999].i", equals: 2999 } }];
  for (const url of [`${target.url}/large`, `${target.url}/large-gzip`, `${secure.url}/large`]) {
    for (const alternative of expect) {
      const result = await runCheck(check(url, { verifyTls: false, expect: [alternative] }));
      assert.equal(result.ok, true, `${url}: ${result.error}`);
    }
  }
});

test("redirects are followed up to 10; a loop or more fail with kind redirect", async (t) => {
  const target = await httpTarget(t);
  assert.equal((await runCheck(check(`${target.url}/hops/10`, { expect: [{ bodyContains: "arrived" }] }))).ok, true);
  const tooMany = await runCheck(check(`${target.url}/hops/11`));
  assert.equal(tooMany.errorKind, "redirect");
  assert.match(tooMany.error!, /more than 10 redirects/);
  const loop = await runCheck(check(`${target.url}/redirect-loop-a`));
  assert.equal(loop.errorKind, "redirect");
  assert.match(loop.error!, /redirect loop: .*\/redirect-loop-a -> .*\/redirect-loop-b -> .*\/redirect-loop-a/);
  const unfollowed = await runCheck(check(`${target.url}/hops/1`, { followRedirects: false, expect: [{ status: 302 }] }));
  assert.equal(unfollowed.ok, true);
  const seeOther = await runCheck(
    check(`${target.url}/see-other`, { method: "POST", body: "x", expect: [{ json: { path: "$.method", equals: "GET" } }] }),
  );
  assert.equal(seeOther.ok, true, seeOther.error ?? "");
});

test("a reset mid-response and a non-HTTP answer fail with kind connect", async (t) => {
  const target = await httpTarget(t);
  const reset = await runCheck(check(`${target.url}/reset`));
  assert.equal(reset.errorKind, "connect", reset.error ?? "");
  const garbage = await runCheck(check(`${target.url}/garbage`));
  assert.equal(garbage.errorKind, "connect", garbage.error ?? "");
  assert.match(garbage.error!, /invalid HTTP response/);
});

test("HTTP/1.0 without a length, invalid UTF-8 and an empty body are read as they are", async (t) => {
  const target = await httpTarget(t);
  assert.equal((await runCheck(check(`${target.url}/http10`, { expect: [{ bodyContains: "old but fine" }] }))).ok, true);
  const utf8 = await runCheck(check(`${target.url}/invalid-utf8`, { expect: [{ bodyMatches: "^OK \uFFFD\uFFFD!$" }] }));
  assert.equal(utf8.ok, true, utf8.error ?? "");
  const empty = await runCheck(check(`${target.url}/empty`, { expect: [{ json: { path: "$", exists: true } }] }));
  assert.equal(empty.errorKind, "json");
  assert.match(empty.error!, /body is not JSON \(the body is empty\)/);
  const head = await runCheck(check(`${target.url}/ok`, { method: "HEAD", expect: [{ status: 200, bodyNotContains: "Welcome" }] }));
  assert.equal(head.ok, true, head.error ?? "");
});

test("TLS: a self-signed certificate fails unless verifyTls is off; certValidDays reads its lifetime", async (t) => {
  const dir = tempDir(t);
  const target = await httpsTarget(t, selfSigned(dir, 10));
  const strict = await runCheck(check(`${target.url}/ok`));
  assert.equal(strict.errorKind, "tls");
  assert.match(strict.error!, /self-signed|DEPTH_ZERO_SELF_SIGNED_CERT/);
  const lax = await runCheck(check(`${target.url}/ok`, { verifyTls: false, expect: [{ certValidDays: 9 }] }));
  assert.equal(lax.ok, true, lax.error ?? "");
  const short = await runCheck(check(`${target.url}/ok`, { verifyTls: false, expect: [{ certValidDays: 30 }] }));
  assert.equal(short.errorKind, "cert");
  assert.match(short.error!, /TLS certificate expires in 9 days \(\d{4}-\d\d-\d\d\), less than the 30 required/);
});

test("TLS: an expired certificate fails with kind tls, or kind cert when it is only measured", async (t) => {
  const dir = tempDir(t);
  const target = await httpsTarget(t, expired(dir));
  const strict = await runCheck(check(`${target.url}/ok`));
  assert.equal(strict.errorKind, "tls");
  assert.match(strict.error!, /CERT_HAS_EXPIRED|expired/);
  const measured = await runCheck(check(`${target.url}/ok`, { verifyTls: false, expect: [{ certValidDays: 0 }] }));
  assert.equal(measured.errorKind, "cert");
  assert.equal(measured.error, "TLS certificate expired on 2020-02-01");
});

test("TLS: a server that does not speak TLS fails with kind tls", async (t) => {
  const result = await runCheck(check(await notTlsUrl(t)));
  assert.equal(result.errorKind, "tls", result.error ?? "");
});
