/**
 * The migration history on both engines: every intermediate stage, with rows in that stage's schema, migrates
 * to the latest keeping every row. Fixtures are SQL by nature (no interface writes an old schema); they are
 * written once for both engines (column lists, TRUE/FALSE), and values are read back engine-neutrally.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { serverDocument } from "../src/domain/schema/index.ts";
import { migrationNames } from "../src/store/migrate.ts";
import type { KyselyStore } from "../src/store/kysely-store.ts";
import { notifications, open as openStore, rawQuery } from "./support/raw.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";

const [created, fixed, cascade, defaults, disjunctive, nonUnique] = migrationNames;

async function open(t: TestContext, engine: TestEngine, target?: string): Promise<KyselyStore> {
  const store = await openStore(target ?? (await testDatabase(t, engine)), { mode: "raw" });
  t.after(() => store.close());
  return store;
}

const exec = async (store: KyselyStore, ...statements: string[]) => {
  for (const s of statements) await rawQuery(store, s);
};
const rows = (store: KyselyStore, statement: string) => rawQuery(store, statement);
const count = async (store: KyselyStore, table: string) => Number((await rows(store, `SELECT count(*) AS n FROM ${table}`))[0]!.n);
const migrate = (store: KyselyStore, target?: string) => store.backend.migrate(target);

/** Representative rows for a database stopped after `stage`, in that stage's schema. */
const fixtures: Record<string, (store: KyselyStore) => Promise<void>> = {
  [created!]: (store) =>
    exec(
      store,
      `INSERT INTO servers (id, name) VALUES ('web-01', 'Web'), ('db-01', NULL)`,
      `INSERT INTO services (key, server_id, id, name) VALUES (1, 'web-01', 'home', 'Homepage'), (2, 'web-01', 'api', NULL), (3, 'db-01', 'pg', 'PG')`,
      `INSERT INTO http_check_configs (service_key, url, method, interval_seconds, timeout_ms, expected_status, notify, notify_threshold)
       VALUES (1, 'https://example.org/', 'GET', 30, 5000, 200, TRUE, 3),
        (2, 'https://example.org/api', NULL, NULL, NULL, NULL, NULL, NULL), (3, 'http://db/', 'HEAD', 60, 1000, 204, FALSE, 0)`,
      `INSERT INTO health_check_data_entries (id, service_key, checked_at, ok, status, latency_ms, error) VALUES
        (1, 1, '2026-01-01T00:00:00.000Z', TRUE, 200, 12.5, NULL),
        (2, 1, '2026-01-01T00:01:00.000Z', FALSE, 500, 30, 'status 500'),
        (3, 3, '2026-01-01T00:00:00.000Z', TRUE, 204, 1, NULL)`,
    ),
  [fixed!]: (store) => fixtureAfterFix(store),
  [cascade!]: (store) => fixtureAfterFix(store),
  [defaults!]: (store) => fixtureAfterFix(store),
  [disjunctive!]: (store) => fixtureWithExpect(store, false),
  [nonUnique!]: (store) => fixtureWithExpect(store, true),
};

const serverRows = `INSERT INTO servers (id, name, created_at, updated_at) VALUES ('web-01', 'Web', 1, 1), ('db-01', 'db-01', 1, 1)`;
const serviceRows = `INSERT INTO services (key, server_id, id, name, created_at, updated_at)
  VALUES (1, 'web-01', 'home', 'Homepage', 1, 1), (2, 'web-01', 'api', 'api', 1, 1), (3, 'db-01', 'pg', 'PG', 1, 1)`;
const checkColumns = `service_key, url, method, headers, body, interval_seconds, cron, timeout_ms, follow_redirects, verify_tls`;

function fixtureAfterFix(store: KyselyStore): Promise<void> {
  return exec(
    store,
    serverRows,
    serviceRows,
    `INSERT INTO http_check_configs (${checkColumns}, expected_status, notify, notify_threshold, notify_topic) VALUES
      (1, 'https://example.org/', 'GET', '{}', NULL, 30, NULL, 5000, TRUE, TRUE, 200, TRUE, 3, NULL),
      (2, 'https://example.org/api', 'GET', '{"accept":"application/json"}', NULL, NULL, '*/5 * * * *', 10000, TRUE, TRUE, NULL, TRUE, 2, 'ops'),
      (3, 'http://db/', 'HEAD', '{}', NULL, 60, NULL, 1000, FALSE, FALSE, 204, FALSE, 0, NULL)`,
    `INSERT INTO health_check_data_entries (id, service_key, checked_at, ok, status, latency_ms, error_kind, error) VALUES
      (1, 1, 1767225600000, TRUE, 200, 12.5, NULL, NULL),
      (2, 1, 1767225660000, FALSE, 500, 30, 'status', 'status 500'),
      (3, 3, 1767225600000, TRUE, 204, 1, NULL, NULL)`,
  );
}

function fixtureWithExpect(store: KyselyStore, withoutUnique: boolean): Promise<void> {
  const entry = `INSERT INTO health_check_data_entries (id, service_key, checked_at, ok, status, latency_ms, error_kind, error, matched) VALUES`;
  return exec(
    store,
    serverRows,
    serviceRows,
    `INSERT INTO http_check_configs (${checkColumns}, expect, notify, notify_threshold, notify_topic) VALUES
      (1, 'https://example.org/', 'GET', '{}', NULL, 30, NULL, 5000, TRUE, TRUE, '[{"status":200}]', TRUE, 3, NULL),
      (2, 'https://example.org/api', 'GET', '{"accept":"application/json"}', NULL, NULL, '*/5 * * * *', 10000, TRUE, TRUE, '[{"status":"2xx"}]', TRUE, 2, 'ops'),
      (3, 'http://db/', 'HEAD', '{}', NULL, 60, NULL, 1000, FALSE, FALSE, '[{"status":204}]', FALSE, 0, NULL)`,
    `${entry} (1, 1, 1767225600000, TRUE, 200, 12.5, NULL, NULL, 0),
      (2, 1, 1767225660000, FALSE, 500, 30, 'status', 'status 500', NULL),
      (3, 3, 1767225600000, TRUE, 204, 1, NULL, NULL, 0)`,
    ...(withoutUnique ? [`${entry} (4, 3, 1767225600000, TRUE, 204, 1, NULL, NULL, 0)`] : []),
  );
}

/** The schema as the engine describes it, to see that a second run changes nothing. */
function schema(store: KyselyStore): Promise<Record<string, unknown>[]> {
  return store.engine === "sqlite"
    ? rows(store, "SELECT name, sql FROM sqlite_master ORDER BY name")
    : rows(
        store,
        `SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns
         WHERE table_schema = 'public' ORDER BY table_name, column_name`,
      );
}

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

for (const engine of engines) {
  test(`${engine}: a new database migrates to the latest schema, and again changes nothing`, async (t) => {
    const store = await open(t, engine);
    const first = await migrate(store);
    assert.ok(first.ok, first.ok ? "" : first.error.message);
    assert.deepEqual(first.applied, migrationNames);
    const before = await schema(store);
    assert.ok(before.length > 5);
    const second = await migrate(store);
    assert.ok(second.ok);
    assert.deepEqual(second.applied, []);
    assert.deepEqual(await schema(store), before);
    assert.deepEqual(await store.backend.pendingMigrations(), []);
    if (engine === "sqlite") {
      assert.deepEqual(await rows(store, "PRAGMA journal_mode"), [{ journal_mode: "wal" }]);
      assert.deepEqual(await rows(store, "PRAGMA foreign_keys"), [{ foreign_keys: 1 }]);
    }
  });

  for (const stage of migrationNames.slice(0, 6)) {
    test(`${engine}: a database stopped after ${stage} keeps every row when it migrates to latest`, async (t) => {
      const store = await open(t, engine);
      assert.ok((await migrate(store, stage)).ok);
      await fixtures[stage]!(store);
      const entriesBefore = await count(store, "health_check_data_entries");
      const report = await migrate(store);
      assert.ok(report.ok, report.ok ? "" : report.error.message);
      assert.equal(await count(store, "servers"), 2);
      assert.equal(await count(store, "services"), 3);
      assert.equal(await count(store, "http_check_configs"), 3);
      assert.equal(await count(store, "health_check_data_entries"), entriesBefore);
      if (engine === "sqlite") {
        assert.deepEqual(await rows(store, "PRAGMA foreign_key_check"), []);
        assert.deepEqual(await rows(store, "PRAGMA integrity_check"), [{ integrity_check: "ok" }]);
      }
      const checks = await rows(store, "SELECT service_key, expect, notify, notify_threshold FROM http_check_configs ORDER BY service_key");
      assert.deepEqual(
        checks.map((c) => [c.service_key, c.expect, Boolean(c.notify), c.notify_threshold]),
        [
          [1, '[{"status":200}]', true, 3],
          [2, '[{"status":"2xx"}]', true, 2],
          [3, '[{"status":204}]', false, 0],
        ],
      );
      const [entry] = await rows(store, "SELECT checked_at, ok, status, latency_ms FROM health_check_data_entries WHERE id = 2");
      assert.deepEqual([entry!.checked_at, Boolean(entry!.ok), entry!.status, entry!.latency_ms], [1767225660000, false, 500, 30]);
      // The store reads the migrated rows as the checks they were.
      const scheduled = await store.scheduledServices();
      assert.deepEqual(
        scheduled.map((s) => [s.serverId, s.serviceId, s.check.type === "http" && s.check.method, s.check.type === "http" && s.check.followRedirects, s.check.notifyTopic]),
        [
          ["web-01", "home", "GET", true, null],
          ["web-01", "api", "GET", true, stage === created ? null : "ops"],
          ["db-01", "pg", "HEAD", stage === created, null],
        ],
      );
    });
  }

  test(`${engine}: a migration run that fails is rolled back whole`, async (t) => {
    const store = await open(t, engine);
    assert.ok((await migrate(store, created)).ok);
    if (engine === "sqlite") {
      // An orphan (SQLite lets one in with foreign keys off) fails the check before COMMIT.
      await exec(store, "PRAGMA foreign_keys = OFF", `INSERT INTO services (key, server_id, id, name) VALUES (1, 'no-such-server', 'orphan', 'x')`, "PRAGMA foreign_keys = ON");
    } else {
      // A time that looks like one but is not (month 13) fails the conversion to Unix ms.
      await exec(
        store,
        `INSERT INTO servers (id, name) VALUES ('s', 's')`,
        `INSERT INTO services (key, server_id, id, name) VALUES (1, 's', 'orphan', 'x')`,
        `INSERT INTO health_check_data_entries (service_key, checked_at, ok) VALUES (1, '2026-13-45T00:00:00Z', TRUE)`,
      );
    }
    const report = await migrate(store);
    assert.equal(report.ok, false);
    assert.match(!report.ok ? report.error.message : "", engine === "sqlite" ? /foreign keys/ : /migration \d+_fix_health_check_tables failed/);
    assert.equal((await store.backend.pendingMigrations()).length, migrationNames.length - 1);
    assert.deepEqual(
      (await rows(store, "SELECT key, server_id, id, name FROM services")).map((r) => [r.key, r.id, r.name]),
      [[1, "orphan", "x"]],
    );
  });

  test(`${engine}: a database migrated by a newer healthd is refused and left alone`, async (t) => {
    const target = await testDatabase(t, engine);
    const store = await open(t, engine, target);
    assert.ok((await migrate(store)).ok);
    await exec(store, `INSERT INTO kysely_migration (name, timestamp) VALUES ('29990101000000_from_the_future', '2999-01-01T00:00:00Z')`);
    const report = await migrate(store);
    assert.equal(report.ok, false);
    assert.match(!report.ok ? report.error.message : "", /newer healthd.*29990101000000_from_the_future.*upgrade healthd/);
    await assert.rejects(store.backend.pendingMigrations(), /newer healthd/);
    await assert.rejects(openStore(target, { mode: "read" }), /newer healthd/);
  });

  test(`${engine}: deleting a server or a service deletes everything that references it`, async (t) => {
    const store = await open(t, engine);
    assert.ok((await migrate(store, nonUnique)).ok);
    await fixtures[nonUnique!]!(store);
    assert.ok((await migrate(store)).ok);
    await exec(store, `INSERT INTO service_states (service_key, status, last_entry_id) VALUES (1, 'down', 2), (3, 'up', 4)`);

    await exec(store, `DELETE FROM services WHERE key = 1`);
    const keys = async (statement: string) => (await rows(store, statement)).map((r) => r.service_key);
    assert.deepEqual(await keys("SELECT service_key FROM http_check_configs ORDER BY 1"), [2, 3]);
    assert.deepEqual(await keys("SELECT DISTINCT service_key FROM health_check_data_entries"), [3]);
    assert.deepEqual(await keys("SELECT service_key FROM service_states"), [3]);

    await exec(store, `DELETE FROM servers WHERE id = 'db-01'`);
    assert.equal(await count(store, "services"), 1);
    assert.equal(await count(store, "health_check_data_entries"), 0);
    assert.equal(await count(store, "service_states"), 0);
    assert.equal(await count(store, "http_check_configs"), 1);
  });

  test(`${engine}: notify and notifyThreshold defaults come from the schema; identical entries may coexist`, async (t) => {
    const store = await open(t, engine);
    assert.ok((await migrate(store)).ok);
    await exec(
      store,
      `INSERT INTO servers (id, name, created_at, updated_at) VALUES ('s', 's', 1, 1)`,
      `INSERT INTO services (key, server_id, id, name, created_at, updated_at) VALUES (1, 's', 'a', 'a', 1, 1)`,
      `INSERT INTO http_check_configs (service_key, url, method, headers, timeout_ms, follow_redirects, verify_tls)
       VALUES (1, 'http://a/', 'GET', '{}', 1000, TRUE, TRUE)`,
    );
    const [check] = await rows(store, "SELECT notify, notify_threshold, expect FROM http_check_configs");
    assert.deepEqual([Boolean(check!.notify), check!.notify_threshold, check!.expect], [true, 2, '[{"status":"2xx"}]']);
    const entry = `INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms) VALUES (1, 5, TRUE, 200, 1.5)`;
    await exec(store, entry, entry);
    assert.equal(await count(store, "health_check_data_entries"), 2);
  });
}

for (const engine of engines) {
  test(`${engine}: an incident open before the alerting controls gets its record, its DOWN counted as sent at its opening`, async (t) => {
    const store = await open(t, engine);
    assert.ok((await migrate(store, "20261123000300_add_alerting_settings")).ok);
    await exec(
      store,
      serverRows,
      serviceRows,
      `INSERT INTO http_check_configs (${checkColumns}, expect) VALUES
        (1, 'https://example.org/', 'GET', '{}', NULL, 60, NULL, 1000, TRUE, TRUE, '[{"status":"2xx"}]'),
        (2, 'https://example.org/api', 'GET', '{}', NULL, 60, NULL, 1000, TRUE, TRUE, '[{"status":"2xx"}]'),
        (3, 'http://db/', 'GET', '{}', NULL, 60, NULL, 1000, TRUE, TRUE, '[{"status":"2xx"}]')`,
      `INSERT INTO service_states (service_key, status, consecutive_failures, last_checked_at, incident_open_since, failing_since)
       VALUES (1, 'down', 5, 5000, 3000, 1000), (2, 'up', 0, 5000, NULL, NULL)`,
      `INSERT INTO notifications (created_at, server_id, service_id, kind, topic, message, status, next_attempt_at)
       VALUES (3000, 'web-01', 'home', 'down', NULL, '{"title":"DOWN: web-01/home"}', 'delivered', 3000)`,
    );
    const report = await migrate(store);
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    const [incident] = await rows(store, "SELECT id, service_key, server_id, service_id, opened_at, closed_at, failures, notified FROM incidents");
    assert.deepEqual(
      [incident!.service_key, incident!.server_id, incident!.service_id, incident!.opened_at, incident!.closed_at, incident!.failures, Boolean(incident!.notified)],
      [1, "web-01", "home", 3000, null, 5, true],
    );
    const states = await rows(store, "SELECT service_key, incident_id, down_sent, last_reminded_at, consecutive_passes FROM service_states ORDER BY service_key");
    assert.deepEqual(
      states.map((s) => [s.service_key, s.incident_id, Boolean(s.down_sent), s.last_reminded_at, s.consecutive_passes]),
      [[1, incident!.id, true, 3000, 0], [2, null, true, null, 0]],
    );
    assert.deepEqual(await rows(store, "SELECT kind, status, incident_id FROM notifications"), [{ kind: "down", status: "delivered", incident_id: null }]);
    // The store reads the incident as open, and a pass closes it with one RECOVERED.
    const [recorded] = await store.recordResults(
      [{ serviceKey: 1, outcome: { ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt: 6000 } }],
      Date.now(),
    );
    assert.deepEqual([recorded?.notices, recorded?.incident?.id, recorded?.incident?.closed], [["recovered"], incident!.id, true]);
  });
}

for (const engine of engines) {
  test(`${engine}: the outbox before channels goes to the ntfy channel: pending rows are claimed for it, what ntfy answered is kept`, async (t) => {
    const store = await open(t, engine);
    assert.ok((await migrate(store, "20261126000700_add_sessions")).ok);
    await exec(
      store,
      `INSERT INTO notifications (created_at, server_id, service_id, kind, topic, message, status, next_attempt_at, ntfy_id) VALUES
        (1000, 'web-01', 'home', 'down', 'ops', '{"title":"DOWN: web-01/home"}', 'delivered', 1000, 'nt1'),
        (2000, 'web-01', 'home', 'recovered', 'ops', '{"title":"RECOVERED: web-01/home"}', 'pending', 2000, NULL)`,
    );
    const report = await migrate(store);
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    assert.deepEqual(
      (await notifications(store)).map((n) => [n.kind, n.channel, n.status, n.remoteId, n.event]),
      [["down", "ntfy", "delivered", "nt1", null], ["recovered", "ntfy", "pending", null, null]],
    );
    const claimed = await store.claimNotifications("me", 3000, () => 16, []);
    assert.deepEqual(claimed.map((n) => [n.kind, n.channel, n.topic]), [["recovered", "ntfy", "ops"]]);
  });
}

test("postgres: checks rewrite their services' state and rollup rows in place (HOT updates), not in another page", async (t) => {
  const store = await open(t, "postgres");
  assert.ok((await migrate(store)).ok);
  // Enough services to fill several pages. In full pages every update moves its row (none stayed, measured
  // with fillfactor 100); with the room the migration leaves, 384 of 400 states and 160 of 400 rollups stay
  // after three rounds that each rewrite every row (the daemon's batches rewrite a few rows of each page).
  const services = Array.from({ length: 400 }, (_, i) => ({ id: `s${i}`, check: { url: "http://127.0.0.1:9/" } }));
  await store.applyServers(new Map([["web", serverDocument.parse({ services })]]), { now: Date.now() });
  const keys = (await store.scheduledServices()).map((s) => s.key);
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const check = (round: number) =>
    store.recordResults(
      keys.map((serviceKey) => ({ serviceKey, outcome: { ok: true, status: 200, latencyMs: 1 + round, matched: 0, errorKind: null, error: null, checkedAt: hour + round } })),
      Date.now(),
    );
  const pages = async (table: string) => (await rows(store, `SELECT (ctid::text::point)[0] AS page FROM ${table} ORDER BY service_key`)).map((r) => r.page);
  await check(0);
  const before = { states: await pages("service_states"), rollups: await pages("service_rollups") };
  assert.equal(before.states.length, 400);
  for (let round = 1; round <= 3; round++) await check(round);
  const after = { states: await pages("service_states"), rollups: await pages("service_rollups") };
  const stayed = (table: "states" | "rollups") => after[table].filter((page, i) => page === before[table][i]).length;
  assert.ok(stayed("states") >= 300, `${stayed("states")} of 400 state rows stayed in their page`);
  assert.ok(stayed("rollups") >= 100, `${stayed("rollups")} of 400 rollup rows stayed in their page`);
});
