/**
 * Channels through the real daemon: the API, routing, templates, secrets, and delivery to real HTTP receivers
 * on 127.0.0.1 that fail, hang and check signatures. Everything that goes through the outbox runs on both engines.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test, type TestContext } from "node:test";
import type { Notification } from "../src/store/store.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { notifications } from "./support/raw.ts";
import { receiver, type Received } from "./support/receiver.ts";
import { switchableTarget } from "./support/targets.ts";

const nextRequest = (r: Awaited<ReturnType<typeof receiver>>, accept: (req: Received) => boolean = () => true, guardMs?: number) =>
  nextEvent<[Received]>(r.events, "request", accept, guardMs).then(([req]) => req);

/** A daemon with a failing-then-passing target, and a PUT that names `channels` on its one check. */
async function setup(t: TestContext, options: Parameters<typeof testDaemon>[1] = {}) {
  const target = await switchableTarget(t);
  const d = await testDaemon(t, { notifyRetryBaseMs: 20, ntfy: { url: "http://127.0.0.1:9", timeoutMs: 1000 }, ...options });
  const put = (check: object = {}, server: object = {}) =>
    d.api("PUT", "/services/web-01", { ...server, services: [{ id: "home", name: "Homepage", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0, ...check } }] });
  return { target, d, put };
}

const idle = async (d: TestDaemon) => until(() => notifications(d.store), (rows) => rows.every((n) => n.status !== "pending"), "the outbox to empty");

for (const engine of engines) {
  test(`${engine}: /channels: PUT validates by field, GET shows secrets as ***, a PUT of *** keeps them, DELETE is 409 while a check names it`, async (t) => {
    const { d, put } = await setup(t, { engine });
    const bad = await d.api("PUT", "/channels/ops", { type: "webhook", url: "ftp://x", method: "GET", body: "{{nope}}", extra: 1 });
    assert.equal(bad.status, 400);
    const paths = bad.body.errors.map((e: { path: string }) => e.path).sort();
    assert.deepEqual(paths, ["/body", "/extra", "/method", "/url"]);
    assert.match(bad.body.errors.find((e: { path: string }) => e.path === "/body").message, /names \{\{nope\}\}, which is not a field of an event; the fields are id, event, server/);
    assert.equal((await d.api("PUT", "/channels/ops", { type: "carrier-pigeon" })).status, 400);
    assert.equal((await d.api("PUT", "/channels/ntfy", { type: "webhook", url: "http://127.0.0.1:9/" })).status, 400);

    const made = await d.api("PUT", "/channels/ops", {
      type: "webhook", url: "https://user:hunter2@hooks.example.org/h", secret: "s3cret", headers: { Authorization: "Bearer abc", "X-Team": "web" }, events: ["down"],
    });
    assert.equal(made.status, 201);
    assert.equal(made.body.url, "https://user:***@hooks.example.org/h");
    assert.equal(made.body.secret, "***");
    assert.deepEqual(made.body.headers, { Authorization: "***", "X-Team": "web" });
    const env = await d.api("PUT", "/channels/env", { type: "slack", url: "${SLACK_URL}" });
    assert.equal(env.body.url, "${SLACK_URL}", "a variable is shown as written: it names no secret");
    // Sent back as shown: the stored secrets stay.
    const again = await d.api("PUT", "/channels/ops", { ...made.body, name: undefined, builtIn: undefined, createdAt: undefined, updatedAt: undefined });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const [stored] = await d.store.channels("ops");
    assert.deepEqual([stored!.doc.type === "webhook" && stored!.doc.secret, (stored!.doc as { url: string }).url], ["s3cret", "https://user:hunter2@hooks.example.org/h"]);

    // *** with nothing stored to keep is refused, naming the field.
    const masked = await d.api("PUT", "/channels/fresh", { type: "gotify", url: "https://gotify.example.org", token: "***" });
    assert.equal(masked.status, 400);
    assert.deepEqual(masked.body.errors.map((e: { path: string }) => e.path), ["/token"]);

    const listed = await d.api("GET", "/channels");
    assert.deepEqual(listed.body.channels.map((c: { name: string; builtIn: boolean }) => [c.name, c.builtIn]), [["ntfy", true], ["env", false], ["ops", false]]);
    assert.equal((await d.api("GET", "/channels/nothing")).status, 404);

    // A check may name only channels that exist; one that names it keeps it from being deleted.
    const unknown = await put({ channels: ["opz"] });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.errors, [{ path: "/services/0/check/channels", message: "names opz, which is not a channel; create it first (PUT /channels/opz) or fix the name" }]);
    assert.equal((await put({ channels: ["ops"] })).status, 201);
    const refused = await d.api("DELETE", "/channels/ops");
    assert.equal(refused.status, 409);
    assert.match(refused.body.detail, /^web-01\/home names the channel ops; remove it from their channels first$/);
    assert.equal((await put({ channels: null })).status, 200);
    assert.equal((await d.api("DELETE", "/channels/ops")).status, 204);
    assert.equal((await d.api("DELETE", "/channels/ops")).status, 404);
  });

  test(`${engine}: a DOWN and its RECOVERED reach a signed webhook once each, a failed attempt is retried with the same Idempotency-Key, and events filter`, async (t) => {
    const hook = await receiver(t);
    const downsOnly = await receiver(t);
    const { target, d, put } = await setup(t, { engine });
    let first = true;
    hook.answer(() => (first ? ((first = false), { status: 503, body: "busy" }) : { status: 200, body: "ok" }));
    await d.api("PUT", "/channels/hook", { type: "webhook", url: `${hook.url}/in`, secret: "s3cret" });
    await d.api("PUT", "/channels/pager", { type: "webhook", url: `${downsOnly.url}/in`, events: ["down"] });
    const recovered = nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.kind === "recovered" && n.channel === "hook");
    const downDelivered = nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.kind === "down" && n.channel === "hook");
    await put({ channels: ["hook", "pager"] });
    await downDelivered;
    target.setUp(true);
    await recovered;
    await idle(d);

    const [failed, down, up] = hook.received;
    assert.equal(hook.received.length, 3, "a failed attempt, then the DOWN, then the RECOVERED");
    assert.equal(failed!.headers["idempotency-key"], down!.headers["idempotency-key"], "the retry carries the same key");
    assert.notEqual(down!.headers["idempotency-key"], up!.headers["idempotency-key"]);
    for (const req of [down!, up!]) {
      const timestamp = String(req.headers["x-healthd-timestamp"]);
      const expected = createHmac("sha256", "s3cret").update(`${timestamp}.${req.body}`).digest("hex");
      assert.equal(req.headers["x-healthd-signature"], `sha256=${expected}`);
      assert.ok(Math.abs(Number(timestamp) - Date.now() / 1000) < 60);
      assert.equal(req.headers["content-type"], "application/json");
    }
    assert.deepEqual(
      { ...down!.json, id: undefined, since: undefined, at: undefined, message: undefined, incidentId: undefined },
      {
        event: "down", server: "web-01", service: "home", serverName: "web-01", serviceName: "Homepage", url: target.url,
        error: "status 500 was not expected (expected 2xx)", duration: null, statusPage: null, title: "DOWN: web-01/home",
        id: undefined, since: undefined, at: undefined, message: undefined, incidentId: undefined,
      },
    );
    assert.equal(down!.json.id, down!.headers["idempotency-key"]);
    assert.equal(typeof down!.json.incidentId, "number");
    assert.equal(up!.json.event, "recovered");
    assert.equal(up!.json.incidentId, down!.json.incidentId);
    assert.match(up!.json.duration, /^\d+s$/);
    // The channel that takes only DOWNs got the DOWN, once.
    assert.deepEqual(downsOnly.received.map((r) => r.json.event), ["down"]);
    const rows = await notifications(d.store);
    assert.deepEqual(rows.map((n) => [n.kind, n.channel, n.status]), [["down", "hook", "delivered"], ["down", "pager", "delivered"], ["recovered", "hook", "delivered"]]);
    assert.equal(rows[0]!.event!.id, rows[1]!.event!.id, "one notification, one id on each channel");
    const metrics = await (await fetch(d.url + "/metrics")).text();
    assert.match(metrics, /^healthd_notifications_total\{channel="hook",outcome="retry"\} 1$/m);
    assert.match(metrics, /^healthd_notifications_total\{channel="hook",outcome="delivered"\} 2$/m);
  });

  test(`${engine}: a channel that hangs delays no other; its delivery goes out once it answers`, async (t) => {
    const stuck = await receiver(t);
    const fine = await receiver(t);
    stuck.answer(() => "hang");
    const { d, put } = await setup(t, { engine });
    await d.api("PUT", "/channels/stuck", { type: "webhook", url: stuck.url });
    await d.api("PUT", "/channels/fine", { type: "webhook", url: fine.url });
    const hung = nextRequest(stuck);
    const delivered = nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.channel === "fine");
    await put({ channels: ["stuck", "fine"] });
    await Promise.all([hung, delivered]);
    assert.deepEqual((await notifications(d.store)).map((n) => [n.channel, n.status]), [["stuck", "pending"], ["fine", "delivered"]]);
    // The hung send times out (1 s here) and is retried; answered now, it is delivered, and only once.
    stuck.answer(() => ({ status: 200, body: "ok" }));
    stuck.release();
    await nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.channel === "stuck");
    await idle(d);
    const keys = new Set(stuck.received.map((r) => r.headers["idempotency-key"]));
    assert.equal(keys.size, 1, "every attempt of the one DOWN carries its key");
    assert.equal(fine.received.length, 1);
  });

  test(`${engine}: routing: a server's channels, then serve --channel, then ntfy; notifyTopic still picks the ntfy topic`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const a = await receiver(t);
    const b = await receiver(t);
    const { d, put } = await setup(t, { engine, ntfy: { url: ntfy.url, topic: "ops" }, channels: ["b"] });
    await d.api("PUT", "/channels/a", { type: "webhook", url: a.url });
    await d.api("PUT", "/channels/b", { type: "webhook", url: b.url, title: "{{event}} {{server}}/{{service}}" });
    // The server's channels.
    const toA = nextRequest(a);
    assert.equal((await put({}, { channels: ["a"] })).status, 201);
    assert.equal((await toA).json.event, "down");
    await idle(d);
    // Neither check nor server names one: the cluster's default (--channel b).
    const toB = nextRequest(b);
    await d.api("DELETE", "/services/web-01");
    await put({}, {});
    assert.equal((await toB).json.title, "DOWN: web-01/home", "a webhook's body is the event, whatever its title template");
    await idle(d);
    // The ntfy channel by name, with the service's notifyTopic.
    const toNtfy = nextEvent(ntfy.events, "message", (m: { topic: string }) => m.topic === "web-alerts");
    await d.api("DELETE", "/services/web-01");
    await put({ channels: ["ntfy"], notifyTopic: "web-alerts" });
    await toNtfy;
    await idle(d);
    assert.deepEqual(a.received.length + b.received.length, 2);
    // An ntfy channel of one's own publishes to its own topic: notifyTopic is the built-in channel's.
    await d.api("PUT", "/channels/ntfy-web", { type: "ntfy", url: ntfy.url, topic: "web-team", title: "{{serviceName}} {{event}}" });
    const toOwn = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.topic === "web-team");
    await d.api("DELETE", "/services/web-01");
    await put({ channels: ["ntfy-web"], notifyTopic: "web-alerts" });
    const [own] = await toOwn;
    assert.deepEqual([own.title, own.priority], ["Homepage down", 4]);
  });

  test(`${engine}: a delivery that keeps failing is given up when its time runs out (24 h by default), said and counted`, async (t) => {
    const failing = await receiver(t);
    failing.answer(() => ({ status: 503, body: "down for maintenance" }));
    const { d, put } = await setup(t, { engine, notifyGiveUpAfterMs: 300 });
    await d.api("PUT", "/channels/failing", { type: "webhook", url: failing.url });
    const gaveUp = nextEvent<[Notification, { error: string }, string]>(d.events, "notify:failed", (_n, _r, outcome) => outcome === "given_up");
    await put({ channels: ["failing"] });
    const [row] = await gaveUp;
    const [stored] = (await notifications(d.store)).filter((n) => n.id === row.id);
    assert.equal(stored!.status, "failed");
    assert.match(stored!.lastError!, /^given up after \d+ attempts over 0 min: webhook answered 503: down for maintenance$/);
    assert.ok(failing.received.length >= 2, "retried before giving up");
    assert.match(await (await fetch(d.url + "/metrics")).text(), /^healthd_notifications_total\{channel="failing",outcome="given_up"\} 1$/m);
  });

  test(`${engine}: \${NAME} in a channel is read from the environment when a message is sent; a missing one is retried, naming it`, async (t) => {
    const hook = await receiver(t);
    const env: NodeJS.ProcessEnv = {};
    const { d, put } = await setup(t, { engine, env });
    await d.api("PUT", "/channels/hook", { type: "webhook", url: `${hook.url}/\${HOOK_PATH}`, headers: { "x-key": "${HOOK_KEY:-fallback}" } });
    const missing = nextEvent<[Notification, { error: string }]>(d.events, "notify:failed");
    await put({ channels: ["hook"] });
    const [, result] = await missing;
    assert.equal(result.error, "this node's environment has no HOOK_PATH: set it (systemd: EnvironmentFile=) and restart healthd");
    env.HOOK_PATH = "secret-path";
    // The sender is made again when the channel changes; a PUT of the same channel with a new updatedAt does it.
    await d.api("PUT", "/channels/hook", { type: "webhook", url: `${hook.url}/\${HOOK_PATH}`, headers: { "x-key": "${HOOK_KEY:-fallback}" }, method: "PUT" });
    const req = await nextRequest(hook);
    assert.deepEqual([req.method, req.path, req.headers["x-key"]], ["PUT", "/secret-path", "fallback"]);
    // What a variable holds is checked as a written value would be.
    env.BAD_URL = "not a url";
    await d.api("PUT", "/channels/bad", { type: "webhook", url: "${BAD_URL}" });
    const bad = await d.api("POST", "/channels/bad/test");
    assert.equal(bad.status, 502);
    assert.match(bad.body.detail, /^cannot send to bad: with its \$\{NAME\}s filled from this node's environment, the channel is invalid: \/url must be an http:\/\/ or https:\/\/ URL/);
  });
}

test("templates: a webhook body escapes fields as JSON strings; titles and messages are plain text", async (t) => {
  const hook = await receiver(t);
  const slack = await receiver(t);
  const { d } = await setup(t);
  await d.api("PUT", "/channels/hook", {
    type: "webhook", url: hook.url,
    body: '{"text": "{{title}}", "who": "{{serviceName}}"{{#error}}, "error": "{{error}}"{{/error}}}',
  });
  await d.api("PUT", "/channels/slack", { type: "slack", url: `${slack.url}/services/T/B/x`, title: "{{serviceName}} is {{event}}", message: "{{error}}" });
  const both = Promise.all([nextRequest(hook), nextRequest(slack)]);
  await d.api("PUT", "/services/web-01", {
    services: [{ id: "home", name: 'The "big" <one>\\', check: { url: (await switchableTarget(t)).url, intervalSeconds: 1, notifyThreshold: 0, channels: ["hook", "slack"] } }],
  });
  const [toHook, toSlack] = await both;
  assert.deepEqual(toHook.json, { text: "DOWN: web-01/home", who: 'The "big" <one>\\', error: "status 500 was not expected (expected 2xx)" });
  assert.deepEqual(toSlack.json, { text: '*The "big" <one>\\ is down*\nstatus 500 was not expected (expected 2xx)' });
});

test("presets: each type sends the request its service documents, to its url", async (t) => {
  const stand = await receiver(t);
  stand.answer((req) => {
    if (req.path.includes("/send/m.room.message/")) return { status: 200, body: '{"event_id": "$ev1"}' };
    if (req.path.startsWith("/bot")) return { status: 200, body: '{"ok": true, "result": {"message_id": 42}}' };
    if (req.path === "/message") return { status: 200, body: '{"id": 7}' };
    if (req.path.startsWith("/discord")) return { status: 200, body: '{"id": "99"}' };
    if (req.path === "/v2/enqueue") return { status: 202, body: '{"status": "success", "dedup_key": "k"}' };
    return { status: 200, body: "ok" };
  });
  const d = await testDaemon(t);
  const presets: Record<string, object> = {
    slack: { type: "slack", url: `${stand.url}/slack/T/B/x` },
    discord: { type: "discord", url: `${stand.url}/discord/1/abc` },
    teams: { type: "teams", url: `${stand.url}/teams` },
    mattermost: { type: "mattermost", url: `${stand.url}/hooks/mm` },
    gotify: { type: "gotify", url: stand.url, token: "AppToken" },
    matrix: { type: "matrix", url: stand.url, room: "!room:example.org", token: "syt_x" },
    telegram: { type: "telegram", url: stand.url, token: "123:ABC", chatId: "-100" },
    pagerduty: { type: "pagerduty", url: `${stand.url}/v2/enqueue`, routingKey: "R0UTING" },
  };
  for (const [name, doc] of Object.entries(presets)) assert.equal((await d.api("PUT", `/channels/${name}`, doc)).status, 201, name);
  const sent: Record<string, { answer: unknown; req: Received }> = {};
  for (const name of Object.keys(presets)) {
    const req = nextRequest(stand);
    const answer = await d.api("POST", `/channels/${name}/test`);
    sent[name] = { answer: answer.body, req: await req };
    assert.equal(answer.status, 200, `${name}: ${JSON.stringify(answer.body)}`);
  }
  const title = "TEST: healthd channel";
  const { slack, discord, teams, mattermost, gotify, matrix, telegram, pagerduty } = sent as Record<string, { answer: { id: string }; req: Received }>;
  assert.deepEqual([slack!.req.method, slack!.req.path], ["POST", "/slack/T/B/x"]);
  assert.match(slack!.req.json.text, new RegExp(`^\\*${title} slack\\*\\nA test message from healthd`));
  assert.equal(discord!.req.path, "/discord/1/abc?wait=true");
  assert.deepEqual(Object.keys(discord!.req.json).sort(), ["allowed_mentions", "content", "username"]);
  assert.equal(discord!.answer.id, "99");
  assert.equal(teams!.req.json.attachments[0].contentType, "application/vnd.microsoft.card.adaptive");
  assert.equal(teams!.req.json.attachments[0].content.body[0].text, `${title} teams`);
  assert.match(mattermost!.req.json.text, new RegExp(`^\\*\\*${title} mattermost\\*\\*\\n`));
  assert.deepEqual([gotify!.req.path, gotify!.req.headers["x-gotify-key"], gotify!.req.json.priority, gotify!.answer.id], ["/message", "AppToken", 5, "7"]);
  assert.equal(matrix!.req.method, "PUT");
  assert.match(matrix!.req.path, /^\/_matrix\/client\/v3\/rooms\/!room%3Aexample\.org\/send\/m\.room\.message\/healthd-healthd-test-\d+$/);
  assert.deepEqual([matrix!.req.headers.authorization, matrix!.req.json.msgtype, matrix!.answer.id], ["Bearer syt_x", "m.text", "$ev1"]);
  assert.deepEqual([telegram!.req.path, telegram!.req.json.chat_id, telegram!.answer.id], ["/bot123:ABC/sendMessage", "-100", "42"]);
  assert.deepEqual([pagerduty!.req.json.routing_key, pagerduty!.req.json.event_action, pagerduty!.req.json.payload.severity], ["R0UTING", "trigger", "warning"]);

  // A destination that refuses: 502 with what it said.
  stand.answer(() => ({ status: 404, body: "no such webhook" }));
  const refused = await d.api("POST", "/channels/slack/test");
  assert.equal(refused.status, 502);
  assert.equal(refused.body.detail, "slack did not take the test message: slack answered 404: no such webhook");
  assert.equal((await d.api("POST", "/channels/nope/test")).status, 404);
  assert.equal((await d.api("POST", "/channels/ntfy/test")).status, 409, "the daemon has no ntfy topic");
});

test("pagerduty: a DOWN triggers with the incident as dedup_key, and its RECOVERED resolves that key", async (t) => {
  const pd = await receiver(t);
  pd.answer(() => ({ status: 202, body: '{"status":"success","message":"Event processed","dedup_key":"x"}' }));
  const { target, d, put } = await setup(t);
  await d.api("PUT", "/channels/pd", { type: "pagerduty", url: `${pd.url}/v2/enqueue`, routingKey: "R" });
  const trigger = nextRequest(pd);
  await put({ channels: ["pd"] });
  const down = await trigger;
  const resolve = nextRequest(pd);
  target.setUp(true);
  const up = await resolve;
  assert.equal(down.json.event_action, "trigger");
  assert.equal(down.json.payload.severity, "critical");
  assert.equal(down.json.payload.source, "web-01/home");
  assert.match(down.json.dedup_key, /^healthd-incident-\d+$/);
  assert.deepEqual(up.json, { routing_key: "R", event_action: "resolve", dedup_key: down.json.dedup_key });
});
