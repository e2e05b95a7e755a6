/// <reference lib="dom" />
/**
 * What people are told, in a real browser (Chromium): a page with announcements, scheduled maintenance and
 * past incidents, a service's page with its chart, a named page; with and without JavaScript, on a phone and
 * a wide screen, light and dark, each passing axe-core with no serious violation.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import type { Browser } from "playwright-core";
import { launchBrowser } from "./support/browser.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { rawQuery } from "./support/raw.ts";
import { switchableTarget } from "./support/targets.ts";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const hostile = [
  "We are **on it**; see [the runbook](https://runbooks.example/checkout).",
  "",
  "<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\"> <a href=\"javascript:window.pwned=3\">html link</a>",
  "",
  "- [markdown link](javascript:window.pwned=4)",
  "- <javascript:window.pwned=5>",
  "- ![image](https://images.example/a.png)",
].join("\n");

async function told(t: Parameters<typeof testDaemon>[0]): Promise<TestDaemon> {
  const target = await switchableTarget(t);
  target.setUp(true);
  const d = await testDaemon(t);
  const checked = nextEvent(d.events, "check:done", (r: { service: { serviceId: string } }) => r.service.serviceId === "checkout");
  await d.api("PUT", "/services/web-01", {
    name: "Web shop",
    services: [
      { id: "checkout", name: "Checkout", check: { url: target.url, intervalSeconds: 60 } },
      { id: "search", name: "Search", check: { url: target.url, intervalSeconds: 60 } },
    ],
    maintenance: [{ cron: "0 3 * * *", durationMinutes: 30, reason: "nightly backups" }],
  });
  await d.api("PUT", "/services/api-01", { name: "Public API", services: [{ id: "v2", name: "API v2", check: { url: target.url, intervalSeconds: 60 } }] });
  await checked;
  const key = (await rawQuery(d.store, "SELECT key FROM services WHERE id = 'checkout'"))[0]!.key;
  const hourMs = 3_600_000;
  const now = Math.floor(Date.now() / hourMs) * hourMs;
  const rows = Array.from({ length: 90 * 24 }, (_, i) => `(${key}, ${now - (i + 1) * hourMs}, 60, ${i % 97 === 0 ? 2 : 0}, 600, '{"${60 + (i % 7)}":50,"${90 + (i % 5)}":10}')`);
  await rawQuery(d.store, `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch) VALUES ${rows.join(", ")}`);
  const outage = await d.api("POST", "/announcements", { title: "Checkout is slow", message: hostile, severity: "degraded", servers: ["web-01"] });
  await d.api("POST", `/announcements/${outage.body.id}/updates`, { message: "Found it: a slow query. *Fix rolling out.*" });
  await d.api("POST", "/announcements", { title: "A very long one", message: `${"word ".repeat(1999)}end`, severity: "info", servers: ["api-01"] });
  const past = await d.api("POST", "/announcements", { title: "Payments were down", message: "All fine again.", severity: "outage", startsAt: new Date(Date.now() - 86_400_000).toISOString() });
  await d.api("PATCH", `/announcements/${past.body.id}`, { ended: true });
  await d.api("POST", "/announcements", { title: "Database upgrade", message: "Read-only for ten minutes.", severity: "maintenance", startsAt: new Date(Date.now() + 86_400_000).toISOString() });
  await d.api("PUT", "/status-pages/shop", { title: "Shop status", description: "The **shop**, and only the shop.", servers: ["web-01"], public: true });
  return d;
}

/** Open `path` in every way a reader may, and check what each sees. */
async function everyWay(browser: Browser, d: TestDaemon, path: string, expect: (page: import("playwright-core").Page, way: string) => Promise<void>): Promise<void> {
  for (const javaScriptEnabled of [true, false]) {
    for (const [width, height] of [[375, 740], [1280, 900]] as const) {
      for (const colorScheme of ["light", "dark"] as const) {
        const way = `${path} js=${javaScriptEnabled} ${width}px ${colorScheme}`;
        const context = await browser.newContext({ javaScriptEnabled, viewport: { width, height }, colorScheme });
        const page = await context.newPage();
        const problems: string[] = [];
        page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
        page.on("pageerror", (e) => problems.push(e.message));
        page.on("dialog", (dialog) => problems.push(`a dialog: ${dialog.message()}`));
        const answer = await page.goto(d.url + path);
        assert.equal(answer!.status(), 200, way);
        await expect(page, way);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `${way}: ${overflow} px of sideways scrolling`);
        if (javaScriptEnabled) {
          assert.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, `${way}: a message ran script`);
          await page.evaluate(axeSource);
          const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe.run());
          const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
          assert.deepEqual(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], way);
        }
        assert.deepEqual(problems, [], way);
        await context.close();
      }
    }
  }
}

test("in Chromium: announcements lead the page, Markdown stays text where it tries HTML or javascript:, scheduled and past ones are listed", async (t) => {
  const d = await told(t);
  const browser = await launchBrowser(t);
  await everyWay(browser, d, "/status", async (page, way) => {
    const titles = await page.locator(".announcements").first().locator("h3").allInnerTexts();
    assert.deepEqual(titles.map((x) => x.replace(/\s+/g, " ")), ["Information A very long one", "Degraded Checkout is slow"], way);
    const slow = page.locator("article", { hasText: "Checkout is slow" }).first();
    assert.equal(await slow.locator(".md strong").first().innerText(), "on it", way);
    assert.match(await slow.locator(".md").first().innerText(), /<script>window\.pwned = 1<\/script> <img src=x/, `${way}: HTML shown as text`);
    const hrefs = await page.locator("main a").evaluateAll((links) => links.map((a) => a.getAttribute("href") ?? ""));
    assert.ok(hrefs.includes("https://runbooks.example/checkout"), way);
    assert.ok(!hrefs.some((h) => /^\s*javascript:/i.test(h)), `${way}: ${hrefs.join(" ")}`);
    assert.equal(await page.locator("main img, main script").count(), 0, way);
    assert.equal(await slow.locator(".updates li").count(), 1, way);
    assert.match(await page.locator(".scheduled").innerText(), /Database upgrade[\s\S]*Web shop: .*03:00 UTC to .*03:30 UTC: nightly backups/, way);
    assert.match(await page.locator(".past").innerText(), /Payments were down[\s\S]*ended/, way);
    const long = await page.locator("article", { hasText: "A very long one" }).first().boundingBox();
    assert.ok(long && long.width <= page.viewportSize()!.width, way);
  });
  // A server's page leads with its own announcements and those for all, not another server's.
  const server = await (await fetch(`${d.url}/status/web-01`)).text();
  assert.match(server, /Checkout is slow/);
  assert.doesNotMatch(server, /A very long one/);
});

test("in Chromium: a service's page draws its latency as SVG with a table beside it, readable without JavaScript", async (t) => {
  const d = await told(t);
  const browser = await launchBrowser(t);
  for (const range of ["24h", "90d"]) {
    await everyWay(browser, d, `/status/web-01/checkout?range=${range}`, async (page, way) => {
      assert.equal(await page.locator("h1").innerText(), "Checkout", way);
      const chart = page.locator(".chart svg");
      const box = await chart.boundingBox();
      assert.ok(box && box.width > 200 && box.height > 60, `${way}: ${JSON.stringify(box)}`);
      for (const line of ["p50", "p95"]) {
        const length = await page.locator(`.chart path.${line}`).evaluate((p) => (p as SVGPathElement).getTotalLength());
        assert.ok(length > 100, `${way}: ${line} is ${length} long`);
      }
      assert.equal(await page.locator("svg title").textContent(), range === "24h" ? "Latency, last 24 hours" : "Latency, last 90 days", way);
      assert.equal(await page.locator("details tbody tr").count(), range === "24h" ? 24 : 90, way);
      assert.equal(await page.locator(".ranges [aria-current=page]").innerText(), range === "24h" ? "last 24 hours" : "last 90 days", way);
      assert.equal(await page.locator(".bar li").count(), 90, way);
      assert.match(await page.locator(".announcements").innerText(), /Checkout is slow/, way);
    });
  }
  const page = await browser.newPage();
  await page.goto(`${d.url}/status`);
  await page.locator("a", { hasText: "Checkout" }).click();
  assert.equal(new URL(page.url()).pathname, "/status/web-01/checkout", "the status page links each service to its page");
  await page.locator("summary").click();
  assert.ok(await page.locator("details table").isVisible());
});

test("in Chromium: a named public page shows its servers, its description and its services' pages", async (t) => {
  const d = await told(t);
  const browser = await launchBrowser(t);
  await everyWay(browser, d, "/status/p/shop", async (page, way) => {
    assert.equal(await page.locator("h1").innerText(), "Shop status", way);
    assert.equal(await page.locator(".description strong").innerText(), "shop", way);
    assert.deepEqual(await page.locator("section.server h2").allInnerTexts().then((h) => h.map((x) => x.replace(/\s+/g, " "))), ["Web shop Up"], way);
    assert.equal(await page.locator("text=API v2").count(), 0, way);
  });
  const page = await browser.newPage();
  await page.goto(`${d.url}/status/p/shop`);
  await page.locator("a", { hasText: "Search" }).click();
  assert.equal(new URL(page.url()).pathname, "/status/p/shop/web-01/search");
  assert.equal(await page.locator(".crumbs a").innerText(), "Shop status");
});
