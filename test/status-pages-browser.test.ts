/// <reference lib="dom" />
/**
 * A branded page of sections in a real browser (Chromium), reached under its own host name: light and dark by
 * the reader's preference, its logo loaded from its own origin (and nothing from any other), its accent colour
 * allowed by the page's policy (a refused style is a console error), a heartbeat's card without latency, no id
 * in what the reader sees, and axe-core with no serious violation.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { launchBrowser } from "./support/browser.ts";
import { testDaemon } from "./support/daemon.ts";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const host = "status.acme.test";

test("in Chromium: a branded page of sections at its own host, light and dark, passes axe with no id in its text, its times in words", async (t) => {
  const d = await testDaemon(t);
  const beat = { type: "heartbeat", periodSeconds: 3600 };
  await d.api("PUT", "/services/srv-a1b2", { name: "Web shop", services: [{ id: "svc-checkout-x9", name: "Checkout", check: beat }, { id: "svc-backup-z7", name: "Nightly backup", check: beat }] });
  const server = await d.api("GET", "/services/srv-a1b2");
  const key = server.body.services.find((s: { id: string }) => s.id === "svc-checkout-x9").check.pingKey;
  const pinged = await d.api("POST", `/ping/${key}`);
  assert.ok(pinged.status < 300, JSON.stringify(pinged.body));
  const put = await d.api("PUT", "/status-pages/acme", {
    title: "Acme status",
    description: "Live status of the **Acme** shop.",
    sections: [{ title: "Shopping", services: ["srv-a1b2/svc-checkout-x9"] }],
    public: true,
    accentColor: "#0b5fff",
    footerLinks: [{ label: "Help centre", url: "https://help.acme.test/" }],
    hostnames: [host],
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const logo = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 20" width="80" height="40"><rect width="40" height="20" fill="#0b5fff"/></svg>`;
  const uploaded = await fetch(`${d.url}/status-pages/acme/logo`, { method: "PUT", body: logo, headers: { "content-type": "image/svg+xml" } });
  assert.equal(uploaded.status, 200);
  const browser = await launchBrowser(t, [`--host-resolver-rules=MAP ${host} 127.0.0.1`]);
  const url = `http://${host}:${new URL(d.url).port}/`;
  const backgrounds = new Set<string>();
  for (const colorScheme of ["light", "dark"] as const) {
    const context = await browser.newContext({ colorScheme, viewport: { width: 375, height: 740 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));
    const origins = new Set<string>();
    page.on("request", (r) => origins.add(new URL(r.url()).origin));
    const answer = await page.goto(url);
    assert.equal(answer!.status(), 200, colorScheme);
    assert.equal(await page.locator("h1").innerText(), "Acme status");
    assert.equal(await page.locator(".description strong").innerText(), "Acme");
    assert.deepEqual((await page.locator("section.server h2").allInnerTexts()).map((h) => h.replace(/\s+/g, " ")), ["Shopping Up"]);
    const card = page.locator("li.service", { hasText: "Checkout" });
    assert.match(await card.innerText(), /Up/);
    assert.doesNotMatch(await card.innerText(), /Latency/, "a heartbeat has no latency");
    assert.match(await card.innerText(), /Uptime, 1 min so far\s+100 %/, "a service minutes old: its uptime over its life, said so");
    // Moments in the reader's words, the exact time on hover (title) and for machines (datetime).
    const checked = card.locator(".checked time");
    assert.equal(await checked.innerText(), "just now");
    assert.match((await checked.getAttribute("title"))!, /^\d+ \w{3} \d{4}, \d{2}:\d{2} UTC$/);
    assert.ok(Date.parse((await checked.getAttribute("datetime"))!) > 0);
    const text = await page.locator("body").innerText();
    assert.doesNotMatch(text, /Nightly backup/);
    for (const id of ["srv-a1b2", "svc-checkout-x9", "svc-backup-z7"]) assert.ok(!text.includes(id), `${colorScheme}: ${id} in the page's text`);
    assert.equal(await page.locator("header").evaluate((h) => getComputedStyle(h).borderBottomColor), "rgb(11, 95, 255)", "the accent colour's style is applied");
    assert.equal(await page.locator("footer a", { hasText: "Help centre" }).getAttribute("href"), "https://help.acme.test/");
    assert.equal(await page.locator("header img.logo").evaluate((img) => (img as HTMLImageElement).naturalWidth), 80, "the logo loads");
    assert.deepEqual([...origins], [new URL(url).origin], "nothing is asked of another origin");
    backgrounds.add(await page.evaluate(() => getComputedStyle(document.body).backgroundColor));
    await page.evaluate(axeSource);
    const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe.run());
    const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    assert.deepEqual(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], colorScheme);
    assert.deepEqual(problems, [], colorScheme);
    await context.close();
  }
  assert.deepEqual([...backgrounds], ["rgb(255, 255, 255)", "rgb(13, 17, 23)"], "light, then dark");
});
