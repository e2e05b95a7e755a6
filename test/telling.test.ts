/**
 * Telling people: announcements with updates (API and `healthd announce`), named status pages, a page per
 * service with its latency chart, and monthly reports (API and `healthd report`), on both engines. What the
 * pages look like in a browser is test/telling-page.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { valueOf } from "../src/policy/sketch.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { rawQuery } from "./support/raw.ts";
import { runHealthd } from "./support/cli.ts";
import { switchableTarget } from "./support/targets.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
const heartbeat = (id: string) => ({ id, check: { type: "heartbeat", periodSeconds: 3600 } });

async function token(d: TestDaemon, body: object): Promise<string> {
  const made = await d.api("POST", "/tokens", body, admin);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  return made.body.token;
}

for (const engine of engines) {
  test(`${engine}: announcements: added, updated newest first, ended, listed; every bad field named, nothing half-written`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    for (const id of ["web-01", "db-01"]) assert.equal((await d.api("PUT", `/services/${id}`, { services: [heartbeat("backup")] }, admin)).status, 201);

    const bad = await d.api("POST", "/announcements", { title: " ", message: "x".repeat(10_001), severity: "bad", servers: ["web-01", "web-01"], endsAt: "tomorrow", extra: 1 }, admin);
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ["/endsAt", "/extra", "/message", "/servers", "/severity", "/title"]);
    assert.match(JSON.stringify(bad.body.errors), /at most 10000 characters; link to a longer write-up instead/);
    const unknown = await d.api("POST", "/announcements", { title: "t", message: "m", servers: ["web-01", "nope"] }, admin);
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.errors, [{ path: "/servers", message: "names server nope, which does not exist; create it first (PUT /services/nope) or leave it out" }]);
    const backwards = await d.api("POST", "/announcements", { title: "t", message: "m", startsAt: "2026-12-02", endsAt: "2026-12-01" }, admin);
    assert.deepEqual(backwards.body.errors, [{ path: "/endsAt", message: "must be later than startsAt (or now, when startsAt is left out)" }]);
    assert.deepEqual((await d.api("GET", "/announcements", undefined, admin)).body, { announcements: [] }, "nothing written by the refused ones");

    const added = await d.api("POST", "/announcements", { title: "Checkout is slow", message: "We are *on it*.", severity: "degraded", servers: ["web-01"] }, admin);
    assert.equal(added.status, 201);
    assert.equal(added.headers.get("location"), `/announcements/${added.body.id}`);
    assert.deepEqual([added.body.severity, added.body.servers, added.body.active, added.body.endsAt, added.body.updates], ["degraded", ["web-01"], true, null, []]);
    const id = added.body.id;
    const first = await d.api("POST", `/announcements/${id}/updates`, { message: "Found it: a slow query." }, admin);
    assert.equal(first.status, 201);
    const second = await d.api("POST", `/announcements/${id}/updates`, { message: "Fixed; watching it.", severity: "info" }, admin);
    assert.deepEqual(second.body.updates.map((u: { message: string; severity: string | null }) => [u.message, u.severity]), [
      ["Fixed; watching it.", "info"],
      ["Found it: a slow query.", null],
    ]);
    assert.equal(second.body.severity, "info", "an update that sets a severity sets the announcement's");
    assert.equal((await d.api("POST", `/announcements/${id}/updates`, { message: "" }, admin)).body.errors[0].path, "/message");
    assert.equal((await d.api("POST", "/announcements/999/updates", { message: "x" }, admin)).status, 404);

    const later = await d.api("POST", "/announcements", { title: "Database upgrade", message: "Read-only for ten minutes.", severity: "maintenance", startsAt: "2099-01-01T02:00:00Z", endsAt: "2099-01-01T03:00:00Z" }, admin);
    assert.equal(later.body.active, false);
    const cancel = await d.api("PATCH", `/announcements/${later.body.id}`, { ended: true }, admin);
    assert.equal(cancel.status, 400);
    assert.match(cancel.body.errors[0].message, /cannot end what has not begun .* DELETE \/announcements\/\d+ cancels it/);

    assert.deepEqual((await d.api("GET", "/announcements?active=true", undefined, admin)).body.announcements.map((a: { id: string }) => a.id), [id]);
    assert.deepEqual((await d.api("GET", "/announcements?active=false", undefined, admin)).body.announcements.map((a: { id: string }) => a.id), [later.body.id]);
    assert.equal((await d.api("GET", "/announcements?active=maybe", undefined, admin)).status, 400);
    assert.equal((await d.api("PATCH", `/announcements/${id}`, {}, admin)).status, 400);
    assert.equal((await d.api("PATCH", `/announcements/${id}`, { ended: true, endsAt: "2026-01-01" }, admin)).body.errors[0].path, "/ended");
    const ended = await d.api("PATCH", `/announcements/${id}`, { ended: true }, admin);
    assert.equal(ended.status, 200);
    assert.equal(ended.body.active, false);
    assert.ok(ended.body.endsAt <= new Date().toISOString());
    assert.deepEqual((await d.api("GET", "/announcements?active=true", undefined, admin)).body.announcements, []);
    assert.equal((await d.api("DELETE", `/announcements/${later.body.id}`, undefined, admin)).status, 204);
    assert.equal((await d.api("GET", `/announcements/${later.body.id}`, undefined, admin)).status, 404);

    // A token limited to web-01 may write about web-01 only, and not about every server.
    const deploy = await token(d, { name: "deploy-web", scope: "write", servers: ["web-01"] });
    assert.equal((await d.api("POST", "/announcements", { title: "t", message: "m", servers: ["web-01"] }, as(deploy))).status, 201);
    const all = await d.api("POST", "/announcements", { title: "t", message: "m" }, as(deploy));
    assert.equal(all.status, 403);
    assert.match(all.body.detail, /covers every server; token "deploy-web" is limited to server web-01/);
    assert.equal((await d.api("POST", "/announcements", { title: "t", message: "m", servers: ["db-01"] }, as(deploy))).status, 403);
    const reader = await token(d, { name: "grafana", scope: "read" });
    assert.equal((await d.api("POST", "/announcements", { title: "t", message: "m" }, as(reader))).status, 403);
    assert.equal((await d.api("GET", "/announcements", undefined, as(reader))).status, 200);
  });

  test(`${engine}: named status pages: public ones answer anyone and show no URL, error or token; private ones need a token that may read their servers`, async (t) => {
    const target = await switchableTarget(t);
    target.setUp(false);
    const d = await testDaemon(t, { engine, token: adminToken });
    const failed = nextEvent(d.events, "check:done", (r: { entry: { ok: boolean } }) => !r.entry.ok);
    const secretUrl = `${target.url}/secret-path?key=hunter2`;
    await d.api("PUT", "/services/web-01", { name: "Web shop", services: [{ id: "home", name: "Homepage", check: { url: secretUrl, intervalSeconds: 60, notifyThreshold: 0 } }] }, admin);
    await d.api("PUT", "/services/db-01", { services: [heartbeat("backup")] }, admin);
    await failed;

    assert.equal((await d.api("PUT", "/status-pages/shop", { title: "Shop", servers: ["web-01", "nope"] }, admin)).body.errors[0].message, "names server nope, which does not exist; create it first (PUT /services/nope) or leave it out");
    assert.equal((await d.api("PUT", "/status-pages/a%20b", { title: "Shop", servers: ["web-01"] }, admin)).body.errors[0].path, "/slug");
    assert.equal((await d.api("PUT", "/status-pages/shop", { title: "Shop", servers: [] }, admin)).body.errors[0].path, "/servers");
    const writer = await token(d, { name: "deploy", scope: "write" });
    assert.equal((await d.api("PUT", "/status-pages/shop", { title: "Shop", servers: ["web-01"] }, as(writer))).status, 403, "a page can show servers to anyone: admin only");

    const made = await d.api("PUT", "/status-pages/shop", { title: "Shop status", description: "Our *shop*. <b>bold</b>", servers: ["web-01"], public: true }, admin);
    assert.equal(made.status, 201);
    assert.equal(made.body.url, "/status/p/shop");
    assert.equal((await d.api("PUT", "/status-pages/inside", { title: "Inside", servers: ["db-01", "web-01"], public: false }, admin)).status, 201);
    assert.deepEqual((await d.api("GET", "/status-pages", undefined, admin)).body.pages.map((p: { slug: string }) => p.slug), ["inside", "shop"]);

    const publicPage = await fetch(`${d.url}/status/p/shop`);
    const html = await publicPage.text();
    assert.equal(publicPage.status, 200);
    assert.match(publicPage.headers.get("content-security-policy")!, /default-src 'none'/);
    assert.match(html, /<h1>Shop status<\/h1>/);
    assert.match(html, /Our <em>shop<\/em>\. &lt;b&gt;bold&lt;\/b&gt;/);
    assert.match(html, /Homepage/);
    assert.doesNotMatch(html, /db-01|backup/, "only its own servers");
    const error = (await d.api("GET", "/services/web-01/home", undefined, admin)).body.state.lastEntry.error;
    assert.ok(error.length > 5, error);
    for (const secret of ["secret-path", "hunter2", "127.0.0.1", error, adminToken]) assert.ok(!html.includes(secret), `the public page shows ${secret}`);
    const publicService = await fetch(`${d.url}/status/p/shop/web-01/home`);
    const serviceHtml = await publicService.text();
    assert.equal(publicService.status, 200);
    assert.match(serviceHtml, /<svg viewBox/);
    for (const secret of ["secret-path", "hunter2", "127.0.0.1", error, adminToken]) assert.ok(!serviceHtml.includes(secret), `the public service page shows ${secret}`);
    assert.equal((await fetch(`${d.url}/status/p/shop/db-01/backup`)).status, 404, "a server the page does not show");

    const privatePage = await fetch(`${d.url}/status/p/inside`);
    assert.equal(privatePage.status, 401);
    assert.ok(!(await privatePage.text()).includes("backup"));
    assert.equal((await fetch(`${d.url}/status/p/nothing-here`)).status, 401, "without a token a missing page reads as a private one");
    const limited = await token(d, { name: "web-only", scope: "read", servers: ["web-01"] });
    // A private page of servers the token may not read answers as no page (issue 78: nothing learnt of them).
    assert.equal((await fetch(`${d.url}/status/p/inside`, { headers: as(limited) })).status, 404);
    const inside = await fetch(`${d.url}/status/p/inside`, { headers: admin });
    const insideHtml = await inside.text();
    assert.equal(inside.status, 200);
    assert.ok(insideHtml.includes(error), "a private page shows what the daemon's own page shows");
    assert.ok(insideHtml.indexOf('id="server-db-01"') < insideHtml.indexOf('id="server-web-01"'), "servers in the page's order");
    assert.equal((await fetch(`${d.url}/status/p/nothing-here`, { headers: admin })).status, 404);

    assert.equal((await fetch(`${d.url}/status/p/inside/web-01/home`)).status, 401, "a private page's service pages need a token too");
    assert.equal((await fetch(`${d.url}/status/p/inside/web-01/home`, { headers: admin })).status, 200);
    // A server called p keeps its service pages where no named page has the slug.
    await d.api("PUT", "/services/p", { services: [heartbeat("shop"), heartbeat("job")] }, admin);
    assert.match(await (await fetch(`${d.url}/status/p/job`, { headers: admin })).text(), /<h1>job<\/h1>/);
    assert.match(await (await fetch(`${d.url}/status/p/shop`)).text(), /<h1>Shop status<\/h1>/, "the named page comes first");

    assert.equal((await d.api("DELETE", "/status-pages/shop", undefined, admin)).status, 204);
    assert.equal((await fetch(`${d.url}/status/p/shop`)).status, 401, "gone: now it reads as any missing page");
    assert.match(await (await fetch(`${d.url}/status/p/shop`, { headers: admin })).text(), /<h1>shop<\/h1>/, "and server p's service of that id shows");
  });

  test(`${engine}: a service's page: latency chart and table per hour and per day from the rollups, incidents with durations`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", name: "Homepage", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400 } }] });
    const key = (await rawQuery(d.store, "SELECT key FROM services WHERE id = 'home'"))[0]!.key;
    const hourMs = 3_600_000;
    const thisHour = Math.floor(Date.now() / hourMs) * hourMs;
    // Made 100 days ago (a younger one is charted over its life), before any page read it.
    await rawQuery(d.store, `UPDATE services SET created_at = ${thisHour - 100 * 24 * hourMs} WHERE key = ${key}`);
    // Two hours ago: 60 checks, 3 failures, all at bucket 60; five days ago: 10 checks at bucket 100.
    await rawQuery(
      d.store,
      `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch) VALUES
       (${key}, ${thisHour - 2 * hourMs}, 60, 3, 63, '{"60":60}'), (${key}, ${thisHour - 5 * 24 * hourMs}, 10, 0, 500, '{"100":10}')`,
    );
    await rawQuery(d.store, `INSERT INTO incidents (service_key, server_id, service_id, started_at, opened_at, closed_at, failures, notified) VALUES (${key}, 'web-01', 'home', ${thisHour - 3 * hourMs}, ${thisHour - 3 * hourMs + 60_000}, ${thisHour - 3 * hourMs + 90_000}, 4, ${engine === "sqlite" ? 1 : "true"})`);

    const day = await d.api("GET", "/status/web-01/home");
    assert.equal(day.status, 200);
    assert.match(day.body, /<h2 id="latency">Latency, last 24 hours<\/h2>/);
    assert.match(day.body, /<svg viewBox="0 0 720 220" role="img" aria-labelledby="chart-title chart-desc">/);
    const rows = [...(day.body as string).matchAll(/<tr><th scope="row">.*?<\/tr>/g)].map((m) => m[0]);
    assert.equal(rows.length, 24, "a row per hour");
    const two = new Date(thisHour - 2 * hourMs).toISOString();
    assert.ok(rows.some((r) => r.includes(two.slice(0, 16).replace("T", " ")) && r.includes("<td>60</td><td>95.00 %</td>") && r.includes(`${valueOf(60).toFixed(1)} ms`)), `${two}: ${rows.join("\n")}`);
    assert.match(day.body, /1m 30s/, "the incident's duration");
    assert.match(day.body, /<td>4<\/td><\/tr>/, "its failed checks");
    const month = await d.api("GET", "/status/web-01/home?range=30d");
    const dayRows = [...(month.body as string).matchAll(/<tr><th scope="row">.*?<\/tr>/g)].map((m) => m[0]);
    assert.equal(dayRows.length, 30);
    const fiveDays = new Date(thisHour - 5 * 24 * hourMs).toISOString().slice(0, 10);
    assert.ok(dayRows.some((r) => r.includes(fiveDays) && r.includes(`${valueOf(100) >= 10 ? valueOf(100).toFixed(0) : valueOf(100).toFixed(1)} ms`)), dayRows.join("\n"));
    assert.equal((await d.api("GET", "/status/web-01/home?range=90d")).body.match(/<tr><th scope="row">/g).length, 90);
    const wrong = await d.api("GET", "/status/web-01/home?range=7y");
    assert.equal(wrong.status, 400);
    assert.match(wrong.body.errors[0].message, /must be "24h", "30d" or "90d"/);
    assert.equal((await d.api("GET", "/status/web-01/nope")).status, 404);
    assert.equal((await d.api("GET", "/status/nope/home")).status, 404);
  });

  test(`${engine}: a month's report: uptime without silenced checks, downtime without maintenance, p50/p95, slaTarget met or missed; JSON, CSV and healthd report`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", {
      services: [
        { id: "a", name: "Shop", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400, slaTarget: 99.9 } },
        { id: "b", name: "Search", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400, slaTarget: 99 } },
        { id: "c", name: "Blog", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400 } },
      ],
      maintenance: [{ cron: "0 3 * * *", durationMinutes: 60, reason: "backups" }],
    });
    assert.equal((await d.api("PUT", "/services/web-01/x", { id: "x", check: { url: "http://127.0.0.1:9/", slaTarget: 100.5 } })).body.errors[0].path, "/check/slaTarget");
    const bool = (b: boolean) => (engine === "sqlite" ? (b ? 1 : 0) : b);
    const keys = Object.fromEntries((await rawQuery(d.store, "SELECT id, key FROM services")).map((r) => [r.id, r.key]));
    const hour = (day: number, h: number) => Date.UTC(2026, 9, day, h);
    // The server existed all of October: its maintenance window silenced an hour a day.
    await rawQuery(d.store, `UPDATE servers SET created_at = ${Date.UTC(2026, 8, 1)}`);
    const values: string[] = [];
    for (let day = 1; day <= 31; day++) {
      for (let h = 0; h < 24; h++) {
        const failures = day === 10 && h === 12 ? 30 : day === 20 && h === 3 ? 60 : 0;
        const silenced = h === 3 ? 60 : 0;
        values.push(`(${keys.a}, ${hour(day, h)}, 60, ${failures}, 60, '{"60":50,"100":10}', ${silenced}, ${day === 20 && h === 3 ? 60 : 0})`);
        // b: 2 of 60 failing every hour: 96.67 %, short of 99.
        values.push(`(${keys.b}, ${hour(day, h)}, 60, 2, 60, '{"70":60}', ${silenced}, ${h === 3 ? 2 : 0})`);
      }
    }
    // One hour of September and one of November: not October's.
    values.push(`(${keys.a}, ${Date.UTC(2026, 8, 30, 23)}, 60, 60, 60, '{"300":60}', 0, 0)`, `(${keys.a}, ${Date.UTC(2026, 10, 1, 0)}, 60, 60, 60, '{"300":60}', 0, 0)`);
    await rawQuery(d.store, `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch, silenced_checks, silenced_failures) VALUES ${values.join(", ")}`);
    const incident = (service: string, from: number, to: number | null) =>
      `(${keys[service]}, 'web-01', '${service}', ${from}, ${from}, ${to ?? "NULL"}, 1, ${bool(true)})`;
    await rawQuery(
      d.store,
      `INSERT INTO incidents (service_key, server_id, service_id, started_at, opened_at, closed_at, failures, notified) VALUES
       ${incident("a", hour(10, 12), hour(10, 12) + 30 * 60_000)},
       ${incident("a", hour(20, 3), hour(20, 3) + 45 * 60_000)},
       ${incident("b", hour(31, 23), hour(31, 23) + 120 * 60_000)},
       ${incident("c", hour(5, 0), null)}`,
    );
    await rawQuery(d.store, `INSERT INTO silences (server_id, service_id, starts_at, ends_at, reason, created_at) VALUES ('web-01', 'b', ${hour(5, 0)}, ${hour(5, 2)}, 'reindex', ${hour(5, 0)})`);

    const report = await d.api("GET", "/reports?month=2026-10");
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const [a, b, c] = report.body.services;
    assert.deepEqual([report.body.from, report.body.until, report.body.complete], ["2026-10-01T00:00:00.000Z", "2026-11-01T00:00:00.000Z", true]);
    const counted = 744 * 60 - 31 * 60;
    assert.deepEqual(
      { uptime: a.uptime, checks: a.checks, failures: a.failures, incidents: a.incidents, downtimeMs: a.downtimeMs, slaMet: a.slaMet, excluded: a.excluded },
      { uptime: Math.round(((counted - 30) / counted) * 1e7) / 1e7, checks: counted, failures: 30, incidents: 2, downtimeMs: 30 * 60_000, slaMet: true, excluded: { checks: 31 * 60, quietMs: 31 * 3_600_000 } },
      "the incident in the maintenance window adds no downtime; its failures are left out",
    );
    assert.deepEqual(a.latencyMs, { p50: Math.round(valueOf(60) * 10) / 10, p95: Math.round(valueOf(100) * 10) / 10 });
    assert.equal(b.slaMet, false);
    assert.equal(b.downtimeMs, 60 * 60_000, "cut at the month's end");
    assert.equal(b.excluded.quietMs, 33 * 3_600_000, "the windows and its own silence");
    assert.deepEqual([c.uptime, c.checks, c.slaTarget, c.slaMet, c.incidents], [null, 0, null, null, 1]);
    assert.equal(c.downtimeMs, (31 - 4) * 86_400_000 - 27 * 3_600_000, "open since the 5th, less its maintenance hours");
    assert.match(report.body.note, /left out/);

    const csv = await fetch(`${d.url}/reports?month=2026-10&format=csv`);
    assert.equal(csv.headers.get("content-type"), "text/csv; charset=utf-8");
    assert.equal(csv.headers.get("content-disposition"), 'attachment; filename="healthd-2026-10.csv"');
    const lines = (await csv.text()).trim().split("\n");
    assert.equal(lines[0], "server,service,name,uptime_percent,checks,failures,incidents,downtime_seconds,p50_ms,p95_ms,sla_target_percent,sla_met,excluded_checks,excluded_seconds");
    assert.equal(lines[2], `web-01,b,Search,${(Math.floor((58 / 60) * 100_000) / 1000).toFixed(3)},${counted},${(744 - 31) * 2},1,3600,${Math.round(valueOf(70) * 10) / 10},${Math.round(valueOf(70) * 10) / 10},99,no,${31 * 60},${33 * 3600}`);
    for (const [query, field] of [["month=2026-1", "/month"], ["month=2099-01", "/month"], ["month=2026-10&format=xml", "/format"], ["month=2026-10&servers=x", "/servers"]]) {
      const refused = await d.api("GET", `/reports?${query}`);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.body.errors[0].path, field, query);
    }
    assert.equal((await d.api("GET", "/reports?month=2026-10&server=nope")).status, 404);
    assert.deepEqual((await d.api("GET", "/reports?month=2026-09&server=web-01")).body.services.map((s: { checks: number; failures: number }) => [s.checks, s.failures]), [[60, 60], [0, 0], [0, 0]]);

    if (engine === "sqlite") {
      const cli = await runHealthd(["report", "--db", d.db, "--month", "2026-10", "--csv"]);
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal(cli.stdout.trim(), lines.join("\n"), "the CLI's CSV is the API's");
      const text = await runHealthd(["report", "--db", d.db, "--month", "2026-10"]);
      assert.match(text.stdout, /web-01\/b\s+96\.666 %\s+99 % MISSED/);
      assert.match(text.stdout, /left out of its uptime/);
      const bad = await runHealthd(["report", "--db", d.db, "--month", "October"]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--month must be a month as YYYY-MM, for example 2026-10/);
    }
  });
}

test("healthd announce: announce, update, list, end and delete from the shell; bad flags named", async (t) => {
  const d = await testDaemon(t);
  await d.api("PUT", "/services/web-01", { services: [heartbeat("backup")] });
  const run = (...args: string[]) => runHealthd(["announce", "--db", d.db, ...args]);
  const made = await run("Checkout is slow", "--severity", "degraded", "--servers", "web-01", "--message", "We are *on it*.", "--json");
  assert.equal(made.code, 0, made.stderr);
  const id = JSON.parse(made.stdout).id;
  assert.equal((await run("--update", id, "--message", "Fixed.", "--severity", "info")).stdout, `updated announcement ${id}\n`);
  const listed = await run("--list", "--active");
  assert.match(listed.stdout, new RegExp(`^${id}\\s+shown\\s+info\\s+.*web-01\\s+Checkout is slow$`, "m"));
  const shown = await d.api("GET", `/announcements/${id}`);
  assert.deepEqual(shown.body.updates.map((u: { message: string }) => u.message), ["Fixed."]);
  const page = await d.api("GET", "/status");
  assert.match(page.body, /Checkout is slow/, "the daemon shows what the CLI wrote");

  for (const [args, message] of [
    [["Title"], /--message is required: what people should know \(Markdown; --message - reads it from stdin\)/],
    [["Title", "--message", " "], /--message must not be empty/],
    [["Title", "--message", "x", "--servers", "nope"], /--servers names nope, which does not exist/],
    [["Title", "--message", "x", "--starts", "soon"], /--starts must be an ISO 8601 date or time/],
    [["--update", "99", "--message", "x"], /no announcement "99"; healthd announce --list shows them/],
    [["Title", "--end", "1"], /give a TITLE with --message, or --update ID/],
  ] as const) {
    const refused = await run(...args);
    assert.equal(refused.code, 2, args.join(" "));
    assert.match(refused.stderr, message, args.join(" "));
  }
  assert.equal((await run("--end", id)).stdout, `ended announcement ${id}\n`);
  assert.match((await run("--list")).stdout, new RegExp(`^${id}\\s+ended`, "m"));
  assert.equal((await run("--delete", id)).stdout, `deleted announcement ${id}\n`);
  assert.equal((await run("--list")).stdout, "no announcements\n");
});

test("GET /status.atom: the announcements as an Atom feed, escaped; the daemon's pages link it, a named page does not", async (t) => {
  const d = await testDaemon(t, { publicUrl: "http://127.0.0.1:8080/" });
  await d.api("PUT", "/services/web-01", { services: [heartbeat("backup")] });
  const slow = await d.api("POST", "/announcements", { title: "Checkout <slow> & failing", message: "<script>alert(1)</script> *on it*", severity: "degraded" });
  await d.api("POST", `/announcements/${slow.body.id}/updates`, { message: "Fixed; [details](https://runbooks.example/x)", severity: "info" });
  const done = await d.api("POST", "/announcements", { title: "Payments were down", message: "All fine.", severity: "outage", startsAt: "2026-11-01" });
  await d.api("PATCH", `/announcements/${done.body.id}`, { ended: true });

  const feed = await fetch(`${d.url}/status.atom`);
  const xml = await feed.text();
  assert.equal(feed.headers.get("content-type"), "application/atom+xml; charset=utf-8");
  assert.match(xml, /^<\?xml version="1.0" encoding="utf-8"\?>\n<feed xmlns="http:\/\/www.w3.org\/2005\/Atom"><id>http:\/\/127.0.0.1:8080\/status.atom<\/id>/);
  const entries = [...xml.matchAll(/<entry>([\s\S]*?)<\/entry>/g)].map((m) => m[1]!);
  assert.equal(entries.length, 2);
  assert.match(entries[0]!, /<title>Payments were down<\/title>/, "the latest changed first");
  const first = entries[1]!;
  assert.match(first, new RegExp(`<id>http://127.0.0.1:8080/announcements/${slow.body.id}</id><title>Checkout &lt;slow&gt; &amp; failing</title>`));
  assert.match(first, /<category term="info"\/>/, "the severity an update set");
  assert.match(first, /&lt;em&gt;on it&lt;\/em&gt;/, "the Markdown, as HTML escaped into the content");
  assert.match(first, /&amp;lt;script&amp;gt;/, "HTML in a message stays text, escaped once more");
  assert.ok(!/<script|<em>/.test(xml), "nothing in the feed is markup but the feed's own");
  assert.equal((xml.match(/<entry>/g) ?? []).length, (xml.match(/<\/entry>/g) ?? []).length);

  assert.match(await (await fetch(`${d.url}/status`)).text(), /<link rel="alternate" type="application\/atom\+xml" title="Announcements" href="\/status.atom">/);
  await d.api("PUT", "/status-pages/shop", { title: "Shop", servers: ["web-01"], public: true });
  assert.doesNotMatch(await (await fetch(`${d.url}/status/p/shop`)).text(), /status\.atom|status\.json/);
});
