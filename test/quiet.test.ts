/** A silenced or in-maintenance service says so in its state and on the status page, not a bare red Down. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { testDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";
import { refusedUrl } from "./support/targets.ts";

test("silenced and in maintenance: state says until when and why; the page says it instead of a red Down (the reason only when not public)", async (t) => {
  const url = await refusedUrl();
  const check = { url, intervalSeconds: 1, notifyThreshold: 1 };
  for (const publicStatus of [false, true]) {
    const d = await testDaemon(t, { publicStatus });
    assert.equal((await d.api("PUT", "/services/web-01", { services: [{ id: "home", check }, { id: "api", check }] })).status, 201);
    assert.equal((await d.api("PUT", "/services/db-01", { maintenance: [{ cron: "* * * * *", durationMinutes: 60, reason: "vacuum" }], services: [{ id: "pg", check }] })).status, 201);
    await until(async () => (await d.api("GET", "/services/web-01/home")).body.state.status, (s) => s === "down", "home down");
    await until(async () => (await d.api("GET", "/services/db-01/pg")).body.state.status, (s) => s === "down", "pg down");
    const silence = await d.api("POST", "/silences", { server: "web-01", service: "home", durationSeconds: 3600, reason: "backups" });
    assert.equal(silence.status, 201);

    const home = (await d.api("GET", "/services/web-01/home")).body.state;
    assert.deepEqual([home.status, home.silencedUntil, home.silenceReason, home.maintenance], ["down", silence.body.endsAt, "backups", false]);
    const api = (await d.api("GET", "/services/web-01/api")).body.state;
    assert.deepEqual([api.status, "silencedUntil" in api], ["down", false], "the silence names home only");
    const pg = (await d.api("GET", "/services/db-01/pg")).body.state;
    assert.equal(pg.maintenance, true);
    assert.equal(pg.silenceReason, "vacuum");
    assert.ok(Date.parse(pg.silencedUntil) > Date.now() && Date.parse(pg.silencedUntil) <= Date.now() + 3_600_000);

    const page = await (await fetch(d.url + "/status")).text();
    const card = (name: string) => page.slice(page.indexOf(`<h3 id="s-${name}">`), page.indexOf("</li>", page.indexOf(`<h3 id="s-${name}">`)));
    assert.match(card("web-01-home"), /<span class="badge quiet">Silenced \(Down\)<\/span>/);
    assert.match(card("web-01-home"), publicStatus ? /Silenced until <time datetime="[^"]+" title="[^"]+">[^<]+<\/time><\/p>/ : /Silenced until <time datetime="[^"]+" title="[^"]+">[^<]+<\/time>: backups<\/p>/);
    assert.match(card("web-01-api"), /<span class="badge down">Down<\/span>/);
    assert.match(card("db-01-pg"), /<span class="badge quiet">Maintenance \(Down\)<\/span>/);
    assert.match(card("db-01-pg"), publicStatus ? /In maintenance until <time datetime="[^"]+" title="[^"]+">[^<]+<\/time><\/p>/ : /In maintenance until <time datetime="[^"]+" title="[^"]+">[^<]+<\/time>: vacuum<\/p>/);
    if (publicStatus) assert.ok(!page.includes("backups") && !page.includes("vacuum"), "a public page shows no operator's note");
  }
});
