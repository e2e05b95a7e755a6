/**
 * What a named page has beside itself: its logo (PUT /status-pages/{slug}/logo: PNG, SVG or WebP by its
 * bytes, up to 256 KiB, served from the page's origin with a policy that lets nothing in it run), its Atom
 * feed and its badge, each answered as the page is. Over real HTTP, on both engines.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { rawQuery } from "./support/raw.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };

const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("IHDR and the rest of a small image")]);
const webp = Buffer.concat([Buffer.from("RIFF"), Buffer.from([0x20, 0, 0, 0]), Buffer.from("WEBPVP8 the rest")]);
const svg = Buffer.from(`<?xml version="1.0"?>\n<!-- Acme -->\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><script>alert(1)</script><circle r="4" cx="5" cy="5"/></svg>`);

async function acme(t: Parameters<typeof testDaemon>[0], engine: (typeof engines)[number]): Promise<TestDaemon> {
  const d = await testDaemon(t, { engine, token: adminToken });
  const checked = nextEvent(d.events, "check:done", (r: { service: { serviceId: string } }) => r.service.serviceId === "svc-api-w6");
  await d.api("PUT", "/services/srv-a1b2", { name: "Web shop", services: [{ id: "svc-checkout-x9", name: "Checkout", check: { type: "heartbeat", periodSeconds: 3600 } }] }, admin);
  await d.api("PUT", "/services/srv-c3d4", {
    name: "Operations",
    services: [
      { id: "svc-backup-z7", name: "Nightly backup", check: { type: "heartbeat", periodSeconds: 86_400 } },
      { id: "svc-api-w6", name: "Partner API", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86_400, notifyThreshold: 0 } },
    ],
  }, admin);
  await checked;
  const hourMs = 3_600_000;
  const then = Math.floor(Date.now() / hourMs) * hourMs - 3 * hourMs;
  for (const [server, service] of [["srv-a1b2", "svc-checkout-x9"], ["srv-c3d4", "svc-backup-z7"]] as const) {
    const key = (await rawQuery(d.store, `SELECT key FROM services WHERE id = '${service}'`))[0]!.key;
    await rawQuery(d.store, `INSERT INTO incidents (service_key, server_id, service_id, started_at, opened_at, closed_at, failures, notified) VALUES (${key}, '${server}', '${service}', ${then}, ${then + 60_000}, ${then + 90_000}, 4, ${engine === "sqlite" ? 1 : "true"})`);
  }
  const page = { title: "Acme status", sections: [{ title: "Shop", services: ["srv-a1b2/svc-checkout-x9", "srv-c3d4/svc-api-w6"] }], public: true };
  assert.equal((await d.api("PUT", "/status-pages/acme", page, admin)).status, 201);
  assert.equal((await d.api("PUT", "/status-pages/inside", { ...page, title: "Inside", public: false }, admin)).status, 201);
  return d;
}

const putLogo = (d: TestDaemon, slug: string, bytes: Buffer, type: string, headers = admin) =>
  fetch(`${d.url}/status-pages/${slug}/logo`, { method: "PUT", body: new Uint8Array(bytes), headers: { ...headers, "content-type": type } });

for (const engine of engines) {
  test(`${engine}: a logo is what its bytes say, served from the page's origin; an SVG's script cannot run; others refused`, async (t) => {
    const d = await acme(t, engine);
    assert.equal((await putLogo(d, "acme", Buffer.from("GIF89a..."), "image/png")).status, 400, "a GIF is not taken, whatever it claims");
    const refused = await (await putLogo(d, "acme", Buffer.from("<html><svg></svg></html>"), "image/svg+xml")).json();
    assert.match(refused.detail, /the logo must be a PNG, SVG or WebP image/);
    // A run of comments before what is not an SVG is read once, not in every way it could split: this one
    // took the old pattern 2.6 s at 22 comments, doubling with each.
    assert.equal((await putLogo(d, "acme", Buffer.from("<!---->".repeat(500) + "x"), "image/svg+xml")).status, 400);
    assert.equal((await putLogo(d, "acme", Buffer.alloc(256 * 1024 + 1, 0x89), "image/png")).status, 413);
    assert.equal((await putLogo(d, "nothing", png, "image/png")).status, 404);
    const made = await d.api("POST", "/tokens", { name: "shop-admin", scope: "admin", servers: ["srv-a1b2"] }, admin);
    assert.equal((await putLogo(d, "acme", png, "image/png", { authorization: `Bearer ${made.body.token}` })).status, 403);

    for (const [bytes, claimed, type] of [[png, "image/svg+xml", "image/png"], [webp, "application/octet-stream", "image/webp"], [svg, "image/svg+xml", "image/svg+xml"]] as const) {
      const set = await putLogo(d, "acme", bytes, claimed);
      assert.equal(set.status, 200, type);
      const src = ((await set.json()) as { logo: string }).logo;
      assert.match(src, /^\/status\/p\/acme\/logo\?v=\d+$/);
      const page = await (await fetch(`${d.url}/status/p/acme`)).text();
      assert.ok(page.includes(`<img class="logo" src="${src}" alt="">`), "the page shows it from its own origin");
      const served = await fetch(d.url + src);
      assert.equal(served.status, 200);
      assert.equal(served.headers.get("content-type"), type);
      assert.ok(Buffer.from(await served.arrayBuffer()).equals(bytes), type);
      assert.match(served.headers.get("content-security-policy")!, /^default-src 'none';.*\bsandbox\b/);
      assert.equal(served.headers.get("x-content-type-options"), "nosniff");
    }
    assert.equal((await fetch(`${d.url}/status/p/inside/logo`)).status, 401, "a private page's logo needs a token as its page does");
    assert.equal((await d.api("DELETE", "/status-pages/acme/logo", undefined, admin)).status, 204);
    assert.equal((await fetch(`${d.url}/status/p/acme/logo`)).status, 404);
    assert.equal((await d.api("GET", "/status-pages/acme", undefined, admin)).body.logo, null);
    assert.doesNotMatch(await (await fetch(`${d.url}/status/p/acme`)).text(), /class="logo"/);
  });

  test(`${engine}: a page's feed tells its announcements and its services' incidents by name; its badge its worst status`, async (t) => {
    const d = await acme(t, engine);
    await d.api("POST", "/announcements", { title: "Checkout is slow", message: "Looking into it.", severity: "degraded", servers: ["srv-a1b2"] }, admin);
    const answer = await fetch(`${d.url}/status/p/acme/feed.atom`);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get("content-type")!, /^application\/atom\+xml/);
    const feed = await answer.text();
    const titles = [...feed.matchAll(/<entry>.*?<title>([^<]*)<\/title>/g)].map((m) => m[1]);
    assert.deepEqual(titles.sort(), ["Checkout is slow", "Checkout was down for 1m 30s", "Partner API is down"]);
    assert.doesNotMatch(feed, /Nightly backup/, "a service the page does not show");
    assert.equal((await fetch(`${d.url}/status/p/inside/feed.atom`)).status, 401);
    assert.equal((await fetch(`${d.url}/status/p/ghost/feed.atom`, { headers: admin })).status, 404);

    const badge = await fetch(`${d.url}/status/p/acme/badge.svg`);
    assert.equal(badge.status, 200);
    assert.match(badge.headers.get("content-type")!, /^image\/svg\+xml/);
    const text = await badge.text();
    assert.match(text, /Acme status/);
    assert.match(text, /down/);
    assert.equal((await fetch(`${d.url}/status/p/inside/badge.svg`)).status, 401);
  });
}
