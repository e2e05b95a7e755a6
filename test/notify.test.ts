import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import type { Notification as NotificationRow } from "../src/store/store.ts";
import { engines, type TestEngine } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn, type NtfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { switchableTarget } from "./support/targets.ts";
import { notifications } from "./support/raw.ts";

const nextMessage = (ntfy: NtfyStandIn, accept: (m: StoredMessage) => boolean) =>
  nextEvent<[StoredMessage]>(ntfy.events, "message", accept);

interface Extra {
  token?: string;
  user?: string;
  password?: string;
  notifyThreshold?: number;
  topic?: string | null;
  engine?: TestEngine;
}

async function setup(t: TestContext, ntfy: NtfyStandIn, extra: Extra = {}) {
  const target = await switchableTarget(t);
  const { token, user, password } = extra;
  const d = await testDaemon(t, {
    engine: extra.engine,
    ntfy: { url: ntfy.url, topic: extra.topic === null ? undefined : (extra.topic ?? "ops"), token, user, password, timeoutMs: 500 },
    notifyRetryBaseMs: 20,
  });
  const put = (more: object = {}) =>
    d.api("PUT", "/services/web-01", {
      services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: extra.notifyThreshold ?? 1, ...more } }],
    });
  return { target, d, put };
}

// Everything that goes through the outbox runs on both engines.
for (const engine of engines) {
  test(`${engine}: a failing target gives exactly one DOWN after the threshold, and one RECOVERED after it passes`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const { target, d, put } = await setup(t, ntfy, { engine });
    const down = nextMessage(ntfy, (m) => m.title === "DOWN: web-01/home");
    const failures: number[] = [];
    d.events.on("check:done", (r: CheckDone) => failures.push(r.state.consecutiveFailures));
    await put();
    const [message] = await down;
    assert.deepEqual(failures.slice(0, 2), [1, 2], "DOWN comes with the failure that exceeds threshold 1");
    assert.equal(message.priority, 4);
    assert.equal(message.topic, "ops");
    assert.equal(message.click, target.url);
    assert.deepEqual(message.tags, ["rotating_light", "healthd", "down"]);
    assert.match(message.message, new RegExp(`^status: status 500 was not expected \\(expected 2xx\\)\\nURL: ${target.url}\\n2 consecutive failed checks since `));

    // Further failures publish nothing more.
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.state.consecutiveFailures >= 4);
    const recovered = nextMessage(ntfy, (m) => m.title === "RECOVERED: web-01/home");
    target.setUp(true);
    const [back] = await recovered;
    assert.equal(back.priority, 3);
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.entry.ok);
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.entry.ok);
    assert.deepEqual(ntfy.messages("ops").map((m) => m.title), ["DOWN: web-01/home", "RECOVERED: web-01/home"]);
  });

  test(`${engine}: ntfy failing for a while delays the notification, loses nothing, and checks keep running`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    ntfy.failNext(4, 503);
    const { d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0 });
    const failedAttempts: NotificationRow[] = [];
    d.events.on("notify:failed", (row: NotificationRow) => failedAttempts.push(row));
    let checksWhileFailing = 0;
    d.events.on("check:done", () => failedAttempts.length < 4 && checksWhileFailing++);
    const delivered = nextEvent<[NotificationRow]>(d.events, "notify:sent");
    await put();
    const [row] = await delivered;
    assert.equal(failedAttempts.length, 4);
    assert.equal(row.kind, "down");
    assert.equal(ntfy.messages("ops").length, 1);
    assert.ok(checksWhileFailing >= 1);
    const [stored] = await notifications(d.store);
    assert.deepEqual([stored!.status, stored!.attempts, stored!.remoteId], ["delivered", 5, ntfy.messages("ops")[0]!.id]);
  });

  test(`${engine}: ntfy down and then back: notifications of one topic arrive in order`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    await ntfy.stop();
    const { target, d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0 });
    await put();
    await nextEvent<[NotificationRow]>(d.events, "notify:failed", (row) => row.kind === "down");
    target.setUp(true);
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.notices.includes("recovered"));
    target.setUp(false);
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.notices.includes("down"));
    const third = nextEvent<[NotificationRow]>(d.events, "notify:sent", (row) => row.id === 3);
    await ntfy.start();
    await third;
    assert.deepEqual(ntfy.messages("ops").map((m) => m.title!.split(":")[0]), ["DOWN", "RECOVERED", "DOWN"]);
  });

  test(`${engine}: a token is sent as Bearer; a wrong one is reported with ntfy's error and retried`, async (t) => {
    const ntfy = await ntfyStandIn(t, { tokens: ["tk_right"] });
    const good = await setup(t, ntfy, { engine, token: "tk_right", notifyThreshold: 0 });
    const sent = nextMessage(ntfy, () => true);
    await good.put();
    assert.equal((await sent)[0].authorization, "Bearer tk_right");
    await good.d.stop();

    const bad = await setup(t, ntfy, { engine, token: "tk_wrong", notifyThreshold: 0 });
    const refused = nextEvent<[NotificationRow, { ok: false; error: string }]>(bad.d.events, "notify:failed");
    await bad.put();
    const [row, result] = await refused;
    assert.match(result.error, /^ntfy answered 401: unauthorized \(code 40101\)$/);
    await nextEvent(bad.d.events, "notify:failed", (r: NotificationRow) => r.id === row.id);
    const [stored] = await notifications(bad.d.store);
    assert.deepEqual([stored!.status, stored!.lastError], ["pending", result.error]);
  });

  test(`${engine}: a notification ntfy refuses as invalid is marked failed and not retried`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    ntfy.failNext(1, 400);
    const { d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0 });
    const failed = nextEvent<[NotificationRow]>(d.events, "notify:failed");
    await put();
    await failed;
    await nextEvent<[CheckDone]>(d.events, "check:done");
    const [stored] = await notifications(d.store);
    assert.equal(stored!.status, "failed");
    assert.equal(stored!.attempts, 1);
    assert.match(String(stored!.lastError), /ntfy answered 400/);
    assert.equal(ntfy.attempts, 1);
  });

  test(`${engine}: a RECOVERED whose DOWN ntfy refused is kept unsent: nobody hears of a recovery without the outage`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    ntfy.failNext(1, 400);
    const { target, d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0 });
    const failed = nextEvent<[NotificationRow]>(d.events, "notify:failed", (row) => row.kind === "down");
    await put();
    await failed;
    const kept = nextEvent<[NotificationRow, { error: string }]>(d.events, "notify:failed", (row) => row.kind === "recovered");
    target.setUp(true);
    const [, result] = await kept;
    assert.match(result.error, /its incident's DOWN was not sent to ntfy \(failed\)/);
    const stored = await notifications(d.store);
    assert.deepEqual(stored.map((n) => [n.kind, n.status]), [["down", "failed"], ["recovered", "unsent"]]);
    assert.equal(ntfy.messages("ops").length, 0, "before: the RECOVERED was published alone");
  });

  test(`${engine}: no topic anywhere: the daemon runs and keeps the notification as unsent`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const { d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0, topic: null });
    const unsent = nextEvent<[NotificationRow]>(d.events, "notify:failed");
    await put();
    await unsent;
    const [stored] = await notifications(d.store);
    assert.deepEqual([stored!.status, stored!.topic, stored!.lastError], ["unsent", null, "no ntfy topic: set notifyTopic on the check or start healthd with --ntfy-topic"]);
    const metrics = await (await fetch(d.url + "/metrics")).text();
    assert.match(metrics, /^healthd_notifications\{status="unsent"\} 1$/m);
    assert.match(metrics, /^healthd_notifications\{status="pending"\} 0$/m);
    assert.equal(ntfy.attempts, 0);
    // A service's own topic is used even when the daemon has none.
    const own = nextMessage(ntfy, (m) => m.topic === "team-web");
    await d.api("PUT", "/services/web-02", {
      services: [{ id: "api", check: { url: "http://127.0.0.1:9/", intervalSeconds: 1, notifyThreshold: 0, notifyTopic: "team-web" } }],
    });
    assert.equal((await own)[0].title, "DOWN: web-02/api");
  });

  test(`${engine}: deleting a service with an open incident: its DOWN stays delivered, nothing more is sent`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const { d, put } = await setup(t, ntfy, { engine, notifyThreshold: 0 });
    const down = nextMessage(ntfy, () => true);
    await put();
    await down;
    assert.equal((await d.api("DELETE", "/services/web-01/home")).status, 204);
    await d.api("PUT", "/services/other", { services: [{ id: "x", check: { url: "http://127.0.0.1:9/", intervalSeconds: 1, notify: false } }] });
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serverId === "other");
    await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serverId === "other");
    assert.equal(ntfy.messages("ops").length, 1);
    assert.deepEqual((await notifications(d.store)).map((n) => n.status), ["delivered"]);
  });
}

test("user and password are sent as Basic", async (t) => {
  const ntfy = await ntfyStandIn(t, { users: { healthd: "s3cret:x" } });
  const { put } = await setup(t, ntfy, { user: "healthd", password: "s3cret:x", notifyThreshold: 0 });
  const sent = nextMessage(ntfy, () => true);
  await put();
  assert.equal((await sent)[0].authorization, `Basic ${Buffer.from("healthd:s3cret:x").toString("base64")}`);
});

test("POST /push/topics/{topic}: 200 with ntfy's id and time, 400 for what ntfy would refuse, 502 when ntfy fails", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const { d } = await setup(t, ntfy);
  const ok = await d.api("POST", "/push/topics/my-test", { title: "Hi ✓", message: "it works", priority: "high", tags: ["tada"] });
  assert.equal(ok.status, 200);
  assert.match(ok.body.id, /^[A-Za-z0-9]{12}$/);
  assert.match(ok.body.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
  assert.deepEqual(ntfy.messages("my-test").map((m) => [m.title, m.message, m.priority, m.tags]), [["Hi ✓", "it works", 4, ["tada"]]]);
  const defaults = await d.api("POST", "/push/topics/my-test");
  assert.equal(defaults.status, 200);
  assert.equal(ntfy.messages("my-test")[1]!.title, "healthd test notification");
  // As ntfy users type it: curl -d "message" (plain text), and a click URL.
  const plain = await d.api("POST", "/push/topics/my-test", "backup done ✓", { "content-type": "text/plain" });
  assert.equal(plain.status, 200);
  assert.equal(ntfy.messages("my-test")[2]!.message, "backup done ✓");
  assert.equal((await d.api("POST", "/push/topics/my-test", { message: "x", click: "https://example.org/x" })).status, 200);
  assert.equal(ntfy.messages("my-test")[3]!.click, "https://example.org/x");
  // curl -d sends a form-encoded body: any body that is not JSON is the message, untitled, as ntfy takes it.
  const form = await d.api("POST", "/push/topics/my-test", "backup done", { "content-type": "application/x-www-form-urlencoded" });
  assert.equal(form.status, 200, JSON.stringify(form.body));
  assert.equal((await d.api("POST", "/push/topics/my-test", "<b>x</b>", { "content-type": "text/html" })).status, 200);
  assert.deepEqual(
    ntfy.messages("my-test").slice(4).map((m) => [m.title, m.message, m.tags]),
    [[undefined, "backup done", ["healthd"]], [undefined, "<b>x</b>", ["healthd"]]],
  );
  assert.equal(ntfy.messages("my-test")[2]!.title, undefined, "a plain message is not titled as a test");
  assert.equal((await d.api("POST", "/push/topics/my-test", "{not json", { "content-type": "application/json" })).status, 400);

  for (const [path, body] of [
    ["/push/topics/bad%20topic", undefined],
    ["/push/topics/docs", undefined],
    ["/push/topics/ok", { priority: 9 }],
    ["/push/topics/ok", { colour: "red" }],
    ["/push/topics/ok", { message: "x".repeat(5000) }],
    ["/push/topics/ok", { click: "javascript:alert(1)" }],
  ] as const) {
    const bad = await d.api("POST", path, body);
    assert.equal(bad.status, 400, path + JSON.stringify(body));
    assert.ok(bad.body.errors.length > 0);
  }

  ntfy.failNext(1, 500);
  const failing = await d.api("POST", "/push/topics/ok");
  assert.equal(failing.status, 502);
  assert.match(failing.body.detail, /ntfy answered 500: internal server error \(code 50001\)/);
  ntfy.delay(1500);
  const slow = await d.api("POST", "/push/topics/ok");
  assert.equal(slow.status, 502);
  assert.match(slow.body.detail, /ntfy at http:\/\/127\.0\.0\.1:\d+ did not answer within 500 ms/);
  ntfy.delay(0);
  await ntfy.stop();
  const down = await d.api("POST", "/push/topics/ok");
  assert.equal(down.status, 502);
  assert.match(down.body.detail, /could not reach ntfy at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
});
