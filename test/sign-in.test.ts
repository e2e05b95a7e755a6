/** With a token, a browser that opens /status signs in on a page, and reads with a session cookie. */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { launchBrowser } from "./support/browser.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";

const token = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${token}` };
const html = { accept: "text/html,application/xhtml+xml" };
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** POST the sign-in form; answers the status, Location and the Set-Cookie header. */
async function signIn(d: TestDaemon, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const answer = await fetch(d.url + "/login", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: answer.status, location: answer.headers.get("location"), cookie: answer.headers.get("set-cookie"), text: await answer.text() };
}

const sessionOf = (setCookie: string | null) => /^healthd_session=([^;]+)/.exec(setCookie ?? "")?.[1];

test("a browser gets the sign-in page, not 401 JSON; a token signs it in for 30 days to read, never to change", async (t) => {
  const d = await testDaemon(t, { token });
  assert.equal((await d.api("PUT", "/services/web-01", { services: [] }, admin)).status, 201);

  const page = await fetch(d.url + "/status", { headers: html });
  assert.equal(page.status, 401);
  assert.match(page.headers.get("content-type")!, /^text\/html/);
  assert.match(page.headers.get("content-security-policy")!, /form-action 'self'/);
  const body = await page.text();
  assert.match(body, /<form method="post" action="\/login">/);
  assert.match(body, /name="next" value="\/status"/);
  // A script or curl still gets the problem JSON.
  assert.equal((await d.api("GET", "/status")).headers.get("content-type"), "application/problem+json; charset=utf-8");

  const wrong = await signIn(d, { token: "not-it", next: "/status" });
  assert.equal(wrong.status, 401);
  assert.match(wrong.text, /That token is not one of this healthd/);
  assert.equal(wrong.cookie, null);
  assert.equal((await signIn(d, { next: "/status" })).status, 400);

  const ok = await signIn(d, { token, next: "/status/web-01" });
  assert.equal(ok.status, 303);
  assert.equal(ok.location, "/status/web-01");
  assert.match(ok.cookie!, /^healthd_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Strict$/);
  const cookie = { cookie: `healthd_session=${sessionOf(ok.cookie)}` };
  assert.equal((await fetch(d.url + "/status", { headers: { ...html, ...cookie } })).status, 200);
  assert.equal((await d.api("GET", "/services", undefined, cookie)).status, 200);
  const put = await d.api("PUT", "/services/web-02", { services: [] }, cookie);
  assert.equal(put.status, 403, "a session reads; changes need the Authorization header");
  assert.match(put.body.detail, /needs a token of scope write or above; token "--token \(signed in\)" has scope read/);

  // Behind https, the cookie is Secure; a next that leaves the daemon goes to /status instead.
  const secure = await signIn(d, { token, next: "//evil.example/x" }, { "x-forwarded-proto": "https" });
  assert.equal(secure.location, "/status");
  assert.match(secure.cookie!, /; Secure$/);
  assert.equal((await signIn(d, { token, next: "/\\evil.example" })).location, "/status");

  // Signing out ends the session at once.
  const out = await fetch(d.url + "/logout", { method: "POST", redirect: "manual", headers: cookie });
  assert.equal(out.status, 303);
  assert.match(out.headers.get("set-cookie")!, /^healthd_session=; Path=\/; Max-Age=0/);
  const after = await fetch(d.url + "/status", { headers: { ...html, ...cookie } });
  assert.equal(after.status, 401);
  assert.match(await after.text(), /Sign in to healthd/);
});

test("a session hangs on its token: revoked, the browser is signed out at once; a ping token cannot sign in", async (t) => {
  const d = await testDaemon(t, { token });
  const reader = (await d.api("POST", "/tokens", { name: "wall", scope: "read" }, admin)).body;
  const pinger = (await d.api("POST", "/tokens", { name: "cron", scope: "ping" }, admin)).body;
  assert.equal((await signIn(d, { token: pinger.token })).status, 401);
  const signed = await signIn(d, { token: reader.token });
  const cookie = { cookie: `healthd_session=${sessionOf(signed.cookie)}` };
  assert.equal((await d.api("GET", "/services", undefined, cookie)).status, 200);
  assert.equal((await d.api("DELETE", `/tokens/${reader.id}`, undefined, admin)).status, 204);
  const revoked = await d.api("GET", "/services", undefined, cookie);
  assert.equal(revoked.status, 401);
  assert.match(revoked.body.detail, /this browser's session is over \(signed out, expired, or its token revoked\); sign in again at \/login/);
});

test("in Chromium: /status shows the sign-in page, a token typed there opens the status page; accessible, light and dark", async (t) => {
  const d = await testDaemon(t, { token });
  assert.equal((await d.api("PUT", "/services/web-01", { name: "Web", services: [] }, admin)).status, 201);
  const browser = await launchBrowser(t);
  for (const colorScheme of ["light", "dark"] as const) {
    const context = await browser.newContext({ colorScheme, viewport: { width: 375, height: 700 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => m.type() === "error" && !/401 \(Unauthorized\)/.test(m.text()) && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));
    const first = await page.goto(d.url + "/status");
    assert.equal(first!.status(), 401);
    assert.equal(await page.locator("h1").innerText(), "Sign in to healthd");
    await page.evaluate(axeSource);
    const result = await page.evaluate(() => (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; help: string }[] }> } }).axe.run());
    assert.deepEqual(result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.help}`), []);
    await page.fill("#token", "wrong-token-xyz");
    await page.click("button[type=submit]");
    assert.equal(await page.locator(".error").innerText(), "That token is not one of this healthd (or it may only ping). Check it and try again.");
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForURL(d.url + "/status");
    assert.match(await page.locator("h1").innerText(), /Status/);
    const cookies = await context.cookies();
    assert.deepEqual(cookies.map((c) => [c.name, c.httpOnly, c.sameSite]), [["healthd_session", true, "Strict"]]);
    assert.deepEqual(problems, []);
    await context.close();
  }
});
