/**
 * npm run screenshot — docs/status-page.png (and docs/status-page-phone.png): the status page of a small demo
 * with an announcement; docs/status-page-branded-light.png and -dark.png: a branded page of sections, as
 * readers who prefer light and dark see it; and docs/service-page.png: one service's page with its latency chart; rendered by the
 * built executable and photographed in Chromium. The demo's 90 days of history are a fixture written in the
 * database; today's checks are real, against a local target (one service answers 503). And the console's
 * overview (docs/console.png) and a failing service's page in it (docs/console-service.png), a silence set.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open, rawQuery } from "../test/support/raw.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "healthd-screenshot-"));
const db = join(dir, "demo.db");
const target = createServer((req, res) => {
  res.statusCode = req.url === "/checkout" ? 503 : 200;
  res.end(req.url === "/checkout" ? "maintenance" : "ok");
});
await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

try {
  const store = await open(db, { mode: "write" });
  const check = (path: string) => ({ url: base + path, intervalSeconds: 5, notifyThreshold: 0 });
  const servers = new Map([
    ["web-01", serverDocument.parse({ name: "Web shop", services: [
      { id: "home", name: "Homepage", check: check("/") },
      { id: "checkout", name: "Checkout", check: check("/checkout") },
      { id: "search", name: "Search", check: check("/search") },
    ] })],
    ["api-01", serverDocument.parse({ name: "Public API", services: [
      { id: "v2", name: "API v2", check: check("/v2") },
      { id: "auth", name: "Sign-in", check: check("/auth") },
    ] })],
  ]);
  // Made 90 days ago, as its history says (a service younger than a window shows its uptime over its life).
  await store.applyServers(servers, { now: Date.now() - 90 * 86_400_000 });
  // 90 days of history: mostly whole days, a few with failures, for the bars to show what they can show.
  const hourMs = 3_600_000;
  const from = Math.floor(Date.now() / hourMs) * hourMs - 89 * 24 * hourMs;
  await rawQuery(
    store,
    `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch)
     SELECT s.key, ${from} + h.n * ${hourMs} - ${24 * hourMs}, 720,
       CASE WHEN (s.key * 7 + h.n / 24) % 23 = 0 THEN 40 WHEN (s.key * 5 + h.n / 24) % 31 = 0 THEN 2 ELSE 0 END, 720 * 40.0,
       -- Latencies that move with the hour of the day and the day of the week: a median near 30 ms, a tail near 70.
       '{"' || (140 + ((h.n % 24) * (24 - h.n % 24)) / 24 + (h.n / 24) % 7) || '":620,"' || (160 + ((h.n % 24) * (24 - h.n % 24)) / 12 + (h.n / 24) % 5) || '":100}'
     FROM services AS s CROSS JOIN (WITH RECURSIVE h(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < ${89 * 24}) SELECT n FROM h) AS h`,
  );
  await store.close();

  const daemon = spawn(process.execPath, [join(root, "bin/healthd"), "serve", "--db", db, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let log = "";
      daemon.stderr.on("data", (d: Buffer) => {
        log += d;
        const m = /listening url=(\S+)/.exec(log);
        if (m) resolve(m[1]!);
      });
      daemon.once("exit", (code) => reject(new Error(`healthd exited with ${code}: ${log}`)));
    });
    // Until every service has been checked today (its first check comes within its interval).
    for (;;) {
      const model = (await (await fetch(url + "/status.json")).json()) as { overall: { unknown: number } };
      if (model.overall.unknown === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const post = (path: string, body: object) => fetch(url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<{ id: string }>);
    const slow = await post("/announcements", {
      title: "Checkout is failing for some card payments",
      message: "Payments by card fail for about one in ten customers. PayPal and invoices work.\n\nWe are working with our payment provider; see [their status page](https://status.payments.example).",
      severity: "degraded",
      servers: ["web-01"],
    });
    await post(`/announcements/${slow.id}/updates`, { message: "The provider found the cause and is rolling out a fix. **Next update in 30 minutes.**" });
    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
    });
    try {
      for (const [file, viewport] of [["status-page.png", { width: 1100, height: 760 }], ["status-page-phone.png", { width: 375, height: 760 }]] as const) {
        const page = await browser.newPage({ viewport, colorScheme: "light" });
        await page.goto(url + "/status");
        await page.screenshot({ path: join(root, "docs", file), fullPage: true });
        console.log(`wrote docs/${file}`);
        await page.close();
      }
      // A page to show customers: sections of chosen services, a logo, an accent colour, footer links and a
      // time zone of its own; photographed as each reader's preference shows it, light and dark.
      const put = (path: string, body: string, type: string) => fetch(url + path, { method: "PUT", headers: { "content-type": type }, body });
      const made = await put("/status-pages/acme", JSON.stringify({
        title: "Acme status",
        description: "Live status of the **Acme** shop. Questions? Write to support.",
        sections: [{ title: "Shopping", services: ["web-01/home", "web-01/checkout", "web-01/search"] }, { title: "For developers", services: ["api-01/*"] }],
        public: true,
        accentColor: "#0b5fff",
        footerLinks: [{ label: "Help centre", url: "https://help.acme.example/" }, { label: "Contact", url: "https://acme.example/contact" }],
        timeZone: "Europe/Paris",
      }), "application/json");
      if (made.status >= 300) throw new Error(`PUT /status-pages/acme: ${made.status} ${await made.text()}`);
      const logo = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48" width="40" height="40"><rect width="48" height="48" rx="10" fill="#0b5fff"/><path d="M12 34 24 12l12 22z" fill="#fff"/></svg>`;
      await put("/status-pages/acme/logo", logo, "image/svg+xml");
      for (const colorScheme of ["light", "dark"] as const) {
        const file = `status-page-branded-${colorScheme}.png`;
        const page = await browser.newPage({ viewport: { width: 900, height: 1000 }, colorScheme });
        await page.goto(url + "/status/p/acme");
        await page.screenshot({ path: join(root, "docs", file), fullPage: true });
        console.log(`wrote docs/${file}`);
        await page.close();
      }
      const page = await browser.newPage({ viewport: { width: 1100, height: 760 }, colorScheme: "light" });
      await page.goto(url + "/status/api-01/v2?range=30d");
      await page.screenshot({ path: join(root, "docs", "service-page.png"), fullPage: true });
      console.log("wrote docs/service-page.png");
      await page.close();
      // The console (this demo has no token: it is open, as a daemon on loopback without tokens is).
      await post("/silences", { server: "api-01", service: "auth", durationSeconds: 7200, reason: "moving the sign-in service" });
      for (const [file, path] of [["console.png", "/console"], ["console-service.png", "/console/services/web-01/checkout"]] as const) {
        const shot = await browser.newPage({ viewport: { width: 1100, height: 760 }, colorScheme: "light" });
        await shot.goto(url + path);
        await shot.screenshot({ path: join(root, "docs", file), fullPage: true });
        console.log(`wrote docs/${file}`);
        await shot.close();
      }
    } finally {
      await browser.close();
    }
  } finally {
    daemon.kill("SIGTERM");
  }
} finally {
  target.close();
  rmSync(dir, { recursive: true, force: true });
}
