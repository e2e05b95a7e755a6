/**
 * The outbox's claim writes the lease in SQL (store/queries/outbox.ts: a claimant's lease is judged in the
 * statement that takes the rows). This holds it to the policy's rule (policy/lease.ts isLive) at the boundary,
 * on both engines: another process takes a delivery over exactly when the claimant's lease runs out.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { serverDocument } from "../src/domain/schema/index.ts";
import { isLive, leaseEnd } from "../src/policy/lease.ts";
import { notifications, open } from "./support/raw.ts";
import { engines, testDatabase } from "./support/databases.ts";

for (const engine of engines) {
  test(`${engine}: a delivery claimed by a node is another's to claim from the moment the node's lease runs out, as isLive says`, async (t) => {
    const store = await open(await testDatabase(t, engine), { mode: "write" });
    t.after(() => store.close());
    const t0 = Date.now();
    const doc = serverDocument.parse({ services: [{ id: "home", check: { url: "http://127.0.0.1:9/", notifyThreshold: 0 } }] });
    await store.applyServers(new Map([["web", doc]]), { now: t0 });
    const [service] = await store.scheduledServices();
    const failed = { ok: false as const, status: 503, latencyMs: 1, matched: null, errorKind: "status" as const, error: "status 503", checkedAt: t0 };
    await store.recordResults([{ serviceKey: service!.key, outcome: failed }], t0);
    assert.deepEqual((await notifications(store)).map((n) => [n.kind, n.status]), [["down", "pending"]]);

    const node = { name: "a", instance: "a-1", host: "localhost", pid: process.pid, location: "default", version: "test", startedAt: t0, lastSeenAt: t0, leaseMs: 15_000 };
    assert.equal(await store.registerNode(node, t0), undefined);
    assert.equal((await store.claimNotifications("a-1", t0, () => 16, [])).length, 1);

    const end = leaseEnd(node);
    for (const at of [end - 1, end]) {
      const taken = await store.claimNotifications("b-1", at, () => 16, []);
      assert.equal(taken.length === 1, !isLive(node, at), `at the lease's end ${at - end} ms: claimed ${taken.length}`);
    }
  });
}
