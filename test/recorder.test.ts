/**
 * The recorder is a write buffer: the store decides states. While the store refuses writes, results wait;
 * past the bound the oldest are folded into runs that still count, so no DOWN or RECOVERED is lost.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { Outcome } from "../src/domain/model.ts";
import { systemClock } from "../src/platform/clock.ts";
import { silentLogger } from "../src/platform/log.ts";
import { Recorder } from "../src/runtime/recorder.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { notifications, open, rawQuery } from "./support/raw.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";

const failure = (checkedAt: number): Outcome => ({ ok: false, status: 503, latencyMs: 1, matched: null, errorKind: "status", error: "status 503", checkedAt });
const success = (checkedAt: number): Outcome => ({ ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt });

async function setup(t: TestContext, engine: TestEngine) {
  const store = await open(await testDatabase(t, engine), { mode: "write" });
  t.after(() => store.close());
  const doc = serverDocument.parse({ services: [{ id: "a", check: { url: "http://127.0.0.1:9/", intervalSeconds: 1, timeoutMs: 1000, notifyThreshold: 2 } }] });
  await store.applyServers(new Map([["s", doc]]), { now: Date.now() });
  const [service] = await store.scheduledServices();
  let dropped = 0;
  const recorder = new Recorder(store, { log: silentLogger, clock: systemClock, maxPending: 5, flushMs: 60_000, onDropped: (n) => (dropped += n) });
  return { store, service: service!, recorder, dropped: () => dropped };
}

for (const engine of engines) {
  test(`${engine}: results folded while the store refused writes still open the incident and send its DOWN`, async (t) => {
    const { store, service, recorder, dropped } = await setup(t, engine);
    for (let i = 0; i < 20; i++) recorder.push(service, failure(1_000 + i));
    assert.equal(dropped(), 15);
    await recorder.flushAll();
    const [state] = (await store.services({ serverId: "s" })).map((s) => s.state);
    assert.deepEqual([state!.status, state!.consecutiveFailures], ["down", 20]);
    assert.equal((await store.readEntries(service.key, { limit: 100 })).entries.length, 5, "the five kept as entries");
    assert.deepEqual((await notifications(store)).map((n) => n.kind), ["down"]);
    // The DOWN was called for by the folded run of the 15 oldest results, not by the five kept.
    assert.match((await notifications(store))[0]!.message.message!, /15 consecutive failed checks/);
  });

  test(`${engine}: once the checks running have all finished, their batch is written without waiting for the timer`, { timeout: 30_000 }, async (t) => {
    const { service, store } = await setup(t, engine);
    let told: (count: number) => void;
    const written = new Promise<number>((resolve) => (told = resolve));
    // A timer no test outlives: only caughtUp() can write this batch in time.
    const recorder = new Recorder(store, { log: silentLogger, clock: systemClock, flushMs: 3_600_000, onRecorded: (batch) => told(batch.length) });
    t.after(() => recorder.flushAll());
    recorder.push(service, success(1_000));
    recorder.push(service, success(1_001));
    recorder.caughtUp();
    assert.equal(await written, 2, "one batch of both");
    assert.equal((await store.readEntries(service.key, { limit: 10 })).entries.length, 2);
  });

  test(`${engine}: a result alone is written within flushMs; a batch caughtUp writes in its own turn arms no timer`, async (t) => {
    const { service, store } = await setup(t, engine);
    let told: () => void = () => {};
    const recorder = new Recorder(store, { log: silentLogger, clock: systemClock, flushMs: 77, onRecorded: () => told() });
    t.after(() => recorder.flushAll());
    const timers = t.mock.method(globalThis, "setTimeout");
    const armed = () => timers.mock.calls.filter((call) => call.arguments[1] === 77).length;
    // A ping, say: nothing else comes, so the timer writes it.
    let written = new Promise<void>((resolve) => (told = resolve));
    recorder.push(service, success(1_000));
    await written;
    assert.equal(armed(), 1);
    // A wake-up's checks answering together: caughtUp writes them in the same turn, and no timer is left to
    // wake the daemon 77 ms later for nothing.
    written = new Promise<void>((resolve) => (told = resolve));
    recorder.push(service, success(1_001));
    recorder.push(service, success(1_002));
    recorder.caughtUp();
    await written;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(armed(), 1, "no timer armed for the batch caughtUp wrote");
    assert.equal((await store.readEntries(service.key, { limit: 10 })).entries.length, 3);
  });

  test(`${engine}: a result the store refuses is dropped and counted; the others of its batch are stored`, async (t) => {
    const { store, service, recorder, dropped } = await setup(t, engine);
    // A time no database column takes (NaN): a stand-in for any value the store cannot store.
    const refused = { ...failure(1_001), checkedAt: Number.NaN };
    [failure(1_000), refused, failure(1_002)].forEach((outcome) => recorder.push(service, outcome));
    await recorder.flushAll();
    assert.equal(recorder.writeError, null);
    assert.equal(dropped(), 1);
    const entries = (await store.readEntries(service.key, { limit: 100 })).entries;
    assert.deepEqual(entries.map((e) => e.checkedAt).sort(), [1_000, 1_002]);
    // Both stored failures count in the service's state.
    const [state] = (await store.services({ serverId: "s" })).map((s) => s.state);
    assert.deepEqual([state!.status, state!.consecutiveFailures], ["down", 2]);
  });

  test(`${engine}: a store that refuses every result (a permission taken away, say) loses none: they wait whole`, async (t) => {
    const { store, service, recorder, dropped } = await setup(t, engine);
    // Not an outage the store recognizes: every insert of an entry is refused, as a revoked grant would be.
    const refuse =
      engine === "sqlite"
        ? ["CREATE TRIGGER refuse BEFORE INSERT ON health_check_data_entries BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"]
        : [
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
            "CREATE TRIGGER refuse BEFORE INSERT ON health_check_data_entries FOR EACH ROW EXECUTE FUNCTION refuse()",
          ];
    for (const statement of refuse) await rawQuery(store, statement);
    [1_000, 1_001, 1_002].forEach((at) => recorder.push(service, failure(at)));
    await recorder.flush();
    assert.match(recorder.writeError?.message ?? "", /refused by the test/);
    assert.equal(dropped(), 0);
    assert.equal(recorder.pending, 3);
    await rawQuery(store, engine === "sqlite" ? "DROP TRIGGER refuse" : "DROP TRIGGER refuse ON health_check_data_entries");
    await recorder.flushAll();
    assert.equal(recorder.writeError, null);
    assert.equal((await store.readEntries(service.key, { limit: 100 })).entries.length, 3);
  });

  test(`${engine}: listeners that throw do not make a stored batch look refused: each result is stored once`, async (t) => {
    const { store, service } = await setup(t, engine);
    const told: string[] = [];
    const recorder = new Recorder(store, {
      log: silentLogger,
      clock: systemClock,
      flushMs: 60_000,
      onRecorded: (batch) => {
        told.push(`recorded ${batch.length}`);
        throw new Error("a listener that fails");
      },
      onWritten: (ms, runs) => {
        told.push(`written ${runs} in ${ms > 0 ? "some" : "no"} time`);
        throw new Error("another");
      },
    });
    recorder.push(service, failure(1_000));
    recorder.push(service, failure(1_001));
    await recorder.flushAll();
    assert.deepEqual(told, ["recorded 2", "written 2 in some time"]);
    assert.equal(recorder.writeError, null);
    assert.equal((await store.readEntries(service.key, { limit: 100 })).entries.length, 2);
  });

  test(`${engine}: a flapping service's folded runs keep every DOWN and RECOVERED, in order`, async (t) => {
    const { store, service, recorder } = await setup(t, engine);
    // The store refuses writes, as a full disk or a lost database would.
    if (engine === "sqlite") await rawQuery(store, "PRAGMA query_only = 1");
    const pattern = [false, false, false, true, false, false, false, true, true];
    pattern.forEach((ok, i) => recorder.push(service, ok ? success(1_000 + i) : failure(1_000 + i)));
    await recorder.flush();
    if (engine === "sqlite") {
      assert.notEqual(recorder.writeError, null);
      await rawQuery(store, "PRAGMA query_only = 0");
    }
    await recorder.flushAll();
    assert.equal(recorder.writeError, null);
    assert.deepEqual((await notifications(store)).map((n) => n.kind), ["down", "recovered", "down", "recovered"]);
    const [state] = (await store.services({ serverId: "s" })).map((s) => s.state);
    assert.deepEqual([state!.status, state!.consecutiveFailures, state!.incidentOpenSince], ["up", 0, null]);
  });
}
