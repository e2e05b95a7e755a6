/** The storage engines from outside: copy between them, one daemon per SQLite file, an unreachable PostgreSQL. */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { Store } from "../src/store/store.ts";
import { runHealthd, serveHealthd } from "./support/cli.ts";
import { testDatabase } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";
import { notifications, open as openStore } from "./support/raw.ts";

/** Everything a user reads back, through the store: documents, states, entries, stats, notifications. */
async function contents(store: Store) {
  const servers = [];
  for (const server of await store.servers()) {
    const services = [];
    for (const service of await store.services({ serverId: server.id })) {
      services.push({ service, entries: await store.readEntries(service.key, { limit: 1000 }), rollups: await store.rollups(service.key, 0) });
    }
    servers.push({ server, services });
  }
  return {
    servers,
    notifications: await notifications(store),
    counts: await store.notificationCounts(),
    incidents: await store.incidents({ limit: 1000 }),
    silences: await store.silences(0),
  };
}

test("copy: SQLite to PostgreSQL and back keeps everything, ids included; a non-empty destination is refused whole", async (t) => {
  const target = await switchableTarget(t);
  const source = tempDbPath(t);
  // A real history: checks that failed (opening an incident, queuing a DOWN) and then passed.
  const d = await testDaemon(t, { db: source });
  // With every kind of row: a maintenance window, a dependency, an incident, a silence.
  await d.api("PUT", "/services/web", {
    services: [
      { id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0 } },
      { id: "other", check: { url: target.url, intervalSeconds: 1, dependsOn: ["home"] } },
    ],
    // About half a day from now, so that the window never silences the DOWN this test waits for (a fixed weekly
    // window did, on Sundays between 02:00 and 02:30 UTC).
    maintenance: [{ cron: `0 ${(new Date().getUTCHours() + 12) % 24} * * *`, durationMinutes: 30, timezone: "Europe/Berlin" }],
  });
  assert.equal((await d.api("POST", "/silences", { server: "web", startsAt: "2099-01-01T00:00:00Z", durationSeconds: 60, reason: "later" })).status, 201);
  await nextEvent(d.events, "check:done", (r: { notices: readonly string[] }) => r.notices.includes("down"));
  target.setUp(true);
  await nextEvent(d.events, "check:done", (r: { notices: readonly string[] }) => r.notices.includes("recovered"));
  await d.stop();

  const pg = await testDatabase(t, "postgres");
  const copied = await runHealthd(["copy", "--from", source, "--to", pg, "--json"]);
  assert.equal(copied.code, 0, copied.stderr);
  const rows = JSON.parse(copied.stdout).copied;
  assert.equal(rows.servers, 1);
  assert.equal(rows.services, 2);
  assert.ok(rows.health_check_data_entries >= 3, JSON.stringify(rows));
  assert.equal(rows.notifications, 2);
  assert.deepEqual([rows.incidents, rows.silences], [1, 1]);

  const [from, to] = [await openStore(source, { mode: "read" }), await openStore(pg, { mode: "read" })];
  t.after(() => Promise.all([from.close(), to.close()]));
  assert.deepEqual(await contents(to), await contents(from));

  const again = await runHealthd(["copy", "--from", source, "--to", pg]);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /is not empty .*nothing was written/);
  assert.equal((await notifications(to)).length, 2);

  // Back into a new SQLite file: the same again.
  const back = join(tempDir(t), "back.db");
  assert.equal((await runHealthd(["copy", "--from", pg, "--to", back])).code, 0);
  const copyBack = await openStore(back, { mode: "read" });
  t.after(() => copyBack.close());
  assert.deepEqual(await contents(copyBack), await contents(from));

  // The copy is a working database: new services and entries get ids after the copied ones.
  const onPg = await testDaemon(t, { db: pg });
  const put = await onPg.api("PUT", "/services/web", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0 } }, { id: "new", check: { url: target.url, intervalSeconds: 1 } }] });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const [done] = await nextEvent<[{ entry: { id: number } }]>(onPg.events, "check:done");
  const lastCopied = Math.max(...(await contents(from)).servers[0]!.services.flatMap((s) => s.entries.entries.map((e) => Number(e.id))));
  assert.ok(Number(done.entry.id) > lastCopied, `${done.entry.id} after ${lastCopied}`);
});

test("a second healthd serve on the same SQLite file is refused with exit 2, naming the running one's pid", async (t) => {
  const db = tempDbPath(t);
  const first = await serveHealthd(t, ["--db", db]);
  const second = await runHealthd(["serve", "--db", db, "--port", "0"]);
  assert.equal(second.code, 2);
  assert.match(second.stderr, new RegExp(`another healthd serve \\(pid ${first.child.pid}\\) is already running on ${db}`));
  // The CLI may still read and write beside it.
  assert.equal((await runHealthd(["export", "--db", db])).code, 0);
  assert.equal(await first.stop(), 0);
  // A stopped daemon leaves the file free; so does one that was killed.
  const third = await serveHealthd(t, ["--db", db]);
  assert.equal(await third.stop("SIGKILL"), null);
  const fourth = await serveHealthd(t, ["--db", db]);
  assert.equal(await fourth.stop(), 0);
});

test("an unreachable PostgreSQL is exit 2 naming host and port, never the password", async (t) => {
  const file = join(tempDir(t), "s.yaml");
  writeFileSync(file, "web: {services: []}\n");
  for (const command of [["serve", "--port", "0"], ["migrate"], ["export"], ["apply", file]]) {
    const run = await runHealthd([...command, "--db", "postgres://healthd:s3cret-pw@127.0.0.1:1/healthd"]);
    assert.equal(run.code, 2, `${command[0]}: ${run.stderr}`);
    assert.match(run.stderr, /^healthd: .*cannot reach PostgreSQL at 127\.0\.0\.1:1 \(connect ECONNREFUSED/m, command[0]);
    assert.doesNotMatch(run.stderr + run.stdout, /s3cret-pw/, command[0]);
  }
  const missing = await runHealthd(["migrate", "--db", "postgres://postgres@127.0.0.1:5432/healthd_no_such_database"]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /database "healthd_no_such_database" does not exist.*createdb -h 127\.0\.0\.1 -p 5432 healthd_no_such_database/);
});

test("healthd apply beside a busy daemon never fails with SQLITE_BUSY", async (t) => {
  const target = await switchableTarget(t);
  target.setUp(true);
  const db = tempDbPath(t);
  const served = await serveHealthd(t, ["--db", db]);
  const services = Array.from({ length: 100 }, (_, i) => ({ id: `s${i}`, check: { url: `${target.url}/${i}`, intervalSeconds: 1 } }));
  // Each answer is read to its end, so that the connection is reused rather than left open.
  const put = async (server: string, more: object[] = []) => {
    const answer = await fetch(`${served.url}/services/${server}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services: [...services, ...more] }) });
    await answer.arrayBuffer();
    return answer;
  };
  assert.equal((await put("busy")).status, 201);
  // API writes keep coming while applies run from other processes, and 100 checks a second are stored.
  let writing = true;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const answer = await put("api", [{ id: `x${i % 3}`, check: { url: target.url } }]).catch((error: Error) => {
        throw new Error(`PUT ${i} failed: ${String(error.cause ?? error)}\n${served.log()}`);
      });
      assert.ok(answer.status < 300, `PUT ${i}: ${answer.status}`);
    }
  })();
  const dir = tempDir(t);
  for (let i = 0; i < 12; i++) {
    const file = join(dir, `s${i}.yaml`);
    writeFileSync(file, `applied:\n  services:\n    - id: a\n      check: {url: "${target.url}/applied/${i}", intervalSeconds: 1}\n`);
    const applied = await runHealthd(["apply", file, "--db", db]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  writing = false;
  await writer;
  assert.equal(await served.stop(), 0);
});
