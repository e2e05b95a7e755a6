import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { openStore, type Store } from "../src/store/db.ts";
import { migrate, migrationNames, pendingMigrations } from "../src/store/migrate.ts";
import { tempDbPath } from "./support/temp.ts";

const [created, fixed, cascade, defaults, disjunctive, nonUnique] = migrationNames;

function open(t: TestContext, path = tempDbPath(t)): Store {
  const store = openStore(path);
  t.after(() => store.close());
  return store;
}

const exec = (store: Store, ...statements: string[]) => statements.forEach((s) => store.sqlite.exec(s));
const count = (store: Store, table: string) =>
  (store.sqlite.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
const rows = (store: Store, sql: string) => store.sqlite.prepare(sql).all() as Record<string, unknown>[];

/** Representative rows for a database stopped after `stage`, in that stage's schema. */
const fixtures: Record<string, (store: Store) => void> = {
  [created!]: (store) =>
    exec(
      store,
      `INSERT INTO servers VALUES ('web-01', 'Web'), ('db-01', NULL)`,
      `INSERT INTO services VALUES (1, 'web-01', 'home', 'Homepage'), (2, 'web-01', 'api', NULL), (3, 'db-01', 'pg', 'PG')`,
      `INSERT INTO http_check_configs VALUES (1, 'https://example.org/', 'GET', 30, 5000, 200, 1, 3),
        (2, 'https://example.org/api', NULL, NULL, NULL, NULL, NULL, NULL), (3, 'http://db/', 'HEAD', 60, 1000, 204, 0, 0)`,
      `INSERT INTO health_check_data_entries VALUES
        (1, 1, '2026-01-01T00:00:00.000Z', 1, 200, 12.5, NULL),
        (2, 1, '2026-01-01T00:01:00.000Z', 0, 500, 30, 'status 500'),
        (3, 3, '2026-01-01T00:00:00.000Z', 1, 204, 1, NULL)`,
    ),
  [fixed!]: (store) => fixtureAfterFix(store),
  [cascade!]: (store) => fixtureAfterFix(store),
  [defaults!]: (store) => fixtureAfterFix(store),
  [disjunctive!]: (store) => fixtureWithExpect(store, false),
  [nonUnique!]: (store) => fixtureWithExpect(store, true),
};

function fixtureAfterFix(store: Store): void {
  exec(
    store,
    `INSERT INTO servers VALUES ('web-01', 'Web', 1, 1), ('db-01', 'db-01', 1, 1)`,
    `INSERT INTO services VALUES (1, 'web-01', 'home', 'Homepage', 1, 1), (2, 'web-01', 'api', 'api', 1, 1), (3, 'db-01', 'pg', 'PG', 1, 1)`,
    `INSERT INTO http_check_configs VALUES
      (1, 'https://example.org/', 'GET', '{}', NULL, 30, NULL, 5000, 1, 1, 200, 1, 3, NULL),
      (2, 'https://example.org/api', 'GET', '{"accept":"application/json"}', NULL, NULL, '*/5 * * * *', 10000, 1, 1, NULL, 1, 2, 'ops'),
      (3, 'http://db/', 'HEAD', '{}', NULL, 60, NULL, 1000, 0, 0, 204, 0, 0, NULL)`,
    `INSERT INTO health_check_data_entries VALUES
      (1, 1, 1767225600000, 1, 200, 12.5, NULL, NULL),
      (2, 1, 1767225660000, 0, 500, 30, 'status', 'status 500'),
      (3, 3, 1767225600000, 1, 204, 1, NULL, NULL)`,
  );
}

function fixtureWithExpect(store: Store, withoutUnique: boolean): void {
  exec(
    store,
    `INSERT INTO servers VALUES ('web-01', 'Web', 1, 1), ('db-01', 'db-01', 1, 1)`,
    `INSERT INTO services VALUES (1, 'web-01', 'home', 'Homepage', 1, 1), (2, 'web-01', 'api', 'api', 1, 1), (3, 'db-01', 'pg', 'PG', 1, 1)`,
    `INSERT INTO http_check_configs VALUES
      (1, 'https://example.org/', 'GET', '{}', NULL, 30, NULL, 5000, 1, 1, '[{"status":200}]', 1, 3, NULL),
      (2, 'https://example.org/api', 'GET', '{"accept":"application/json"}', NULL, NULL, '*/5 * * * *', 10000, 1, 1, '[{"status":"2xx"}]', 1, 2, 'ops'),
      (3, 'http://db/', 'HEAD', '{}', NULL, 60, NULL, 1000, 0, 0, '[{"status":204}]', 0, 0, NULL)`,
    `INSERT INTO health_check_data_entries VALUES
      (1, 1, 1767225600000, 1, 200, 12.5, NULL, NULL, 0),
      (2, 1, 1767225660000, 0, 500, 30, 'status', 'status 500', NULL),
      (3, 3, 1767225600000, 1, 204, 1, NULL, NULL, 0)`,
    ...(withoutUnique ? [`INSERT INTO health_check_data_entries VALUES (4, 3, 1767225600000, 1, 204, 1, NULL, NULL, 0)`] : []),
  );
}

test("a new database migrates to the latest schema, and again changes nothing", async (t) => {
  const store = open(t);
  const first = await migrate(store);
  assert.ok(first.ok);
  assert.deepEqual(first.applied, migrationNames);
  const schema = rows(store, "SELECT name, sql FROM sqlite_master ORDER BY name");
  const second = await migrate(store);
  assert.ok(second.ok);
  assert.deepEqual(second.applied, []);
  assert.deepEqual(rows(store, "SELECT name, sql FROM sqlite_master ORDER BY name"), schema);
  assert.deepEqual(await pendingMigrations(store), []);
  assert.equal(store.sqlite.pragma("journal_mode", { simple: true }), "wal");
  assert.equal(store.sqlite.pragma("foreign_keys", { simple: true }), 1);
});

test("the history begins with the six steps of the contract, in order", () => {
  assert.deepEqual(
    migrationNames.slice(0, 6).map((n) => n.replace(/^\d{14}_/, "")),
    [
      "create_health_check_tables",
      "fix_health_check_tables",
      "add_cascade_deletion",
      "add_notification_defaults",
      "add_disjunctive_checks",
      "remove_health_check_data_entry_uniqueness",
    ],
  );
  for (const name of migrationNames) assert.match(name, /^\d{14}_[a-z_]+$/);
});

for (const stage of migrationNames.slice(0, 6)) {
  test(`a database stopped after ${stage} keeps every row when it migrates to latest`, async (t) => {
    const store = open(t);
    assert.ok((await migrate(store, stage)).ok);
    fixtures[stage]!(store);
    const entriesBefore = count(store, "health_check_data_entries");
    const report = await migrate(store);
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    assert.equal(count(store, "servers"), 2);
    assert.equal(count(store, "services"), 3);
    assert.equal(count(store, "http_check_configs"), 3);
    assert.equal(count(store, "health_check_data_entries"), entriesBefore);
    assert.deepEqual(rows(store, "PRAGMA foreign_key_check"), []);
    assert.deepEqual(rows(store, "PRAGMA integrity_check"), [{ integrity_check: "ok" }]);
    const checks = rows(store, "SELECT service_key, expect, notify, notify_threshold FROM http_check_configs ORDER BY service_key");
    assert.deepEqual(checks, [
      { service_key: 1, expect: '[{"status":200}]', notify: 1, notify_threshold: 3 },
      { service_key: 2, expect: '[{"status":"2xx"}]', notify: 1, notify_threshold: 2 },
      { service_key: 3, expect: '[{"status":204}]', notify: 0, notify_threshold: 0 },
    ]);
    const entry = rows(store, "SELECT checked_at, ok, status, latency_ms FROM health_check_data_entries WHERE id = 2");
    assert.deepEqual(entry, [{ checked_at: 1767225660000, ok: 0, status: 500, latency_ms: 30 }]);
  });
}

test("a migration run that breaks a foreign key is rolled back whole", async (t) => {
  const store = open(t);
  assert.ok((await migrate(store, created)).ok);
  store.sqlite.pragma("foreign_keys = OFF");
  exec(store, `INSERT INTO services VALUES (1, 'no-such-server', 'orphan', 'x')`);
  store.sqlite.pragma("foreign_keys = ON");
  const report = await migrate(store);
  assert.equal(report.ok, false);
  assert.match(!report.ok ? report.error.message : "", /foreign keys/);
  assert.equal((await pendingMigrations(store)).length, migrationNames.length - 1);
  assert.deepEqual(rows(store, "SELECT * FROM services"), [{ key: 1, server_id: "no-such-server", id: "orphan", name: "x" }]);
});

test("a database migrated by a newer healthd is refused and left alone", async (t) => {
  const path = tempDbPath(t);
  const store = open(t, path);
  assert.ok((await migrate(store)).ok);
  exec(store, `INSERT INTO kysely_migration VALUES ('29990101000000_from_the_future', '2999-01-01T00:00:00Z')`);
  const report = await migrate(store);
  assert.equal(report.ok, false);
  assert.match(!report.ok ? report.error.message : "", /newer healthd.*29990101000000_from_the_future.*upgrade healthd/);
  await assert.rejects(pendingMigrations(store), /newer healthd/);
});

test("deleting a server or a service deletes everything that references it", async (t) => {
  const store = open(t);
  assert.ok((await migrate(store, nonUnique)).ok);
  fixtures[nonUnique!]!(store);
  assert.ok((await migrate(store)).ok);
  exec(store, `INSERT INTO service_states (service_key, status, last_entry_id) VALUES (1, 'down', 2), (3, 'up', 4)`);

  exec(store, `DELETE FROM services WHERE key = 1`);
  assert.deepEqual(rows(store, "SELECT service_key FROM http_check_configs ORDER BY 1"), [{ service_key: 2 }, { service_key: 3 }]);
  assert.deepEqual(rows(store, "SELECT DISTINCT service_key FROM health_check_data_entries"), [{ service_key: 3 }]);
  assert.deepEqual(rows(store, "SELECT service_key FROM service_states"), [{ service_key: 3 }]);

  exec(store, `DELETE FROM servers WHERE id = 'db-01'`);
  assert.equal(count(store, "services"), 1);
  assert.equal(count(store, "health_check_data_entries"), 0);
  assert.equal(count(store, "service_states"), 0);
  assert.equal(count(store, "http_check_configs"), 1);
});

test("notify and notifyThreshold defaults come from the schema; identical entries may coexist", async (t) => {
  const store = open(t);
  assert.ok((await migrate(store)).ok);
  exec(
    store,
    `INSERT INTO servers VALUES ('s', 's', 1, 1)`,
    `INSERT INTO services (key, server_id, id, name, created_at, updated_at) VALUES (1, 's', 'a', 'a', 1, 1)`,
    `INSERT INTO http_check_configs (service_key, url, method, headers, timeout_ms, follow_redirects, verify_tls)
     VALUES (1, 'http://a/', 'GET', '{}', 1000, 1, 1)`,
  );
  assert.deepEqual(rows(store, "SELECT notify, notify_threshold, expect FROM http_check_configs"), [
    { notify: 1, notify_threshold: 2, expect: '[{"status":"2xx"}]' },
  ]);
  const entry = `INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms) VALUES (1, 5, 1, 200, 1.5)`;
  exec(store, entry, entry);
  assert.equal(count(store, "health_check_data_entries"), 2);
});
