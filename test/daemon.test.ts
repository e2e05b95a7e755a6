import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { selfSigned } from "./support/certs.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { httpsTarget, httpTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

const doneFor = (serviceId: string, accept: (r: CheckDone) => boolean = () => true) => (r: CheckDone) =>
  r.service.serviceId === serviceId && accept(r);

test("PUT a server, see entries appear, change a URL and see it checked at once, delete and see checks stop", async (t) => {
  const target = await httpTarget(t);
  const d = await testDaemon(t);
  const put = (services: unknown[]) => d.api("PUT", "/services/web-01", { services });
  const home = { id: "home", check: { url: `${target.url}/ok`, intervalSeconds: 1, expect: [{ bodyContains: "Welcome" }] } };
  const other = { id: "other", check: { url: `${target.url}/teapot`, intervalSeconds: 1 } };

  const firstHome = nextEvent<[CheckDone]>(d.events, "check:done", doneFor("home"));
  const firstOther = nextEvent<[CheckDone]>(d.events, "check:done", doneFor("other"));
  assert.equal((await put([home, other])).status, 201);
  const [homeDone] = await firstHome;
  assert.equal(homeDone.entry.ok, true);
  assert.equal(homeDone.entry.matched, 0);
  const [otherDone] = await firstOther;
  assert.deepEqual([otherDone.entry.ok, otherDone.entry.errorKind, otherDone.entry.status], [false, "status", 418]);

  const data = await d.api("GET", "/services/web-01/home/data");
  assert.equal(data.status, 200);
  const stored = data.body.entries.find((e: { id: string }) => e.id === String(homeDone.entry.id));
  assert.deepEqual(stored, { ...homeDone.entry, id: String(homeDone.entry.id), checkedAt: new Date(homeDone.entry.checkedAt).toISOString() });
  assert.deepEqual(Object.keys(stored), ["id", "checkedAt", "ok", "status", "latencyMs", "errorKind", "error", "matched", "location", "type", "kind", "exitCode", "durationMs", "body", "answers", "method", "userAgent", "remoteAddr", "scheme", "rid"]);
  const server = (await d.api("GET", "/services/web-01")).body;
  const otherState = server.services.find((s: { id: string }) => s.id === "other").state;
  assert.equal(otherState.status, "down");
  assert.ok(otherState.consecutiveFailures >= 1);
  assert.equal(otherState.lastEntry.errorKind, "status");

  // A changed URL is checked within a second of the PUT, not at the end of the old interval.
  const moved = { ...home, check: { ...home.check, url: `${target.url}/json`, expect: [{ json: { path: "$.status", equals: "up" } }] } };
  const movedDone = nextEvent<[CheckDone]>(d.events, "check:done", doneFor("home", (r) => r.service.check.type === "http" && r.service.check.url.endsWith("/json")));
  assert.equal((await put([moved, other])).status, 200);
  const [movedResult] = await movedDone;
  assert.equal(movedResult.entry.ok, true);

  // Deleted: never checked again, while its sibling keeps running.
  assert.equal((await d.api("DELETE", "/services/web-01/home")).status, 204);
  const jsonHits = target.hits.get("/json");
  let homeAfterDelete = 0;
  d.events.on("check:done", (r: CheckDone) => r.service.serviceId === "home" && homeAfterDelete++);
  const afterDelete = nextEvent<[CheckDone]>(d.events, "check:done", doneFor("other"));
  await afterDelete;
  await nextEvent<[CheckDone]>(d.events, "check:done", doneFor("other"));
  assert.equal(homeAfterDelete, 0);
  assert.equal(target.hits.get("/json"), jsonHits);
});

test("GET …/data pages newest first with an opaque cursor and filters", async (t) => {
  const target = await httpTarget(t);
  const d = await testDaemon(t);
  await d.api("PUT", "/services/s", { services: [{ id: "flappy", check: { url: `${target.url}/ok`, intervalSeconds: 1 } }] });
  const { key } = await d.store.findService("s", "flappy");
  const t0 = Date.UTC(2026, 0, 1);
  await d.store.recordResults(
    Array.from({ length: 25 }, (_, i) => ({
      serviceKey: key!,
      outcome:
        i % 5 === 0
          ? { ok: false as const, status: 500, latencyMs: 1, matched: null, errorKind: "status" as const, error: "status 500", checkedAt: t0 + i * 1000 }
          : { ok: true as const, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt: t0 + i * 1000 },
    })),
    Date.now(),
  );
  const until = new Date(t0 + 25_000).toISOString();
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = `?limit=10&until=${until}` + (cursor ? `&before=${cursor}` : "");
    const page = await d.api("GET", `/services/s/flappy/data${query}`);
    assert.equal(page.status, 200);
    seen.push(...page.body.entries.map((e: { checkedAt: string }) => e.checkedAt));
    cursor = page.body.next;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.equal(seen.length, 25);
  assert.deepEqual(seen, [...seen].sort().reverse());

  const failed = await d.api("GET", `/services/s/flappy/data?ok=false&until=${until}`);
  assert.equal(failed.body.entries.length, 5);
  assert.ok(failed.body.entries.every((e: { ok: boolean }) => !e.ok));
  const window = await d.api("GET", `/services/s/flappy/data?since=${new Date(t0 + 20_000).toISOString()}&until=${until}`);
  assert.equal(window.body.entries.length, 5);
  assert.equal(window.body.next, null);

  for (const bad of ["limit=0", "limit=1001", "limit=ten", "ok=yes", "since=yesterday", "before=not-a-cursor", "colour=red", "limit=1&limit=2"]) {
    const answer = await d.api("GET", `/services/s/flappy/data?${bad}`);
    assert.equal(answer.status, 400, bad);
    assert.ok(answer.body.errors[0].path.length > 1, bad);
  }
  assert.equal((await d.api("GET", "/services/s/nope/data")).status, 404);
  assert.equal((await d.api("GET", "/services/nope/flappy/data")).status, 404);
});

test("GET /metrics exposes checks, latency, per-service up and the scheduler", async (t) => {
  const target = await httpTarget(t);
  const d = await testDaemon(t);
  const done = nextEvent<[CheckDone]>(d.events, "check:done");
  await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: `${target.url}/ok`, intervalSeconds: 60 } }] });
  await done;
  const answer = await fetch(d.url + "/metrics");
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
  const text = await answer.text();
  assert.match(text, /^healthd_checks_total\{type="http",result="ok",error_kind="none"\} 1$/m);
  assert.match(text, /^healthd_service_up\{server="web-01",service="home",type="http"\} 1$/m);
  assert.match(text, /^healthd_service_consecutive_failures\{server="web-01",service="home",type="http"\} 0$/m);
  assert.match(text, /^healthd_scheduler_lag_seconds_count 1$/m);
  assert.match(text, /^healthd_scheduler_skipped_runs_total 0$/m);
  assert.match(text, /^healthd_services_scheduled 1$/m);
  // The check's result was stored in one batch, whose time is in the histogram.
  assert.match(text, /^healthd_store_batch_seconds_count 1$/m);
  assert.ok(Number(/^healthd_store_batch_seconds_sum (\S+)$/m.exec(text)?.[1]) > 0, "the batch's time is counted");
  assert.match(text, /^healthd_store_batch_results_total 1$/m);
  assert.match(text, /^process_cpu_seconds_total /m);
});

test("the event-loop delay summaries read how late the loop was: near nothing idle, the block when blocked", async (t) => {
  const d = await testDaemon(t);
  const read = (text: string, name: string) => Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)$`, "m").exec(text)?.[1]);
  // Each scrape summarises the ticks since the one before; a tick comes once a second.
  const measured = () => until(async () => await (await fetch(d.url + "/metrics")).text(), (text) => read(text, "max") > 0, "a tick measured");
  const idle = await measured();
  // Node's own monitor, sampling once a second, read about 1 s here: the time between its samples.
  assert.ok(read(idle, "p99") < 0.5, `an idle loop is late by little, not ${read(idle, "p99")} s`);
  const blockedUntil = performance.now() + 1500;
  while (performance.now() < blockedUntil); // a tick falls due at least 0.5 s before this ends
  const blocked = await measured();
  assert.ok(read(blocked, "max") >= 0.45, `the block is seen: ${read(blocked, "max")} s`);
});

test("a restarted daemon resumes its schedule on phase and the services' state", async (t) => {
  const target = await httpTarget(t);
  const first = await testDaemon(t);
  const failed = nextEvent<[CheckDone]>(first.events, "check:done");
  await first.api("PUT", "/services/s", { services: [{ id: "tea", check: { url: `${target.url}/teapot`, intervalSeconds: 1 } }] });
  await failed;
  await first.stop();
  const second = await testDaemon(t, { db: first.db });
  const stored = (await second.api("GET", "/services/s")).body.services[0].state.consecutiveFailures;
  assert.ok(stored >= 1);
  const [again] = await nextEvent<[CheckDone]>(second.events, "check:done");
  assert.equal(again.state.consecutiveFailures, stored + 1);
});

test("/metrics passes promtool check metrics, with per-service last check, latency and certificate expiry", async (t) => {
  const promtool = "/usr/bin/promtool";
  assert.ok(existsSync(promtool), "these tests need promtool: apt-get install prometheus (.ci/run installs it)");
  const plain = await httpTarget(t);
  const tls = await httpsTarget(t, selfSigned(tempDir(t), 10));
  const d = await testDaemon(t);
  const both = Promise.all(["plain", "tls"].map((id) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id)));
  await d.api("PUT", "/services/web-01", {
    services: [
      { id: "plain", check: { url: `${plain.url}/ok`, intervalSeconds: 60 } },
      { id: "tls", check: { url: `${tls.url}/ok`, intervalSeconds: 60, verifyTls: false } },
    ],
  });
  await both;
  const text = await (await fetch(d.url + "/metrics")).text();
  const check = spawnSync(promtool, ["check", "metrics"], { input: text, encoding: "utf8" });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.match(text, /^healthd_build_info\{version="\d+\.\d+\.\d+"\} 1$/m);
  assert.match(text, /^healthd_service_last_check_timestamp_seconds\{server="web-01",service="plain",type="http"\} \d{10}(\.\d+)?$/m);
  assert.match(text, /^healthd_service_last_latency_seconds\{server="web-01",service="tls",type="http"\} [0-9.e-]+$/m);
  const expiry = Number(/^healthd_service_certificate_expiry_timestamp_seconds\{server="web-01",service="tls",type="http"\} (\S+)$/m.exec(text)?.[1]);
  assert.ok(Math.abs(expiry - (Date.now() / 1000 + 10 * 86400)) < 2 * 86400, String(expiry));
  assert.doesNotMatch(text, /certificate_expiry_timestamp_seconds\{server="web-01",service="plain",type="http"\}/);
});
