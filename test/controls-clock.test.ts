/**
 * The alerting controls where time matters (maintenance windows, reminders, incidents paged by time), driven
 * by a fake clock: results with chosen check times go through the store's one write path, on both engines,
 * and what it queued in the outbox is what would be published.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { Outcome } from "../src/domain/model.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { parseServersFile, renderServersFile } from "../src/cli/servers-file.ts";
import type { Store } from "../src/store/store.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";
import { notifications, open } from "./support/raw.ts";
import { incidentJson } from "../src/http/views.ts";

const minute = 60_000;
const fail = (checkedAt: number): Outcome => ({ ok: false, status: 503, latencyMs: 1, matched: null, errorKind: "status", error: "status 503", checkedAt });
const pass = (checkedAt: number): Outcome => ({ ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt });

async function storeWith(t: TestContext, engine: TestEngine, db: string, server: object): Promise<{ store: Store; key: number }> {
  const store = await open(db, { mode: "write" });
  t.after(() => store.close());
  await store.applyServers(new Map([["web-01", serverDocument.parse(server)]]), { now: Date.now() });
  const found = await store.findService("web-01", "db");
  assert.ok(found.key !== undefined);
  return { store, key: found.key };
}

/** Record results one at a time, each at its time, as the daemon would. */
async function record(store: Store, key: number, outcomes: readonly Outcome[]): Promise<void> {
  for (const outcome of outcomes) await store.recordResults([{ serviceKey: key, outcome }], outcome.checkedAt);
}

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

const kinds = async (store: Store) => (await notifications(store)).map((n) => `${n.kind}@${new Date(n.createdAt).toISOString().slice(11, 16)}`);

for (const engine of engines) {
  test(`${engine}: deleting a service takes it out of its server's maintenance windows, so the server's document still applies`, async (t) => {
    const db = await testDatabase(t, engine);
    const { store } = await storeWith(t, engine, db, {
      services: [{ id: "db", check: { url: "http://127.0.0.1:9/" } }, { id: "app", check: { url: "http://127.0.0.1:9/" } }],
      maintenance: [
        { cron: "0 3 * * 0", durationMinutes: 60, services: ["db"], reason: "db only" },
        { cron: "0 4 * * 0", durationMinutes: 30, services: ["db", "app"] },
        { cron: "0 5 * * 0", durationMinutes: 15 },
      ],
    });
    assert.ok(await store.deleteService("web-01", "db", Date.now()));
    const [server] = await store.servers("web-01");
    // A window that named only the deleted service silences nothing any more: it goes with it.
    assert.deepEqual(server!.maintenance, [
      { cron: "0 4 * * 0", durationMinutes: 30, services: ["app"] },
      { cron: "0 5 * * 0", durationMinutes: 15 },
    ]);
    // What `healthd export` writes of the server is a file `healthd apply` takes back.
    const exported = parseServersFile(renderServersFile([{ ...server!, services: await store.services({ serverId: "web-01" }) }], [], "yaml"), "servers.yaml", {});
    assert.ok(exported.ok, JSON.stringify(exported));
  });

  test(`${engine}: a maintenance window (cron, time zone, duration) silences its services while it lasts, and its end releases a held DOWN`, async (t) => {
    const db = await testDatabase(t, engine);
    // Sundays at 03:00 in Berlin (02:00 UTC in November) for 60 minutes, for db only.
    const { store, key } = await storeWith(t, engine, db, {
      services: [{ id: "db", check: { url: "http://127.0.0.1:9/", intervalSeconds: 60, notifyThreshold: 0 } }, { id: "app", check: { url: "http://127.0.0.1:9/" } }],
      maintenance: [{ cron: "0 3 * * 0", durationMinutes: 60, timezone: "Europe/Berlin", services: ["db"], reason: "weekly backup" }],
    });
    const sunday = Date.parse("2026-11-22T00:00:00Z");
    // Fails and recovers inside the window: nothing.
    await record(store, key, [fail(sunday + 125 * minute), fail(sunday + 126 * minute), pass(sunday + 130 * minute)]);
    assert.deepEqual(await kinds(store), []);
    // Fails inside the window and is still failing when it ends at 03:00 UTC: DOWN at the first check after it.
    await record(store, key, [fail(sunday + 150 * minute), fail(sunday + 179 * minute)]);
    assert.deepEqual(await kinds(store), []);
    await record(store, key, [fail(sunday + 180 * minute), fail(sunday + 181 * minute), pass(sunday + 182 * minute)]);
    assert.deepEqual(await kinds(store), ["down@03:00", "recovered@03:02"]);
    // The incidents are on record, the first one not notified.
    const { incidents } = await store.incidents({ limit: 10 });
    assert.deepEqual(incidents.map((i) => [hhmm(i.openedAt), i.closedAt && hhmm(i.closedAt), i.notified, i.failures]), [
      ["02:30", "03:02", true, 4],
      ["02:05", "02:10", false, 2],
    ]);
    // Outside the window a failure publishes at once.
    await record(store, key, [fail(sunday + 300 * minute)]);
    assert.deepEqual((await kinds(store)).at(-1), "down@05:00");
  });

  test(`${engine}: reminders every remindEveryMinutes while an incident is open, resumed across a restart`, async (t) => {
    const db = await testDatabase(t, engine);
    const server = { services: [{ id: "db", check: { url: "http://127.0.0.1:9/", notifyThreshold: 0, remindEveryMinutes: 60 } }] };
    const first = await storeWith(t, engine, db, server);
    const start = Date.parse("2026-11-23T00:00:00Z");
    await record(first.store, first.key, [0, 30, 59, 60, 61].map((m) => fail(start + m * minute)));
    assert.deepEqual(await kinds(first.store), ["down@00:00", "reminder@01:00"]);
    await first.store.close();

    // The daemon restarts: the stored state says when the last reminder went.
    const again = await open(db, { mode: "write" });
    t.after(() => again.close());
    await record(again, first.key, [90, 119, 120, 150].map((m) => fail(start + m * minute)));
    assert.deepEqual(await kinds(again), ["down@00:00", "reminder@01:00", "reminder@02:00"]);
    const reminder = (await notifications(again)).at(-1)!;
    assert.equal(reminder.message.title, "Still DOWN: web-01/db");
    assert.match(reminder.message.message!, /^still DOWN for 2h 0m \(/);
    assert.equal(reminder.message.priority, 4);
    await record(again, first.key, [pass(start + 151 * minute)]);
    assert.deepEqual((await kinds(again)).at(-1), "recovered@02:31");
  });

  test(`${engine}: incidents page newest first by keyset, filtered by service and by open`, async (t) => {
    const db = await testDatabase(t, engine);
    const { store, key } = await storeWith(t, engine, db, { services: [{ id: "db", check: { url: "http://127.0.0.1:9/", notifyThreshold: 0 } }] });
    const start = Date.parse("2026-11-23T00:00:00Z");
    // Five incidents of a minute each, then a sixth left open.
    for (let i = 0; i < 5; i++) await record(store, key, [fail(start + i * 10 * minute), pass(start + (i * 10 + 1) * minute)]);
    await record(store, key, [fail(start + 60 * minute)]);
    const seen: string[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await store.incidents({ limit: 2, before });
      seen.push(...page.incidents.map((i) => hhmm(i.openedAt)));
      if (page.next === null) break;
      before = page.next;
    }
    assert.deepEqual(seen, ["01:00", "00:40", "00:30", "00:20", "00:10", "00:00"]);
    const open = await store.incidents({ limit: 10, open: true });
    assert.deepEqual(
      open.incidents.map((i) => incidentJson(i, start + 70 * minute)).map((i) => [i.openedAt.slice(11, 16), i.closedAt, i.durationMs, i.failures]),
      [["01:00", null, 10 * minute, 1]],
    );
    assert.equal((await store.incidents({ limit: 10, open: false })).incidents.length, 5);
    assert.equal((await store.incidents({ limit: 10, serverId: "web-01", serviceId: "other" })).incidents.length, 0);
  });
}
