/** The ntfy stand-in, checked against the facts of ../shared/NTFY.md, so that code passing against it would pass against ntfy. */
import assert from "node:assert/strict";
import { get } from "node:http";
import { test } from "node:test";
import { ntfyStandIn } from "./support/ntfy.ts";

const post = (url: string, body: string | object, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });

async function answer(response: Response) {
  const text = await response.text();
  assert.ok(text.endsWith("\n"), "ntfy ends every JSON answer with a newline");
  return { status: response.status, body: JSON.parse(text) };
}

test("JSON publishing answers the message with id, time, expires and event; empty fields left out", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const { status, body } = await answer(
    await post(ntfy.url + "/", { topic: "alerts", title: "Héllo ✓", message: "body", priority: 4, tags: ["warning"], click: "https://x/", unknown: 1 }),
  );
  assert.equal(status, 200);
  assert.match(body.id, /^[A-Za-z0-9]{12}$/);
  assert.equal(body.expires, body.time + 43200);
  assert.equal(body.event, "message");
  assert.deepEqual(
    { topic: body.topic, title: body.title, message: body.message, priority: body.priority, tags: body.tags, click: body.click },
    { topic: "alerts", title: "Héllo ✓", message: "body", priority: 4, tags: ["warning"], click: "https://x/" },
  );
  const bare = (await answer(await post(ntfy.url + "/", { topic: "alerts" }))).body;
  assert.equal(bare.message, "triggered");
  assert.ok(!("title" in bare) && !("priority" in bare) && !("tags" in bare) && !("click" in bare));
  assert.equal((await answer(await fetch(ntfy.url + "/", { method: "PUT", body: JSON.stringify({ topic: "alerts" }) }))).status, 200);
});

test("JSON publishing keeps action buttons as ntfy answers them: each with an id, an http action's method POST unless given", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const actions = [
    { action: "http", label: "Acknowledge", url: "https://healthd.example.org/incidents/1/ack/x", clear: true },
    { action: "view", label: "Open", url: "https://example.org/" },
  ];
  const { body } = await answer(await post(ntfy.url + "/", { topic: "alerts", message: "m", actions }));
  assert.deepEqual(body.actions.map(({ id, ...rest }: { id: string }) => (assert.match(id, /^[A-Za-z0-9]{10}$/), rest)), [
    { action: "http", label: "Acknowledge", url: "https://healthd.example.org/incidents/1/ack/x", method: "POST", clear: true },
    { action: "view", label: "Open", url: "https://example.org/" },
  ]);
  assert.deepEqual(ntfy.messages("alerts")[0]!.actions, body.actions);
});

test("JSON publishing refuses bad topics, reserved topics, bad priorities, bad JSON and large bodies with ntfy's codes", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const cases: [string | object, number, number][] = [
    [{ topic: "has space" }, 400, 40009],
    [{ message: "no topic" }, 400, 40009],
    [{ topic: "x".repeat(65) }, 400, 40009],
    [{ topic: "docs" }, 400, 40010],
    [{ topic: "v1" }, 400, 40010],
    [{ topic: "ok", priority: 6 }, 400, 40007],
    [{ topic: "ok", priority: "high" }, 400, 40007],
    ["{not json", 400, 40024],
    [{ topic: "ok", message: "x".repeat(9000) }, 413, 41303],
  ];
  for (const [body, status, code] of cases) {
    const got = await answer(await post(ntfy.url + "/", body));
    assert.deepEqual([got.status, got.body.code, got.body.http], [status, code, status], JSON.stringify(body).slice(0, 60));
    assert.equal(typeof got.body.error, "string");
  }
  assert.deepEqual(ntfy.messages("ok"), []);
});

test("plain publishing reads X-Title, X-Priority (numbers and names), X-Tags, X-Click, X-Markdown", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const got = await answer(
    await post(ntfy.url + "/plain", "disk full", { "X-Title": "Disk", "X-Priority": "urgent", "X-Tags": "warning, disk", "X-Click": "https://x/", "X-Markdown": "true" }),
  );
  assert.equal(got.status, 200);
  assert.deepEqual([got.body.title, got.body.priority, got.body.tags, got.body.click], ["Disk", 5, ["warning", "disk"], "https://x/"]);
  assert.equal((await answer(await post(ntfy.url + "/plain", "x", { "X-Priority": "2" }))).body.priority, 2);
  assert.equal((await answer(await post(ntfy.url + "/plain", "x", { "X-Priority": "9" }))).body.code, 40007);
  assert.equal((await answer(await post(ntfy.url + "/not%20a%20topic", "x"))).body.code, 40401);
});

test("poll read-back answers cached messages as NDJSON, oldest first, since all, an id, a time or latest", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const ids: string[] = [];
  for (const m of ["one", "two", "three"]) ids.push((await answer(await post(ntfy.url + "/", { topic: "feed", message: m }))).body.id);
  const poll = async (since: string) => {
    const response = await fetch(`${ntfy.url}/feed/json?poll=1&since=${since}`);
    const text = await response.text();
    return text.split("\n").filter(Boolean).map((line) => JSON.parse(line).message);
  };
  assert.deepEqual(await poll("all"), ["one", "two", "three"]);
  assert.deepEqual(await poll(ids[0]!), ["two", "three"]);
  assert.deepEqual(await poll("latest"), ["three"]);
  assert.deepEqual(await poll("0"), ["one", "two", "three"]);
  assert.deepEqual(await (await fetch(ntfy.url + "/v1/health")).json(), { healthy: true });
});

test("token auth: Bearer (case-sensitive), Basic with empty user and token, Basic user:password; 401 and 403", async (t) => {
  const ntfy = await ntfyStandIn(t, { tokens: ["tk_secret"], users: { phil: "pw" } });
  const publish = (authorization?: string) =>
    post(ntfy.url + "/", { topic: "private" }, authorization ? { authorization } : {}).then(answer);
  assert.equal((await publish("Bearer tk_secret")).status, 200);
  assert.equal((await publish(`Basic ${Buffer.from(":tk_secret").toString("base64")}`)).status, 200);
  assert.equal((await publish(`Basic ${Buffer.from("phil:pw").toString("base64")}`)).status, 200);
  assert.deepEqual((await publish("bearer tk_secret")).body.code, 40101);
  assert.deepEqual((await publish("Bearer tk_wrong")).body.code, 40101);
  assert.deepEqual((await publish(`Basic ${Buffer.from("phil:nope").toString("base64")}`)).body.code, 40101);
  const anonymous = await publish();
  assert.deepEqual([anonymous.status, anonymous.body.code], [403, 40301]);
});

test("rate limit: a burst, then 429 with code 42901", async (t) => {
  const ntfy = await ntfyStandIn(t, { burst: 3, replenishMs: 60_000 });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await post(ntfy.url + "/", { topic: "busy" })).status);
  assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
  assert.equal((await answer(await post(ntfy.url + "/", { topic: "busy" }))).body.code, 42901);
});

test("test controls: fail the next N, answer late, stop listening and come back on the same port", async (t) => {
  const ntfy = await ntfyStandIn(t);
  ntfy.failNext(2, 503);
  assert.equal((await post(ntfy.url + "/", { topic: "c" })).status, 503);
  assert.equal((await post(ntfy.url + "/", { topic: "c" })).status, 503);
  assert.equal((await post(ntfy.url + "/", { topic: "c" })).status, 200);
  ntfy.delay(300);
  await assert.rejects(fetch(ntfy.url + "/v1/health", { signal: AbortSignal.timeout(50) }));
  ntfy.delay(0);
  const url = ntfy.url;
  await ntfy.stop();
  const refused = await new Promise<string>((resolve) =>
    get(url + "/v1/health", { agent: false }, () => resolve("answered")).on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "")),
  );
  assert.equal(refused, "ECONNREFUSED");
  await ntfy.start();
  assert.equal(ntfy.url, url);
  assert.equal((await fetch(url + "/v1/health")).status, 200);
  assert.equal(ntfy.messages("c").length, 1);
});
