/**
 * Status pages people are shown (PUT /status-pages/{slug}): sections of chosen services, a look of their own,
 * the page main at /status, hostnames at `/`; every bad field named; display names only, never an id. Over
 * real HTTP, on both engines.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { request } from "node:http";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { rawQuery } from "./support/raw.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const as = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** Ids no display name contains, so that one found in a page's text can only be an id. */
const ids = { shop: "srv-a1b2", ops: "srv-c3d4", checkout: "svc-checkout-x9", search: "svc-search-y8", backup: "svc-backup-z7", api: "svc-api-w6" };

/** A shop server (checkout, search) and an ops server (a backup heartbeat, an API that is down). */
async function shop(t: Parameters<typeof testDaemon>[0], engine: (typeof engines)[number]): Promise<TestDaemon> {
  const d = await testDaemon(t, { engine, token: adminToken });
  const down = nextEvent(d.events, "check:done", (r: { service: { serviceId: string } }) => r.service.serviceId === ids.api);
  const check = { url: "http://127.0.0.1:9/", intervalSeconds: 86_400 };
  await put(d, `/services/${ids.shop}`, {
    name: "Web shop",
    services: [
      { id: ids.checkout, name: "Checkout", check: { type: "heartbeat", periodSeconds: 3600 } },
      { id: ids.search, name: "Search", check: { type: "heartbeat", periodSeconds: 3600 } },
    ],
  });
  await put(d, `/services/${ids.ops}`, {
    name: "Operations",
    services: [
      { id: ids.backup, name: "Nightly backup", check: { type: "heartbeat", periodSeconds: 86_400 } },
      { id: ids.api, name: "Partner API", check: { ...check, notifyThreshold: 0 } },
    ],
  });
  await down;
  const hourMs = 3_600_000;
  const then = Math.floor(Date.now() / hourMs) * hourMs - 3 * hourMs;
  const yes = engine === "sqlite" ? 1 : "true";
  for (const [server, service] of [[ids.shop, ids.checkout], [ids.ops, ids.backup]] as const) {
    const key = (await rawQuery(d.store, `SELECT key FROM services WHERE id = '${service}'`))[0]!.key;
    await rawQuery(d.store, `INSERT INTO incidents (service_key, server_id, service_id, started_at, opened_at, closed_at, failures, notified) VALUES (${key}, '${server}', '${service}', ${then}, ${then + 60_000}, ${then + 90_000}, 4, ${yes})`);
  }
  return d;
}

async function put(d: TestDaemon, path: string, body: unknown, headers = admin) {
  const answer = await d.api("PUT", path, body, headers);
  assert.ok(answer.status === 200 || answer.status === 201, `${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer;
}

/** GET `path` with a Host header of our choosing (fetch sends the URL's own). */
function getAs(d: TestDaemon, host: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; location?: string; text: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, d.url);
    const req = request({ host: url.hostname, port: url.port, path, headers: { ...headers, host } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, ...(res.headers.location ? { location: res.headers.location } : {}), text }));
    });
    req.on("error", reject).end();
  });
}

/** What a reader reads: the page without its tags, style and script, entities decoded. */
function textOf(page: string): string {
  return page
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&(amp|lt|gt|quot|#39|middot|mdash);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", middot: "·", mdash: "—" })[e] ?? e)
    .replace(/\s+/g, " ");
}

const storefront = {
  title: "Acme status",
  description: "Live status of the **Acme** shop.",
  sections: [
    { title: "Shopping", services: [`${ids.shop}/${ids.checkout}`, `${ids.shop}/${ids.search}`] },
    { title: "Partners", services: [`${ids.ops}/${ids.api}`] },
  ],
  public: true,
  accentColor: "#0B5FFF",
  footerLinks: [{ label: "Help centre", url: "https://help.acme.test/" }],
};

for (const engine of engines) {
  test(`${engine}: a page of sections is saved with its look, read back, and every bad field is named`, async (t) => {
    const d = await shop(t, engine);
    const made = await d.api("PUT", "/status-pages/acme", { ...storefront, hostnames: ["Status.Acme.test"] }, admin);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const read = (await d.api("GET", "/status-pages/acme", undefined, admin)).body;
    assert.deepEqual(
      { ...read, createdAt: undefined, updatedAt: undefined },
      {
        slug: "acme",
        title: "Acme status",
        description: "Live status of the **Acme** shop.",
        servers: [ids.shop, ids.ops],
        sections: storefront.sections,
        public: true,
        accentColor: "#0b5fff",
        footerLinks: storefront.footerLinks,
        hostnames: ["status.acme.test"],
        showUptime: true,
        showLatency: true,
        showHistory: true,
        timeZone: "UTC",
        logo: null,
        url: "/status/p/acme",
        createdAt: undefined,
        updatedAt: undefined,
      },
    );

    const bad = await d.api(
      "PUT",
      "/status-pages/acme",
      { title: "x", sections: [{ title: "", services: ["no-slash", `${ids.shop}/*/x`] }], accentColor: "blue", footerLinks: [{ label: "x", url: "javascript:alert(1)" }], hostnames: ["https://x.test/"], showUptime: "no", timeZone: "Mars/Olympus" },
      admin,
    );
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ["/accentColor", "/footerLinks/0/url", "/hostnames/0", "/sections/0/services/0", "/sections/0/services/1", "/sections/0/title", "/showUptime", "/timeZone"]);
    assert.match(JSON.stringify(bad.body.errors), /must be an IANA time zone name such as Europe\/Paris/);
    assert.match(JSON.stringify(bad.body.errors), /must be a colour as #rrggbb/);
    assert.match(JSON.stringify(bad.body.errors), /must be an http:\/\/ or https:\/\/ URL/);
    const both = await d.api("PUT", "/status-pages/acme", { title: "x", servers: [ids.shop], sections: storefront.sections }, admin);
    assert.deepEqual(both.body.errors, [{ path: "/sections", message: 'give either sections ([{"title": "Shop", "services": ["web-01/*"]}]) or servers (["web-01"]), not both' }]);
    assert.equal((await d.api("PUT", "/status-pages/acme", { title: "x" }, admin)).body.errors[0].path, "/sections");

    const unknown = await d.api("PUT", "/status-pages/acme", { title: "x", sections: [{ title: "S", services: [`${ids.shop}/${ids.checkout}`, `${ids.shop}/nope`, "ghost/*", "ghost/svc"] }] }, admin);
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.errors, [
      { path: "/sections/0/services/1", message: `names service ${ids.shop}/nope, which does not exist; add it to its server first (PUT /services/${ids.shop}) or leave it out` },
      { path: "/sections/0/services/2", message: "names server ghost, which does not exist; create it first (PUT /services/ghost) or leave it out" },
      { path: "/sections/0/services/3", message: "names server ghost, which does not exist; create it first (PUT /services/ghost) or leave it out" },
    ]);
    const taken = await d.api("PUT", "/status-pages/other", { title: "Other", servers: [ids.ops], hostnames: ["status.acme.test"] }, admin);
    assert.equal(taken.status, 409);
    assert.match(taken.body.detail, /hostname status\.acme\.test shows page "acme" already; remove it there first/);
    assert.equal((await d.api("GET", "/status-pages/acme", undefined, admin)).body.title, "Acme status", "nothing was written by the refused ones");
  });

  test(`${engine}: a token limited to some servers may not write a page, whether it names its services or others', known or not`, async (t) => {
    const d = await shop(t, engine);
    const made = await d.api("POST", "/tokens", { name: "shop-admin", scope: "admin", servers: [ids.shop] }, admin);
    const limited = as(made.body.token);
    const answers = [];
    for (const ref of [`${ids.shop}/${ids.checkout}`, `${ids.ops}/${ids.api}`, "ghost/*"]) {
      const answer = await d.api("PUT", "/status-pages/mine", { title: "Mine", sections: [{ title: "S", services: [ref] }] }, limited);
      assert.equal(answer.status, 403, ref);
      answers.push(answer.body);
    }
    assert.equal(new Set(answers.map((a) => JSON.stringify(a))).size, 1, "the same answer for its own, another's and a missing server");
    assert.equal((await d.api("GET", "/status-pages/mine", undefined, admin)).status, 404);
    await put(d, "/status-pages/acme", storefront);
    assert.deepEqual((await d.api("GET", "/status-pages", undefined, limited)).body.pages, [], "a page of its servers and another's is not shown to it");
  });

  test(`${engine}: a page of sections shows only the services it names, by display name, with no id anywhere in its text`, async (t) => {
    const d = await shop(t, engine);
    await put(d, "/status-pages/acme", storefront);
    const answer = await fetch(`${d.url}/status/p/acme`);
    assert.equal(answer.status, 200);
    const page = await answer.text();
    const text = textOf(page);
    assert.deepEqual([...page.matchAll(/<h2 id="section-\d+">([^<]*)</g)].map((m) => m[1]!.trim()), ["Shopping", "Partners"]);
    for (const shown of ["Acme status", "Checkout", "Search", "Partner API", "Help centre", "Acme"]) assert.ok(text.includes(shown), shown);
    assert.doesNotMatch(text, /Nightly backup/, "a service no section names is not shown, nor its past incidents");
    assert.match(text, /Checkout Not pinged yet Uptime not measured yet Search/, "a heartbeat not pinged yet: said once, no \"no data\" twice, no bare dash");
    assert.match(text, /Past incidents Checkout was down for 1m 30s/);
    assert.match(text, /Open incidents Partner API down for/);
    for (const id of Object.values(ids)) assert.ok(!text.includes(id), `${id} in the page's text: ${text.slice(Math.max(0, text.indexOf(id) - 80), text.indexOf(id) + 80)}`);
    // Times in the reader's words, dates in the page's zone (UTC by default), the exact time in <time>; no raw timestamp.
    assert.doesNotMatch(text, /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/, "no raw timestamp in the page's text");
    assert.match(text, /Checkout was down for 1m 30s, from \d+ \w{3} \d{4}, \d{2}:\d{2} UTC to \d+ \w{3} \d{4}, \d{2}:\d{2} UTC \(\s*[23] hours ago\s*\)/);
    assert.match(page, /<time datetime="\d{4}-\d{2}-\d{2}T[\d:.]+Z" title="\d+ \w{3} \d{4}, \d{2}:\d{2} UTC">[23] hours ago<\/time>/);
    assert.match(text, /Updated just now/);
    // A service younger than the windows: its uptime is over its life, and says so, once.
    assert.match(text, /Partner API Down Uptime, 1 min so far 0\.00 % Latency/);
    assert.doesNotMatch(text.slice(text.indexOf("Shopping"), text.indexOf("Partners")), /Latency|Last run/, "heartbeats have no latency");
    // A heartbeat's own page has no latency either; a check's has its chart. Each follows the reader's light or dark.
    const beat = await (await fetch(`${d.url}/status/p/acme/${ids.shop}/${ids.checkout}`)).text();
    assert.doesNotMatch(textOf(beat), /Latency/);
    const check = await (await fetch(`${d.url}/status/p/acme/${ids.ops}/${ids.api}`)).text();
    assert.match(textOf(check), /Latency, since it was created, 1 min ago/, "a service younger than the span is charted over its life");
    assert.equal([...check.matchAll(/<circle class="p(50|95)"/g)].length, 2, "its only hour so far is marked, not a lone dot of a line");
    for (const each of [page, beat]) assert.match(each, /<meta name="color-scheme" content="light dark">[\s\S]*@media \(prefers-color-scheme: dark\)/);
    // The accent colour is a style the page's policy allows by its hash; nothing else is added.
    const style = ":root { --accent: #0b5fff; }";
    assert.ok(page.includes(`<style>${style}</style>`));
    const policy = answer.headers.get("content-security-policy")!;
    assert.ok(policy.includes(`'sha256-${createHash("sha256").update(style).digest("base64")}'`), policy);
    assert.match(page, /<a href="https:\/\/help\.acme\.test\/" rel="nofollow noopener noreferrer">Help centre<\/a>/);

    // What the cards show follows the page's toggles.
    await put(d, "/status-pages/acme", { ...storefront, showUptime: false, showHistory: false, showLatency: false, timeZone: "Asia/Kolkata" });
    const bare = await (await fetch(`${d.url}/status/p/acme`)).text();
    assert.match(textOf(bare), /from \d+ \w{3} \d{4}, \d{2}:\d{2} GMT\+5:30 to/, "dates in the page's time zone");
    assert.doesNotMatch(textOf(bare), /Uptime 24 h|Uptime 30 d/);
    assert.doesNotMatch(bare, /class="bar"/);

    // The daemon's own page names each incident's service with its server's name, not its id.
    const full = textOf(await (await fetch(`${d.url}/status`, { headers: admin })).text());
    assert.match(full, /Past incidents .*Nightly backup \(Operations\) was down for 1m 30s/);
    for (const id of Object.values(ids)) assert.ok(!full.includes(id), `${id} in /status's text`);
  });

  test(`${engine}: the page main is /status while it exists; a page's hostnames show it at /`, async (t) => {
    const d = await shop(t, engine);
    assert.match(await (await fetch(`${d.url}/status`, { headers: admin })).text(), /<h1>Status<\/h1>/);
    assert.equal((await fetch(`${d.url}/status`)).status, 401, "the daemon's page needs a token");
    const made = await put(d, "/status-pages/main", { ...storefront, title: "Everything at Acme" });
    assert.equal(made.body.url, "/status");
    const main = await fetch(`${d.url}/status`);
    assert.equal(main.status, 200, "a public page main answers anyone");
    const text = textOf(await main.text());
    assert.match(text, /Everything at Acme/);
    assert.doesNotMatch(text, /Nightly backup/);
    await put(d, "/status-pages/main", { ...storefront, title: "Private main", public: false });
    assert.equal((await fetch(`${d.url}/status`)).status, 401, "a private one needs a token as the daemon's page does");
    assert.match(await (await fetch(`${d.url}/status`, { headers: admin })).text(), /<h1>Private main<\/h1>/);
    assert.equal((await d.api("DELETE", "/status-pages/main", undefined, admin)).status, 204);
    assert.match(await (await fetch(`${d.url}/status`, { headers: admin })).text(), /<h1>Status<\/h1>/, "every server again");

    await put(d, "/status-pages/acme", { ...storefront, hostnames: ["status.acme.test"] });
    const port = new URL(d.url).port;
    const hosted = await getAs(d, `STATUS.acme.test:${port}`, "/");
    assert.equal(hosted.status, 200);
    assert.match(hosted.text, /<h1>Acme status<\/h1>/);
    const elsewhere = await getAs(d, `other.acme.test:${port}`, "/", admin);
    assert.equal(elsewhere.status, 302);
    assert.equal(elsewhere.location, "/status");
    assert.equal((await fetch(`${d.url}/`, { redirect: "manual" })).status, 401, "another host still needs the token it needed");
  });

  test(`${engine}: --public-status opens the daemon's own page, not a page made private, at /status or at its hostname`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken, publicStatus: true });
    await put(d, `/services/${ids.shop}`, { name: "Web shop", services: [{ id: ids.checkout, name: "Checkout", check: { type: "heartbeat", periodSeconds: 3600 } }] });
    assert.equal((await fetch(`${d.url}/status`)).status, 200, "the daemon's page is public");
    const page = { title: "Private main", public: false, hostnames: ["inside.acme.test"], sections: [{ title: "Shop", services: [`${ids.shop}/*`] }] };
    await put(d, "/status-pages/main", page);
    assert.equal((await fetch(`${d.url}/status`)).status, 401, "a private page main needs a token, public daemon or not");
    assert.equal((await getAs(d, `inside.acme.test:${new URL(d.url).port}`, "/")).status, 401, "and so at its hostname");
    assert.match(await (await fetch(`${d.url}/status`, { headers: admin })).text(), /<h1>Private main<\/h1>/);
  });
}
