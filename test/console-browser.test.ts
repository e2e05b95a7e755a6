/// <reference lib="dom" />
/**
 * The console in a real browser (Chromium): signed in with a read token it shows every service and no button;
 * signed in with a write token it runs a check now, and the overview open in another tab shows the failure that
 * run found without being reloaded (Server-Sent Events); it silences a heartbeat. Nothing is asked of another
 * origin, nothing is refused by the page's policy, and axe-core finds no serious violation.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { once } from "node:events";
import { test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { launchBrowser } from "./support/browser.ts";
import { testDaemon } from "./support/daemon.ts";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const admin = "browser-admin-token";
const auth = { authorization: `Bearer ${admin}` };

async function axe(page: Page, what: string): Promise<void> {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe.run());
  const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`), [], what);
}

/** A page that records what the browser refused or failed, and every origin it asked. */
async function watched(context: BrowserContext): Promise<{ page: Page; problems: string[]; origins: Set<string> }> {
  const page = await context.newPage();
  const problems: string[] = [];
  const origins = new Set<string>();
  page.on("console", (m) => m.type() === "error" && !/status of 40[13]/.test(m.text()) && problems.push(m.text()));
  page.on("pageerror", (e) => problems.push(e.message));
  page.on("request", (r) => origins.add(new URL(r.url()).origin));
  return { page, problems, origins };
}

async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel("Token").fill(token);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Console" }).waitFor();
}

test("in Chromium: the console for a read token and a write token, live, passing axe", async (t) => {
  let failing = false;
  const target = createServer((_req, res) => res.writeHead(failing ? 500 : 200).end(failing ? "broken" : "ok"));
  target.listen(0, "127.0.0.1");
  await once(target, "listening");
  t.after(() => target.close());
  const d = await testDaemon(t, { token: admin });
  const passed = once(d.events, "check:done");
  const put = await d.api("PUT", "/services/shop", {
    name: "Shop",
    services: [
      { id: "web", name: "Web front", check: { url: `http://127.0.0.1:${(target.address() as AddressInfo).port}/`, intervalSeconds: 3600, notifyThreshold: 0 } },
      { id: "backup", name: "Nightly backup", check: { type: "heartbeat", periodSeconds: 86_400 } },
    ],
  }, auth);
  assert.equal(put.status, 201, JSON.stringify(put.body));
  await passed; // the first check of a new service runs at once: web is up
  const token = async (name: string, scope: string) => (await d.api("POST", "/tokens", { name, scope }, auth)).body.token as string;
  const [readToken, writeToken] = [await token("reader", "read"), await token("writer", "write")];
  const browser = await launchBrowser(t);

  // A read token: sees every service and its page, and no button to act.
  const reader = await browser.newContext();
  const r = await watched(reader);
  await signIn(r.page, d.url, readToken);
  assert.deepEqual(await r.page.locator("#rows tbody tr").evaluateAll((rows) => rows.map((row) => row.id)), ["row-shop--backup", "row-shop--web"]);
  assert.match(await r.page.locator("nav.top").innerText(), /read only/);
  await axe(r.page, "overview");
  await r.page.getByRole("link", { name: "Web front" }).click();
  await r.page.waitForURL(/\/console\/services\/shop\/web$/);
  assert.equal(await r.page.locator("form.act").count(), 0, "no action for a read token");
  assert.equal(await r.page.getByRole("heading", { name: "Recent checks" }).count(), 1);
  await axe(r.page, "a service's page");
  assert.deepEqual(r.problems, []);
  assert.deepEqual([...r.origins], [d.url]);

  // A write token: the overview in one tab, a service's page in another.
  const writer = await browser.newContext();
  const overview = await watched(writer);
  await signIn(overview.page, d.url, writeToken);
  await overview.page.evaluate(() => ((window as unknown as { unreloaded: boolean }).unreloaded = true));
  assert.equal(await overview.page.locator("#row-shop--web").getAttribute("data-state"), "up");
  const service = await watched(writer);
  await service.page.goto(`${d.url}/console/services/shop/web`);
  failing = true;
  await service.page.getByRole("button", { name: "Run now" }).click();
  await service.page.waitForURL(/done=run$/);
  assert.match(await service.page.locator("p.notice").innerText(), /runs within a second/);
  // The overview, not reloaded, shows the failure the run found, first.
  await overview.page.locator('#row-shop--web[data-state="failing"]').waitFor();
  assert.equal(await overview.page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded), true, "the overview was not reloaded");
  assert.equal(await overview.page.locator("#rows tbody tr").first().getAttribute("id"), "row-shop--web");
  assert.match(await overview.page.locator("#counts").innerText(), /Failing: 1/);

  // Acknowledge the incident that failure opened, from the service's page, with a note.
  await service.page.goto(`${d.url}/console/services/shop/web`);
  await service.page.getByLabel("Note").fill("looking at the 500s");
  await service.page.getByRole("button", { name: "Acknowledge" }).click();
  await service.page.waitForURL(/done=acknowledged$/);
  assert.match(await service.page.locator(".incident-card").first().innerText(), /Acknowledged by writer \(signed in\): looking at the 500s\./);
  await axe(service.page, "a failing service's page, its incident acknowledged");

  // Silence the heartbeat from its page, by keyboard.
  await service.page.goto(`${d.url}/console/services/shop/backup`);
  await service.page.getByLabel("For").selectOption("240");
  await service.page.getByLabel("Why").fill("moving the backup disk");
  await service.page.getByLabel("Why").press("Enter");
  await service.page.waitForURL(/done=silenced$/);
  assert.match(await service.page.locator("h1 + p").innerText(), /^silenced/);
  assert.match(await service.page.locator("#ping-title + p").innerText(), /\/ping\//, "a write token sees the ping URL");
  await axe(service.page, "a heartbeat's page, for a write token");

  // Edit the server's YAML: a deliberate error, shown at its line; fixed, previewed, saved; the new heartbeat's crontab line.
  await service.page.getByRole("link", { name: "Edit server Shop" }).click();
  const area = service.page.getByLabel(/The server's document/);
  const yaml = await area.inputValue();
  const broken = yaml.replace("  services:\n", "  services:\n    - id: report\n      check:\n        type: heartbeat\n        periodSeconds: soon\n");
  await area.fill(broken);
  await service.page.getByRole("button", { name: "Preview changes" }).click();
  const problem = service.page.locator("#errors a[data-line]").first();
  const line = broken.split("\n").findIndex((l) => l.includes("periodSeconds: soon")) + 1;
  assert.match(await problem.innerText(), new RegExp(`^Line ${line}, column \\d+$`));
  assert.match(await service.page.locator("#errors li").first().innerText(), /\/shop\/services\/0\/check\/periodSeconds/);
  await problem.click();
  assert.equal(await area.evaluate((a) => { const t = a as HTMLTextAreaElement; return t.value.slice(t.selectionStart, t.selectionEnd); }), "        periodSeconds: soon", "the link selects the line");
  await axe(service.page, "the editor with its problems");
  await area.fill(broken.replace("periodSeconds: soon", "periodSeconds: 86400"));
  await service.page.getByRole("button", { name: "Preview changes" }).click();
  assert.match(await service.page.locator("ul.diff").innerText(), /\+ report \(new\)/);
  await service.page.getByRole("button", { name: "Save" }).click();
  await service.page.waitForURL(/saved=report$/);
  const key = (await d.api("GET", "/services/shop/report", undefined, auth)).body.check.pingKey;
  assert.match(await service.page.locator("#saved-title + h3 + p + pre + pre").innerText(), new RegExp(`healthd run ${d.url}/ping/${key} -- `));
  const [silence] = (await d.api("GET", "/silences", undefined, auth)).body.silences;
  assert.equal(silence.reason, "moving the backup disk");
  assert.deepEqual([...overview.problems, ...service.problems], []);
  assert.deepEqual([...new Set([...overview.origins, ...service.origins])], [d.url], "nothing is asked of another origin");
});
