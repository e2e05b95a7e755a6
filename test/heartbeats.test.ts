/**
 * Heartbeats decided through the store's one write path, on both engines, with chosen times: what each ping
 * and each deadline stores, the state it leaves (new, late, down, up), and what it queues in the outbox. A
 * deadline looked at twice (two nodes) stores one missed entry and one DOWN.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { serviceViews } from "../src/http/views.ts";
import type { CheckRun, Ping } from "../src/domain/batch.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import type { Store } from "../src/store/store.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { notifications, open } from "./support/raw.ts";

const t0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const s = 1000;

async function heartbeat(t: TestContext, db: string, check: object): Promise<{ store: Store; key: number }> {
  const store = await open(db, { mode: "write" });
  t.after(() => store.close());
  await store.applyServers(new Map([["db1", serverDocument.parse({ services: [{ id: "backup", check: { type: "heartbeat", ...check } }] })]]), { now: t0 });
  const { key } = await store.findService("db1", "backup");
  assert.ok(key !== undefined);
  return { store, key };
}

const ping = (key: number, at: number, signal: Ping["signal"] = "success", more: Partial<Ping> = {}): CheckRun => ({
  kind: "ping", serviceKey: key, at, ping: { signal, exitCode: null, body: null, runId: null, ...more },
});
const deadline = (key: number, at: number): CheckRun => ({ kind: "deadline", serviceKey: key, at });

async function state(store: Store, now: number) {
  const [view] = await serviceViews(store, now, "db1", "backup");
  return view!.state;
}

async function entries(store: Store, key: number) {
  const { entries } = await store.readEntries(key, { limit: 100 });
  return entries.reverse().map((e) => ({ at: (e.checkedAt - t0) / s, kind: e.kind, ok: e.ok, errorKind: e.errorKind, durationMs: e.durationMs, exitCode: e.exitCode, body: e.body }));
}

const outbox = async (store: Store) => (await notifications(store)).map((n) => `${n.kind}@${(n.createdAt - t0) / s}`);

for (const engine of engines) {
  test(`${engine}: a heartbeat is new, then late past its due time, then missed past its grace (once per period), and up again with a ping`, async (t) => {
    const { store, key } = await heartbeat(t, await testDatabase(t, engine), { periodSeconds: 60, graceSeconds: 10 });
    assert.deepEqual(
      { ...(await state(store, t0 + 30 * s)) },
      { ...(await state(store, t0 + 30 * s)), status: "new", nextDueAt: new Date(t0 + 60 * s).toISOString(), lastPingAt: null },
    );
    assert.equal((await state(store, t0 + 65 * s)).status, "late", "past the due time, within its grace: late, not yet a failure");
    assert.deepEqual(await outbox(store), []);

    // Past due + grace: a missed entry, a failure; threshold 0, so the first one publishes.
    const [missed] = await store.recordResults([deadline(key, t0 + 70 * s)], t0 + 70 * s);
    assert.equal(missed!.entry?.kind, "missed");
    assert.match(missed!.entry!.error!, /no ping by 2026-06-01T12:01:00Z and its grace of 10s \(never pinged\)/);
    assert.equal((await state(store, t0 + 71 * s)).status, "down");
    // A second look at the same deadline (another node, a retried batch) finds nothing missing.
    const [again] = await store.recordResults([deadline(key, t0 + 70 * s), deadline(key, t0 + 71 * s)], t0 + 71 * s);
    assert.equal(again!.entry, null);
    // Another period without a ping: another missed entry, no second DOWN.
    await store.recordResults([deadline(key, t0 + 130 * s)], t0 + 130 * s);
    // A ping: up, and the next due time a period after it.
    await store.recordResults([ping(key, t0 + 140 * s)], t0 + 140 * s);
    const up = await state(store, t0 + 141 * s);
    assert.equal(up.status, "up");
    assert.equal(up.lastPingAt, new Date(t0 + 140 * s).toISOString());
    assert.equal(up.nextDueAt, new Date(t0 + 200 * s).toISOString());
    assert.deepEqual(
      (await entries(store, key)).map((e) => `${e.kind}@${e.at}:${e.ok}`),
      ["missed@70:false", "missed@130:false", "success@140:true"],
    );
    assert.deepEqual(await outbox(store), ["down@70", "recovered@140"]);
    const [down] = await notifications(store);
    assert.equal(down!.message.title, "DOWN: db1/backup");
    assert.doesNotMatch(down!.message.message ?? "", /URL:/, "a heartbeat has no URL to show");
    assert.equal(down!.message.click, undefined);
  });

  test(`${engine}: runs: a start and its finish give durationMs; too short, too long, a fail and an exit code fail; a log changes nothing`, async (t) => {
    const { store, key } = await heartbeat(t, await testDatabase(t, engine), { periodSeconds: 3600, minRunSeconds: 10, maxRunSeconds: 60 });
    const record = (...runs: CheckRun[]) => store.recordResults(runs, Math.max(...runs.map((r) => (r.kind === "ping" || r.kind === "deadline" ? r.at : 0))));
    await record(ping(key, t0 + 100 * s, "start"));
    assert.equal((await state(store, t0 + 101 * s)).lastStartAt, new Date(t0 + 100 * s).toISOString());
    await record(ping(key, t0 + 130 * s, "success", { body: "42 tables dumped" }));
    let now = await state(store, t0 + 131 * s);
    assert.deepEqual([now.status, now.lastDurationMs, now.lastStartAt], ["up", 30_000, null]);

    await record(ping(key, t0 + 200 * s, "start"), ping(key, t0 + 205 * s, "success"));
    assert.equal((await state(store, t0 + 206 * s)).status, "down", "5 s is sooner than minRunSeconds (10)");
    await record(ping(key, t0 + 300 * s, "log", { body: "half way" }));
    assert.equal((await state(store, t0 + 301 * s)).status, "down", "a log changes no state");

    // Overlapping runs are paired by rid; a start with no finish by maxRunSeconds is too long.
    const a = "0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e";
    const b = "6c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5";
    await record(ping(key, t0 + 400 * s, "start", { runId: a }), ping(key, t0 + 410 * s, "start", { runId: b }));
    await record(ping(key, t0 + 425 * s, "exit", { runId: a, exitCode: 0 }));
    now = await state(store, t0 + 426 * s);
    assert.deepEqual([now.status, now.lastDurationMs], ["up", 25_000]);
    assert.equal(now.lastStartAt, new Date(t0 + 410 * s).toISOString(), "run b still goes");
    const [late] = await record(deadline(key, t0 + 470 * s));
    assert.equal(late!.entry?.errorKind, "too-long");
    await record(ping(key, t0 + 500 * s, "exit", { exitCode: 3, body: "disk full" }));
    await record(ping(key, t0 + 600 * s, "success"), ping(key, t0 + 700 * s, "fail"));

    assert.deepEqual(
      (await entries(store, key)).map((e) => [e.at, e.kind, e.ok, e.errorKind, e.durationMs, e.exitCode, e.body]),
      [
        [100, "start", true, null, null, null, null],
        [130, "success", true, null, 30_000, null, "42 tables dumped"],
        [200, "start", true, null, null, null, null],
        [205, "success", false, "too-short", 5_000, null, null],
        [300, "log", true, null, null, null, "half way"],
        [400, "start", true, null, null, null, null],
        [410, "start", true, null, null, null, null],
        [425, "exit", true, null, 25_000, 0, null],
        [470, "too-long", false, "too-long", 60_000, null, null],
        // The run b reported too long finishes at last: its entry carries its duration, start (410) to finish.
        [500, "exit", false, "exit", 90_000, 3, "disk full"],
        [600, "success", true, null, null, null, null],
        [700, "fail", false, "fail", null, null, null],
      ],
    );
    assert.deepEqual(await outbox(store), ["down@205", "recovered@425", "down@470", "recovered@600", "down@700"]);
  });
}
