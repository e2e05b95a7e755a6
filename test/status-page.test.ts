/// <reference lib="dom" />
/** The status page in a real browser (Chromium): complete without JavaScript, refreshed in place with it. */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { launchBrowser } from "./support/browser.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { switchableTarget } from "./support/targets.ts";

const axeSource = (await import("node:fs")).readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const screenshots = fileURLToPath(new URL("../test-output/", import.meta.url));

async function daemonWithServices(t: Parameters<typeof testDaemon>[0]) {
  const good = await switchableTarget(t);
  good.setUp(true);
  const flaky = await switchableTarget(t);
  flaky.setUp(true);
  const d = await testDaemon(t);
  const first = Promise.all(["home", "api", "db"].map((id) => nextEvent(d.events, "check:done", (r: { service: { serviceId: string } }) => r.service.serviceId === id)));
  await d.api("PUT", "/services/web-01", {
    name: "Web 01",
    services: [
      { id: "home", name: "Homepage", check: { url: good.url, intervalSeconds: 60 } },
      { id: "api", name: "Public API", check: { url: flaky.url, intervalSeconds: 1, notifyThreshold: 0 } },
    ],
  });
  await d.api("PUT", "/services/db-01", { services: [{ id: "db", name: "Database", check: { url: good.url, intervalSeconds: 60 } }] });
  await first;
  return { d, good, flaky };
}

test("in Chromium, with and without JavaScript: every service and its status, no console error, no serious accessibility violation", async (t) => {
  const { d } = await daemonWithServices(t);
  const browser = await launchBrowser(t);
  for (const javaScriptEnabled of [true, false]) {
    const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));
    const answer = await page.goto(d.url + "/status");
    assert.equal(answer!.status(), 200);
    assert.equal(await page.locator(".overall").innerText(), "All 3 services up");
    for (const name of ["Homepage", "Public API", "Database"]) {
      const card = page.locator(".service", { has: page.locator("h3", { hasText: name }) });
      assert.equal(await card.locator(".badge").innerText(), "Up", name);
      assert.equal(await card.locator(".bar li").count(), 90, name);
    }
    const headings = (await page.locator("h2").allTextContents()).map((h) => h.replace(/\s+/g, " ").trim());
    assert.deepEqual(headings, ["db-01 Up", "Web 01 Up", "Past incidents"], "servers by id");
    if (javaScriptEnabled) {
      await page.evaluate(axeSource);
      const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string }[] }> } }).axe.run());
      const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
      assert.deepEqual(serious.map((v) => `${v.id}: ${v.help}`), []);
      mkdirSync(screenshots, { recursive: true });
      await page.screenshot({ path: join(screenshots, "status-wide.png"), fullPage: true });
      t.diagnostic(`screenshot: ${join(screenshots, "status-wide.png")}`);
    }
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test("in Chromium: a status changes in place after the target fails, without a reload", async (t) => {
  const { d, flaky } = await daemonWithServices(t);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.clock.install();
  await page.goto(d.url + "/status");
  await page.evaluate(() => ((window as unknown as { marker: string }).marker = "not reloaded"));
  const card = page.locator(".service", { has: page.locator("h3", { hasText: "Public API" }) });
  assert.equal(await card.locator(".badge").innerText(), "Up");
  flaky.setUp(false);
  await nextEvent(d.events, "check:done", (r: { service: { serviceId: string }; entry: { ok: boolean } }) => r.service.serviceId === "api" && !r.entry.ok);
  // The page's own clock: thirty seconds pass for it at once, and its refresh runs.
  await page.clock.runFor(30_000);
  await card.locator(".badge", { hasText: "Down" }).waitFor();
  assert.equal(await page.locator(".overall").innerText(), "1 of 3 down");
  assert.match(await page.locator(".incidents").innerText(), /Public API \(Web 01\) down for \d+s/, "its name and its server's, not their ids");
  assert.equal(await page.evaluate(() => (window as unknown as { marker: string }).marker), "not reloaded");
  assert.match(await page.title(), /1 of 3 down/);
});

test("in Chromium: a 375 px phone shows it all without sideways scrolling; the history bar answers to keys", async (t) => {
  const { d } = await daemonWithServices(t);
  const browser = await launchBrowser(t);
  for (const colorScheme of ["light", "dark"] as const) {
    const page = await browser.newPage({ viewport: { width: 375, height: 740 }, colorScheme });
    await page.goto(d.url + "/status");
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${colorScheme}: ${overflow} px of sideways scrolling`);
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: join(screenshots, `status-phone-${colorScheme}.png`), fullPage: true });
    if (colorScheme === "dark") {
      // Tab reaches today's cell of the first bar; the arrow keys move along it, and the focused day says itself.
      const today = page.locator(".bar").first().locator("li").last();
      await today.focus();
      await page.keyboard.press("ArrowLeft");
      const focused = await page.evaluate(() => document.activeElement?.getAttribute("aria-label"));
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      assert.equal(focused, `${yesterday}: no data`);
      assert.equal(await page.evaluate(() => getComputedStyle(document.activeElement!, "::after").content), `"${yesterday}: no data"`);
    }
    await page.close();
  }
});

test("in Chromium: blocked and paused services say so in words and pass the accessibility check, light and dark", async (t) => {
  const down = await switchableTarget(t);
  const d = await testDaemon(t);
  const blocked = nextEvent(d.events, "check:done", (r: { service: { serviceId: string }; blockedBy: readonly string[] }) => r.service.serviceId === "app" && r.blockedBy.length > 0);
  await d.api("PUT", "/services/web-01", {
    services: [
      { id: "db", name: "Database", check: { url: down.url, intervalSeconds: 1, notifyThreshold: 0 } },
      { id: "app", name: "App", check: { url: down.url, intervalSeconds: 1, notifyThreshold: 3, dependsOn: ["db"] } },
      { id: "old", name: "Old site", check: { url: down.url, intervalSeconds: 1, paused: true } },
    ],
  });
  await blocked;
  const browser = await launchBrowser(t);
  for (const colorScheme of ["light", "dark"] as const) {
    const page = await browser.newPage({ colorScheme });
    await page.goto(d.url + "/status");
    assert.equal(await page.locator(".overall").innerText(), "1 of 3 down, 1 blocked, 1 paused");
    const badges = await page.locator(".service .badge").allInnerTexts();
    assert.deepEqual(badges, ["Down", "Blocked", "Paused"], "most in need of attention first");
    assert.equal(await page.locator(".service.blocked .waiting").innerText(), "Waiting on Database, which is down", "by its name, not its id");
    await page.evaluate(axeSource);
    const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string }[] }> } }).axe.run());
    const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    assert.deepEqual(serious.map((v) => `${colorScheme} ${v.id}: ${v.help}`), []);
    await page.close();
  }
});
