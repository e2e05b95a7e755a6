/**
 * The write path beside other writers. On SQLite a batch starts from what the previous batch of its connection
 * left (src/store/memo.ts) while nothing else wrote: these tests write between two batches, from another
 * connection (what `healthd check --record` or `apply` does from another process) and from the same one (a PUT
 * to the daemon), and expect the next batch to decide from the database as it now is.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { serverDocument, serviceDocument } from "../src/domain/schema/index.ts";
import type { Store } from "../src/store/store.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";
import { open } from "./support/raw.ts";

const t0 = Date.parse("2026-01-01T10:00:00Z");
const service = (notifyThreshold: number) => serviceDocument.parse({ id: "web", check: { url: "http://127.0.0.1:9/", notifyThreshold } });

async function opened(t: TestContext, target: string): Promise<Store> {
  const store = await open(target, { mode: "write" });
  t.after(() => store.close());
  return store;
}

/** A store on a fresh database with server "s" holding service "web", and the service's key. */
async function withService(t: TestContext, engine: TestEngine, notifyThreshold: number) {
  const target = await testDatabase(t, engine);
  const store = await opened(t, target);
  await store.applyServers(new Map([["s", serverDocument.parse({ services: [service(notifyThreshold)] })]]), { now: t0 });
  const { key } = await store.findService("s", "web");
  return { target, store, key: key! };
}

/** A failed check of `key`, `seconds` after t0, stored as one batch. */
async function fail(store: Store, key: number, seconds: number) {
  const checkedAt = t0 + seconds * 1000;
  const outcome = { ok: false as const, status: 503, latencyMs: 5, matched: null, errorKind: "status" as const, error: "status 503", checkedAt };
  const [recorded] = await store.recordResults([{ serviceKey: key, outcome }], checkedAt);
  return recorded;
}

for (const engine of engines) {
  test(`${engine}: a batch counts the failures another connection stored since the last one`, async (t) => {
    const { target, store: daemon, key } = await withService(t, engine, 2);
    const other = await opened(t, target);
    assert.equal((await fail(daemon, key, 10))!.state.consecutiveFailures, 1);
    assert.equal((await fail(other, key, 20))!.state.consecutiveFailures, 2);
    // The third consecutive failure exceeds the threshold of 2: DOWN, whoever stored the second.
    const third = (await fail(daemon, key, 30))!;
    assert.equal(third.state.consecutiveFailures, 3);
    assert.deepEqual(third.notices, ["down"]);
    const [hour] = await daemon.rollups(key, 0);
    assert.deepEqual([hour!.checks, hour!.failures], [3, 3], "the hour's rollup holds both connections' checks");
  });

  test(`${engine}: a batch follows a change of settings made through its own connection`, async (t) => {
    const { store, key } = await withService(t, engine, 5);
    assert.deepEqual((await fail(store, key, 10))!.notices, []);
    await store.putService("s", service(1), t0 + 15_000);
    const second = (await fail(store, key, 20))!;
    assert.equal(second.state.consecutiveFailures, 2);
    assert.deepEqual(second.notices, ["down"], "the threshold is 1 now");
    await store.deleteService("s", "web", t0 + 25_000);
    assert.equal(await fail(store, key, 30), undefined, "a deleted service's result has nowhere to go");
  });

  test(`${engine}: a batch follows a service another connection deleted and created again`, async (t) => {
    const { target, store: daemon, key } = await withService(t, engine, 5);
    const other = await opened(t, target);
    await fail(daemon, key, 10);
    await other.deleteService("s", "web", t0 + 15_000);
    assert.equal(await fail(daemon, key, 20), undefined);
    await other.putService("s", service(0), t0 + 25_000);
    const { key: again } = await daemon.findService("s", "web");
    const first = (await fail(daemon, again!, 30))!;
    assert.equal(first.state.consecutiveFailures, 1, "a new service starts from nothing");
    assert.deepEqual(first.notices, ["down"], "with the new service's threshold of 0");
  });

  test(`${engine}: a batch follows silences another connection added and ended`, async (t) => {
    const { target, store: daemon, key } = await withService(t, engine, 5);
    const other = await opened(t, target);
    // A silence of another server, read (and, on SQLite, kept) by the first batch.
    await daemon.applyServers(new Map([["t", serverDocument.parse({ services: [] })]]), { now: t0, prune: false });
    await daemon.addSilence({ serverId: "t", serviceId: null, startsAt: t0, endsAt: t0 + 3_600_000, reason: null }, t0);
    assert.equal((await fail(daemon, key, 10))!.silenced, false);
    const silence = await other.addSilence({ serverId: "s", serviceId: "web", startsAt: t0 + 15_000, endsAt: t0 + 3_600_000, reason: "deploy" }, t0 + 15_000);
    assert.equal((await fail(daemon, key, 20))!.silenced, true, "the silence another connection added counts at once");
    assert.equal((await fail(daemon, key, 25))!.silenced, true);
    assert.ok(typeof silence === "object" && (await other.endSilence(silence.id, t0 + 28_000)));
    assert.equal((await fail(daemon, key, 30))!.silenced, false, "and its early end too");
  });
}
