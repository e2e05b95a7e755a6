/**
 * The console over HTTP: signed in as a token, it shows what that token may see (a token limited to a server sees
 * only that server's services), filters by plain GET parameters, refuses a form without the session's CSRF token
 * or from another origin, lets a read token see but not act (403), and tells its page of changes as
 * Server-Sent Events. One daemon (SQLite) for the whole file.
 */
import assert from "node:assert/strict";
import { request, type IncomingMessage } from "node:http";
import { test } from "node:test";
import { timeline } from "../src/console/service-model.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";

const admin = "console-admin-token";
const auth = { authorization: `Bearer ${admin}` };

/** Signs a browser in with `token`: its session cookie. */
async function signIn(d: TestDaemon, token: string): Promise<string> {
  const answer = await fetch(`${d.url}/login`, { method: "POST", redirect: "manual", body: new URLSearchParams({ token, next: "/console" }) });
  assert.equal(answer.status, 303);
  return answer.headers.get("set-cookie")!.split(";")[0]!;
}

const page = async (d: TestDaemon, path: string, cookie: string) => {
  const answer = await fetch(d.url + path, { headers: { cookie, accept: "text/html" } });
  return { status: answer.status, text: await answer.text() };
};

const csrfOf = (text: string) => /name="csrf" value="([^"]+)"/.exec(text)?.[1];

const post = (d: TestDaemon, path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(d.url + path, { method: "POST", redirect: "manual", headers: { cookie, ...headers }, body: new URLSearchParams(fields) });

const rowsOf = (text: string) => [...text.matchAll(/<tr id="row-([^"]+)"/g)].map((m) => m[1]);

test("the console: scope, filters, CSRF and live events", async (t) => {
  const d = await testDaemon(t, { token: admin });
  const beat = { type: "heartbeat", periodSeconds: 3600 };
  for (const [server, services] of [
    ["shop", [{ id: "checkout", name: "Checkout", check: beat }, { id: "web", name: "Web front", check: { url: "http://127.0.0.1:9/?api_key=s3cret", paused: true } }]],
    ["office", [{ id: "printer", name: "Printer", check: beat }]],
  ] as const) {
    assert.equal((await d.api("PUT", `/services/${server}`, { services }, auth)).status, 201);
  }
  const token = async (name: string, scope: string, servers?: string[]) => (await d.api("POST", "/tokens", { name, scope, ...(servers ? { servers } : {}) }, auth)).body.token as string;
  const reader = await signIn(d, await token("reader", "read"));
  const writer = await signIn(d, await token("writer", "write"));
  const shopOnly = await signIn(d, await token("shop-only", "write", ["shop"]));

  await t.test("without a session, a browser gets the sign-in page, leading back to the console", async () => {
    const answer = await page(d, "/console", "");
    assert.equal(answer.status, 401);
    assert.match(answer.text, /name="next" value="\/console"/);
  });

  await t.test("a token limited to a server sees only that server's services", async () => {
    assert.deepEqual(rowsOf((await page(d, "/console", shopOnly)).text).sort(), ["shop--checkout", "shop--web"]);
    assert.deepEqual(rowsOf((await page(d, "/console", writer)).text).sort(), ["office--printer", "shop--checkout", "shop--web"]);
    assert.equal((await page(d, "/console/services/office/printer", shopOnly)).status, 404, "as if it did not exist");
  });

  await t.test("filters are plain GET parameters: state, server, kind, text; a bad one is 400", async () => {
    assert.deepEqual(rowsOf((await page(d, "/console?state=paused", writer)).text), ["shop--web"]);
    assert.deepEqual(rowsOf((await page(d, "/console?server=office", writer)).text), ["office--printer"]);
    assert.deepEqual(rowsOf((await page(d, "/console?kind=heartbeat&server=shop", writer)).text), ["shop--checkout"]);
    assert.deepEqual(rowsOf((await page(d, "/console?q=FRONT", writer)).text), ["shop--web"]);
    assert.deepEqual(rowsOf((await page(d, "/console?q=api_key=s3c", reader)).text), [], "a secret in a URL cannot be guessed by searching");
    const counts = (await page(d, "/console?q=nothing-matches", writer)).text;
    assert.match(counts, /Paused: 1</, "counts are of every service, whatever the filters");
    assert.equal((await page(d, "/console?state=on-fire", writer)).status, 400);
  });

  await t.test("a read token sees no button, and its posts are refused 403", async () => {
    const seen = await page(d, "/console/services/shop/checkout", reader);
    assert.equal(seen.status, 200);
    assert.doesNotMatch(seen.text, /<form class="act"/);
    assert.doesNotMatch(seen.text, /ping\/[0-9a-f-]{36}/, "nor the heartbeat's ping key");
    const refused = await post(d, "/console/actions/pause", reader, { server: "shop", service: "checkout" });
    assert.equal(refused.status, 403);
    assert.match((await refused.json()).detail, /scope write/);
  });

  await t.test("a form without the session's CSRF token, or from another origin, is refused and changes nothing", async () => {
    const csrf = csrfOf((await page(d, "/console/services/shop/checkout", writer)).text)!;
    const fields = { server: "shop", service: "checkout", minutes: "60" };
    assert.equal((await post(d, "/console/actions/silence", writer, fields)).status, 403);
    assert.equal((await post(d, "/console/actions/silence", writer, { ...fields, csrf: csrfOf((await page(d, "/console/services/shop/web", shopOnly)).text)! })).status, 403, "another session's");
    assert.equal((await post(d, "/console/actions/silence", writer, { ...fields, csrf }, { origin: "http://evil.example" })).status, 403);
    assert.deepEqual((await d.api("GET", "/silences", undefined, auth)).body.silences, []);
    const done = await post(d, "/console/actions/silence", writer, { ...fields, csrf, reason: "deploy" });
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), "/console/services/shop/checkout?done=silenced");
    const [silence] = (await d.api("GET", "/silences", undefined, auth)).body.silences;
    assert.equal(silence.service, "checkout");
    assert.equal(silence.reason, "deploy");
    assert.deepEqual(rowsOf((await page(d, "/console?state=silenced", writer)).text), ["shop--checkout"]);
    const outside = await post(d, "/console/actions/pause", shopOnly, { csrf: csrfOf((await page(d, "/console/services/shop/web", shopOnly)).text)!, server: "office", service: "printer" });
    assert.equal(outside.status, 403, "a server outside the token's");
  });

  await t.test("pause, resume and rotate through the same writes as the API", async () => {
    const csrf = csrfOf((await page(d, "/console/services/shop/web", writer)).text)!;
    const before = (await d.api("GET", "/services/shop/checkout", undefined, auth)).body.check.pingKey;
    assert.equal((await post(d, "/console/actions/pause", writer, { csrf, server: "shop", service: "checkout" })).status, 303);
    assert.equal((await d.api("GET", "/services/shop/checkout", undefined, auth)).body.check.paused, true);
    assert.equal((await post(d, "/console/actions/resume", writer, { csrf, server: "shop", service: "checkout" })).status, 303);
    assert.equal((await post(d, "/console/actions/ping-key", writer, { csrf, server: "shop", service: "checkout" })).status, 303);
    const after = (await d.api("GET", "/services/shop/checkout", undefined, auth)).body.check;
    assert.equal(after.paused, false);
    assert.notEqual(after.pingKey, before);
    const run = await post(d, "/console/actions/run", writer, { csrf, server: "shop", service: "checkout" });
    assert.equal(run.status, 409, "a heartbeat runs when its job pings");
    const announced = await d.api("POST", "/announcements", { title: "Printer jam", message: "We are on it." }, auth);
    assert.equal(announced.status, 201, JSON.stringify(announced.body));
    const overview = (await page(d, "/console", writer)).text;
    assert.match(overview, /End Printer jam/);
    const ended = await post(d, "/console/actions/end-announcement", writer, { csrf: csrfOf(overview)!, announcement: String(announced.body.id) });
    assert.equal(ended.headers.get("location"), "/console?done=announcement-ended");
    assert.notEqual((await d.api("GET", `/announcements/${announced.body.id}`, undefined, auth)).body.endsAt, null);
    assert.doesNotMatch((await page(d, "/console", writer)).text, /End Printer jam/);
  });

  await t.test("acknowledge: an open incident's button, for write tokens; who and note shown; a second one is 409", async () => {
    const pingKey = (await d.api("GET", "/services/office/printer", undefined, auth)).body.check.pingKey as string;
    assert.equal((await fetch(`${d.url}/ping/${pingKey}/fail`, { method: "POST" })).status, 200);
    const [open] = (await d.api("GET", "/incidents?server=office&open=true", undefined, auth)).body.incidents;
    assert.ok(open, "the failed run opened an incident");
    const path = "/console/services/office/printer";
    assert.doesNotMatch((await page(d, path, reader)).text, /Acknowledge/, "a read token has no button");
    const seen = (await page(d, path, writer)).text;
    assert.match(seen, /<button[^>]*>Acknowledge</);
    const fields = { csrf: csrfOf(seen)!, server: "office", service: "printer", incident: String(open.id), note: "on it" };
    const wrong = await post(d, "/console/actions/ack", writer, { ...fields, service: "other" });
    assert.equal(wrong.status, 404, "an incident of another service");
    const done = await post(d, "/console/actions/ack", writer, fields);
    assert.equal(done.headers.get("location"), `${path}?done=acknowledged`);
    assert.deepEqual(pick((await d.api("GET", `/incidents/${open.id}`, undefined, auth)).body.acknowledged), { by: "writer (signed in)", note: "on it" });
    const after = (await page(d, path, writer)).text;
    assert.match(after, /Acknowledged by writer \(signed in\): on it\./);
    assert.match(after, /Acknowledged by writer \(signed in\): on it; its reminders and escalations stopped/, "in the timeline");
    // Each notification of the incident, per channel, with how its delivery went (this daemon has no ntfy topic).
    assert.match(after, /DOWN to ntfy: not sent \(no topic or channel to send it to\)/);
    assert.match(after, /ACK to ntfy: not sent/);
    const again = await post(d, "/console/actions/ack", writer, fields);
    assert.equal(again.status, 409);
    assert.match((await again.json()).detail, /already acknowledged by writer \(signed in\)/);
  });

  await t.test("/console/events tells the page when services change", async () => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => request(`${d.url}/console/events`, { agent: false, headers: { cookie: writer } }, resolve).on("error", reject).end());
    try {
      assert.equal(res.headers["content-type"], "text/event-stream; charset=utf-8");
      res.setEncoding("utf8");
      const chunks = res[Symbol.asyncIterator]();
      let text = String((await chunks.next()).value);
      assert.match(text, /^retry: /);
      const put = await d.api("PUT", "/services/office", { services: [{ id: "printer", name: "Printer", check: { type: "heartbeat", periodSeconds: 600 } }] }, auth);
      assert.ok(put.status < 300, JSON.stringify(put.body));
      while (!text.includes("event: changed")) text += String((await chunks.next()).value);
      assert.match(text, /event: changed\ndata: \{"servers":null\}/);
    } finally {
      res.destroy();
    }
  });

  await t.test("editing a server's YAML: errors at their line, a preview of what changes, then saved as one PUT", async () => {
    assert.equal((await page(d, "/console/servers/office/edit", reader)).status, 403, "a read token may not edit");
    const edit = await page(d, "/console/servers/office/edit", writer);
    assert.equal(edit.status, 200);
    const yaml = /<textarea[^>]*>([^<]*)<\/textarea>/.exec(edit.text)![1]!.replaceAll("&#39;", "'").replaceAll("&quot;", '"').replaceAll("&amp;", "&");
    assert.match(yaml, /^office:\n/);
    const csrf = csrfOf(edit.text)!;
    const form = async (text: string, step: string) => {
      const answer = await post(d, "/console/servers/office/edit", writer, { csrf, yaml: text, step });
      return { status: answer.status, location: answer.headers.get("location"), text: await answer.text() };
    };
    const broken = yaml.replace("  services:\n", "  services:\n    - id: scanner\n      check:\n        url: http://127.0.0.1:9/\n        intervalSeconds: -5\n");
    const line = broken.split("\n").findIndex((l) => l.includes("intervalSeconds: -5")) + 1;
    const refused = await form(broken, "preview");
    assert.match(refused.text, new RegExp(`Line ${line}, column \\d+</a>: /office/services/0/check/intervalSeconds`));
    assert.doesNotMatch(refused.text, /value="save"/, "no Save button while it has errors");
    const good = yaml.replace("  services:\n", "  services:\n    - id: nightly\n      check:\n        type: heartbeat\n        periodSeconds: 86400\n");
    const preview = await form(good, "preview");
    assert.match(preview.text, /<li>\+ nightly \(new\)<\/li>/);
    assert.equal((await d.api("GET", "/services/office/nightly", undefined, auth)).status, 404, "a preview saves nothing");
    const saved = await form(good, "save");
    assert.equal(saved.status, 303);
    assert.equal(saved.location, "/console/servers/office/edit?saved=nightly");
    const key = (await d.api("GET", "/services/office/nightly", undefined, auth)).body.check.pingKey;
    const after = await page(d, saved.location!, writer);
    assert.match(after.text, new RegExp(`healthd run http://[^ ]+/ping/${key} -- /path/to/job`), "the new heartbeat's crontab line");
    assert.equal((await post(d, "/console/servers/shop/edit", shopOnly, { csrf, yaml, step: "save" })).status, 403, "another session's token");
    assert.equal((await post(d, "/console/servers/office/edit", shopOnly, { csrf: csrfOf((await page(d, "/console/services/shop/web", shopOnly)).text)!, yaml, step: "save" })).status, 403, "a server outside the token's");
  });
});

const pick = (ack: { by: string; note: string | null } | null) => ack && { by: ack.by, note: ack.note };

test("an incident's timeline says how each notification to each channel went", () => {
  const incident = { id: 7, serverId: "shop", serviceId: "web", startedAt: 1000, openedAt: 3000, closedAt: 9000, failures: 3, firstError: "status 502", notified: true };
  const delivery = { incidentId: 7, kind: "down", channel: "ops-mail", createdAt: 3000, deliveredAt: null, attempts: 0, lastError: null };
  const lines = timeline(incident, [], [
    { ...delivery, status: "delivered", deliveredAt: 3100, attempts: 2 },
    { ...delivery, channel: "pagerduty", status: "failed", attempts: 12, lastError: "HTTP 400 invalid routing key" },
    { ...delivery, kind: "recovered", channel: "chat", status: "pending", createdAt: 9000, attempts: 1, lastError: "connect ECONNREFUSED" },
    { ...delivery, kind: "recovered", channel: "ops-mail", status: "pending", createdAt: 9000 },
  ]).map((e) => e.text);
  assert.deepEqual(lines.slice(2, -1), [
    "DOWN to pagerduty: given up after 12 attempts (HTTP 400 invalid routing key)",
    "DOWN to ops-mail: delivered at attempt 2",
    "RECOVERED to chat: not delivered yet, 1 attempt (connect ECONNREFUSED)",
    "RECOVERED to ops-mail: queued",
  ]);
});
