/** /status, /status.json and the badges without a browser: the policy, public mode, badges, 404s, the token. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";

const token = "status-token-0123456789";

async function withServices(t: Parameters<typeof testDaemon>[0], options: Parameters<typeof testDaemon>[1] = {}) {
  const target = await httpTarget(t);
  const d = await testDaemon(t, options);
  const auth: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const done = Promise.all(["home", "teapot"].map((id) => nextEvent(d.events, "check:done", (r: { service: { serviceId: string } }) => r.service.serviceId === id)));
  await d.api("PUT", "/services/web-01", {
    name: "Web 01",
    services: [
      { id: "home", name: "Homepage", check: { url: `${target.url}/ok?secret-path`, intervalSeconds: 60, headers: { "x-secret-header": "s3cret-value" } } },
      { id: "teapot", check: { url: `${target.url}/teapot?another-secret`, intervalSeconds: 60, notifyThreshold: 0 } },
    ],
  }, auth);
  await done;
  return { d, target, auth };
}

test("the page's Content-Security-Policy is strict: nothing from elsewhere, only its own style and script, by their hashes", async (t) => {
  const { d } = await withServices(t);
  const answer = await fetch(d.url + "/status");
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get("content-type"), "text/html; charset=utf-8");
  const csp = answer.headers.get("content-security-policy")!;
  const html = await answer.text();
  assert.equal([...html.matchAll(/<script/g)].length, 1);
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
  const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
  assert.equal(
    csp,
    `default-src 'none'; script-src ${hash(script)}; style-src ${hash(style)}; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  );
  assert.doesNotMatch(html, /\bstyle="|\bon[a-z]+="|https?:\/\/(?!127\.0\.0\.1)/, "no inline style attributes, handlers or other origins");
  const root = await fetch(d.url + "/", { redirect: "manual" });
  assert.deepEqual([root.status, root.headers.get("location")], [302, "/status"]);
});

test("--public-status: the page, its JSON and the badges answer without the token and show no URL, header or error text", async (t) => {
  const { d, target, auth } = await withServices(t, { token, publicStatus: true });
  // The failed check's status code as a number of its own: a time's milliseconds (".418Z") or a fraction is not it.
  const secrets = [target.url, "secret-path", "another-secret", "x-secret-header", "s3cret-value", /(?<![\d.])418(?!\d)/, "teapot was not expected", "I'm a teapot"];
  for (const path of ["/status", "/status/web-01", "/status.json", "/badges/web-01/status.svg", "/badges/web-01/home/status.svg", "/badges/web-01/home/uptime.svg", "/badges/web-01/teapot/latency.svg?window=7d"]) {
    const answer = await fetch(d.url + path);
    assert.equal(answer.status, 200, path);
    const text = await answer.text();
    for (const secret of secrets) assert.ok(typeof secret === "string" ? !text.includes(secret) : !secret.test(text), `${path} shows ${secret}`);
  }
  const answer = await fetch(d.url + "/status.json");
  assert.equal(answer.headers.get("cache-control"), "no-store", "as fresh as the page");
  const model = await answer.json();
  assert.equal(model.overall.summary, "1 of 2 down");
  assert.deepEqual(Object.keys(model.servers[0].services[0]).sort(), ["createdAt", "history", "id", "incident", "lastCheckedAt", "latencyMs", "name", "serverId", "status", "uptime24h", "uptime30d"]);
  // Everything else still needs the token.
  for (const path of ["/services", "/services/web-01", "/metrics", "/openapi.json", "/services/web-01/home/data"]) {
    assert.equal((await fetch(d.url + path)).status, 401, path);
  }
  assert.equal((await fetch(d.url + "/services", { headers: auth })).status, 200);
});

test("without --public-status the page needs the token like the rest, and shows the checks' errors to whoever has it", async (t) => {
  const { d, auth } = await withServices(t, { token });
  for (const path of ["/status", "/status.json", "/badges/web-01/status.svg"]) assert.equal((await fetch(d.url + path)).status, 401, path);
  const page = await (await fetch(d.url + "/status", { headers: auth })).text();
  assert.match(page, /status 418 was not expected/);
});

test("badges: well-formed SVG in the flat style with the right text, cached for a minute; 404 for what is not there", async (t) => {
  const { d } = await withServices(t);
  const cases: [string, RegExp][] = [
    ["/badges/web-01/status.svg", /aria-label="Web 01: down"/],
    ["/badges/web-01/home/status.svg", /aria-label="Homepage: up"/],
    ["/badges/web-01/teapot/status.svg", /aria-label="teapot: down"/],
    ["/badges/web-01/home/uptime.svg", /aria-label="uptime 24h: 100%"/],
    ["/badges/web-01/teapot/uptime.svg?window=30d", /aria-label="uptime 30d: 0\.00%"/],
    ["/badges/web-01/home/latency.svg?window=365d", /aria-label="latency 365d: \d+ ms"/],
  ];
  for (const [path, text] of cases) {
    const answer = await fetch(d.url + path);
    assert.equal(answer.status, 200, path);
    assert.equal(answer.headers.get("content-type"), "image/svg+xml; charset=utf-8");
    assert.equal(answer.headers.get("cache-control"), "max-age=60");
    const svg = await answer.text();
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="20" role="img"/, path);
    assert.match(svg, /<\/svg>$/);
    assert.match(svg, text, path);
  }
  for (const path of ["/badges/nope/status.svg", "/badges/web-01/nope/status.svg", "/badges/nope/x/uptime.svg", "/status/nope"]) {
    assert.equal((await fetch(d.url + path)).status, 404, path);
  }
  assert.equal((await fetch(d.url + "/badges/web-01/home/uptime.svg?window=2h")).status, 400);
});

// The read model's queries run on both engines.
for (const engine of engines) {
  test(`${engine}: /status.json and /stats agree: one read model`, async (t) => {
    const { d } = await withServices(t, { engine });
    const model = await (await fetch(d.url + "/status.json")).json();
    const teapot = model.servers[0].services.find((s: { id: string }) => s.id === "teapot");
    const stats = (await d.api("GET", "/services/web-01/teapot/stats?window=24h")).body;
    assert.equal(teapot.uptime24h, stats.uptime);
    assert.equal(teapot.status, "down");
    assert.equal(model.incidents[0].id, "teapot", "open incidents are listed first");
    assert.equal(teapot.history.uptime.length, 90);
    assert.equal(teapot.history.from, new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10));
    assert.equal(teapot.history.uptime.at(-1), 0);
    assert.ok(teapot.history.settled >= 88 && teapot.history.settled <= 89);
  });
}

test("the page is built once and shared: readers meanwhile get the same one, a change in this daemon shows at once", async (t) => {
  const { d, target } = await withServices(t);
  const read = async () => (await (await fetch(d.url + "/status.json")).json()) as { generatedAt: string; overall: { services: number } };
  // Sixteen readers at once: one build (before: one each, and checks started seconds late at 1,000 services).
  const first = await Promise.all(Array.from({ length: 16 }, read));
  assert.equal(new Set(first.map((m) => m.generatedAt)).size, 1, "one build for every reader");
  const page = await Promise.all([fetch(d.url + "/status"), fetch(d.url + "/status")].map(async (a) => (await a).text()));
  assert.equal(page[0], page[1], "one rendering for both");
  // A change of configuration is shown to the next reader, not a second later.
  const put = await d.api("PUT", "/services/web-01/new", { check: { url: `${target.url}/ok`, intervalSeconds: 60 } });
  assert.equal(put.status, 201);
  assert.equal((await read()).overall.services, 3);
});
