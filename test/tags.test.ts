/**
 * Tags on services: validated and stored on both engines, shown in GET answers, carried by `healthd copy` and by
 * export and apply; a change of tags alone is a change of labels (the check is not started again); GET
 * /services?tag= counts only the tagged services; Healthchecks.io's API v3 reads and writes them as a
 * space-separated string; the console filters by them.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { renderServersFile, parseServersFile } from "../src/cli/servers-file.ts";
import { copyDatabase } from "../src/store/copy.ts";
import { importFile } from "../src/import/index.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { open, rawQuery } from "./support/raw.ts";
import { migrationNames } from "../src/store/migrate.ts";
import { tempDir } from "./support/temp.ts";

const admin = "tags-admin-token";
const auth = { authorization: `Bearer ${admin}` };
const beat = { type: "heartbeat", periodSeconds: 3600 };

const put = (d: TestDaemon, server: string, body: unknown) => d.api("PUT", `/services/${server}`, body, auth);

for (const engine of engines) {
  test(`${engine}: tags are validated, stored, shown, filtered by GET /services?tag=, and a change of them alone keeps the check's schedule`, async (t) => {
    const d = await testDaemon(t, { engine, token: admin });
    const created = await put(d, "shop", {
      services: [
        { id: "backup", tags: ["Backups", "env:prod"], check: beat },
        { id: "web", tags: ["env:prod"], check: { url: "http://127.0.0.1:9/", paused: true } },
        { id: "plain", check: beat },
      ],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await put(d, "office", { services: [{ id: "printer", tags: ["env:staging"], check: beat }] })).status, 201);

    const shop = (await d.api("GET", "/services/shop", undefined, auth)).body;
    assert.deepEqual(shop.services.map((s: { id: string; tags: string[] }) => [s.id, s.tags]), [["backup", ["backups", "env:prod"]], ["web", ["env:prod"]], ["plain", []]], "lowercased; [] when none");
    assert.deepEqual((await d.api("GET", "/services/shop/backup", undefined, auth)).body.tags, ["backups", "env:prod"]);

    // Refused by name, nothing stored.
    const errors = async (tags: unknown) => {
      const answer = await put(d, "shop", { services: [{ id: "backup", tags, check: beat }] });
      assert.equal(answer.status, 400, JSON.stringify(tags));
      return answer.body.errors.map((e: { path: string; message: string }) => `${e.path}: ${e.message}`).join("; ");
    };
    assert.match(await errors(["ok", "two words"]), /^\/services\/0\/tags\/1: must be 1 to 64 characters of a-z 0-9/);
    assert.match(await errors(Array.from({ length: 21 }, (_, i) => `t${i}`)), /^\/services\/0\/tags: holds at most 20 tags$/);
    assert.match(await errors(["x".repeat(65)]), /tags\/0: must be 1 to 64/);
    const twice = await put(d, "shop", { services: [{ id: "backup", tags: ["ok", "OK"], check: beat }] });
    assert.match(JSON.stringify(twice.body.errors), /names a tag twice/);
    assert.deepEqual((await d.api("GET", "/services/shop/backup", undefined, auth)).body.tags, ["backups", "env:prod"], "nothing stored");

    // ?tag=: the servers with a service carrying every tag given, counting only those services.
    const listed = async (query: string) => (await d.api("GET", `/services${query}`, undefined, auth)).body;
    assert.deepEqual((await listed("?tag=env:prod")).servers.map((s: { id: string; services: string[]; serviceCount: number; paused: number }) => [s.id, s.services, s.serviceCount, s.paused]), [["shop", ["backup", "web"], 2, 1]]);
    assert.deepEqual((await listed("?tag=ENV:PROD,backups")).servers.map((s: { services: string[] }) => s.services), [["backup"]], "several: all of them, any case");
    assert.deepEqual((await listed("?tag=nothing")).servers, []);
    assert.equal((await listed("")).servers.length, 2);
    assert.ok(!("services" in (await listed("")).servers[0]), "without ?tag= the answer is as it was");
    const refused = await d.api("GET", "/services?tag=a%20b", undefined, auth);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.errors[0].path, "/tag/0");
    assert.equal((await d.api("GET", "/services?tag=a&tag=b", undefined, auth)).status, 400, "a repeated parameter, as everywhere");

    // The console: a tag filter as a plain GET parameter (any case), the tags on the rows and the service's page.
    const signedIn = await fetch(`${d.url}/login`, { method: "POST", redirect: "manual", body: new URLSearchParams({ token: admin, next: "/console" }) });
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
    const page = async (path: string) => {
      const answer = await fetch(d.url + path, { headers: { cookie, accept: "text/html" } });
      assert.equal(answer.status, 200, path);
      return answer.text();
    };
    const rows = (text: string) => [...text.matchAll(/<tr id="row-([^"]+)"/g)].map((m) => m[1]).sort();
    assert.deepEqual(rows(await page("/console?tag=ENV:prod")), ["shop--backup", "shop--web"]);
    assert.deepEqual(rows(await page("/console?tag=env:prod&server=shop&kind=heartbeat")), ["shop--backup"], "with the other filters");
    const all = await page("/console");
    assert.equal(rows(all).length, 4);
    assert.match(all, /<option value="env:staging">env:staging<\/option>/, "the tags the token sees are the filter's choices");
    assert.match(all, /<a class="tag" href="\/console\?tag=env%3Aprod">env:prod<\/a>/, "each tag on a row links to the filter");
    assert.match(await page("/console/services/shop/backup"), /Tags: <span class="tags"><a class="tag" href="\/console\?tag=backups">backups<\/a>/);
    assert.equal((await fetch(`${d.url}/console?tag=${"x".repeat(65)}`, { headers: { cookie } })).status, 400, "validated as the other parameters");

    // /metrics keeps one series per service: no tag label (its cardinality would follow what users write).
    const metrics = await d.api("GET", "/metrics", undefined, auth);
    assert.equal(metrics.status, 200);
    assert.doesNotMatch(metrics.body, /\btags?="|env:prod|"backups"/);

    // A change of tags alone: the service is updated ("tags"), its check not started again.
    const doc = (tags: string[]) => ({ services: [{ id: "printer", tags, check: beat }] });
    const retagged = await d.store.applyServers(new Map([["office", serverDocument.parse(doc(["env:prod"]))]]), { now: Date.now() });
    assert.deepEqual(retagged.servers[0]!.services.updated, [{ id: "printer", fields: ["tags"] }]);
    assert.deepEqual(retagged.schedule.started, [], "tags are labels: the check keeps its schedule");
    const same = await put(d, "office", doc(["env:prod"]));
    assert.equal(same.status, 200);
    assert.deepEqual((await d.api("GET", "/services/office/printer", undefined, auth)).body.tags, ["env:prod"]);

    // Export and apply: the file carries them, and applying it again changes nothing.
    const services = await d.store.services();
    const servers = (await d.store.servers()).map((server) => ({ ...server, services: services.filter((s) => s.serverId === server.id) }));
    const yaml = renderServersFile(servers, [], "yaml");
    assert.match(yaml, /tags:\n\s+- backups\n\s+- env:prod/);
    const parsed = parseServersFile(yaml, "servers.yaml", {});
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const again = await d.store.applyServers(parsed.servers, { now: Date.now() });
    assert.deepEqual(again.servers.map((s) => s.outcome), ["unchanged", "unchanged"]);

    // HC's API v3: tags as one space-separated string, written and filtered as HC does.
    const hc = (method: string, path: string, body?: unknown) => d.api(method, `/api/v3${path}`, body, auth);
    assert.deepEqual((await hc("GET", "/checks/?tag=backups")).body.checks.map((c: { slug: string; tags: string }) => [c.slug, c.tags]), [["backup", "backups env:prod"]]);
    const made = await hc("POST", "/checks/", { name: "Nightly", tags: "db  Nightly", timeout: 3600, grace: 60, server: "office" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.tags, "db nightly");
    const changed = await hc("POST", `/checks/${made.body.uuid}`, { name: "Nightly job" });
    assert.equal(changed.body.tags, "db nightly", "left out on update: kept");
    assert.equal((await hc("POST", `/checks/${made.body.uuid}`, { tags: "" })).body.tags, "");
    assert.equal((await hc("POST", `/checks/${made.body.uuid}`, { tags: "a,b" })).status, 400, "a tag healthd cannot keep is refused, as HC refuses invalid fields");
  });
}

for (const engine of engines) {
  test(`${engine}: a service stored before 20261206030000_add_service_tags has no tags after it`, async (t) => {
    const store = await open(await testDatabase(t, engine), { mode: "raw" });
    t.after(() => store.close());
    const migration = "20261206030000_add_service_tags";
    assert.ok((await store.backend.migrate(migrationNames[migrationNames.indexOf(migration) - 1]!)).ok);
    await rawQuery(store, `INSERT INTO servers (id, name, created_at, updated_at) VALUES ('web', 'Web', 1, 1)`);
    await rawQuery(store, `INSERT INTO services (server_id, id, name, created_at, updated_at) VALUES ('web', 'home', 'Home', 1, 1)`);
    const report = await store.backend.migrate();
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    assert.deepEqual(await rawQuery(store, "SELECT id, tags FROM services"), [{ id: "home", tags: "[]" }]);
  });
}

test("healthd copy carries tags from SQLite to PostgreSQL", async (t) => {
  const [source, target] = [await testDatabase(t, "sqlite"), await testDatabase(t, "postgres")];
  const from = await open(source, { mode: "write" });
  t.after(() => from.close());
  await from.applyServers(new Map([["web", serverDocument.parse({ services: [{ id: "a", tags: ["env:prod", "db"], check: beat }, { id: "b", check: beat }] })]]), { now: Date.now() });
  const to = await open(target, { mode: "write" });
  t.after(() => to.close());
  await copyDatabase(from, to);
  assert.deepEqual((await to.services()).map((s) => [s.id, s.tags]), [["a", ["env:prod", "db"]], ["b", []]]);
});

test("imports carry tags: Uptime Kuma's (kuma.db and its JSON backup: name, or name:value) and Healthchecks.io's (space-separated)", (t) => {
  const dir = tempDir(t);
  const kuma = join(dir, "kuma.db");
  kumaDatabase(kuma, [
    { id: 1, name: "Site", type: "http", url: "http://127.0.0.1:1/" },
    { id: 2, name: "Jobs", type: "push", push_token: "A".repeat(32) },
  ], { tags: [{ name: "Env", monitors: [[1, "Prod"], [2, "staging"]] }, { name: "critical", monitors: [[1, null], [2, ""]] }, { name: "My Team", monitors: [[1, null]] }] });
  const fromDb = importFile("uptime-kuma", kuma, readFileSync(kuma), "uptime-kuma");
  const services = (doc: { yaml: string }, server: string) => parse(doc.yaml)[server].services.map((s: { id: string; tags?: string[] }) => [s.id, s.tags]);
  assert.deepEqual(services(fromDb, "uptime-kuma"), [["site", ["env:prod", "critical", "my-team"]], ["jobs", ["env:staging", "critical"]]]);
  assert.ok(fromDb.imported.notes.some((n) => n.includes('"My Team"')), fromDb.imported.notes.join("\n"));

  const backup = join(dir, "backup.json");
  writeFileSync(backup, JSON.stringify({ version: "1.23.0", notificationList: [], monitorList: [
    { id: 1, name: "Shop", type: "http", url: "http://127.0.0.1:1/shop", interval: 60, active: true, tags: [{ tag_id: 1, monitor_id: 1, name: "env", value: "prod", color: "#fff" }, { tag_id: 2, monitor_id: 1, name: "web", value: "", color: "#000" }] },
  ] }));
  assert.deepEqual(services(importFile("uptime-kuma", backup, readFileSync(backup), "uptime-kuma"), "uptime-kuma"), [["shop", ["env:prod", "web"]]]);

  const hc = join(dir, "checks.json");
  writeFileSync(hc, JSON.stringify({ checks: [{ name: "Backups", slug: "backups", tags: "Prod  db prod", timeout: 3600, grace: 60 }, { name: "Plain", slug: "plain", tags: "", timeout: 3600, grace: 60 }] }));
  assert.deepEqual(services(importFile("healthchecks", hc, readFileSync(hc), "healthchecks"), "healthchecks"), [["backups", ["prod", "db"]], ["plain", undefined]]);
});
