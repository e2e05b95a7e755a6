/**
 * The lease (src/policy/lease.ts), without a database: who is live, who the list of nodes still shows, and
 * who may take a node's name. The store's part (reading the rows, writing the registration) is tested through
 * the store and the cluster (test/nodes.test.ts, test/trust-single-node.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isListed, isLive, leaseEnd, listedAfterDeathMs, register } from "../src/policy/lease.ts";

const t0 = Date.parse("2026-12-05T10:00:00Z");
const seen = { lastSeenAt: t0, leaseMs: 15_000 };

test("lease: a node is live until its last heartbeat is a lease old, and dead from that moment", () => {
  assert.equal(leaseEnd(seen), t0 + 15_000);
  assert.equal(isLive(seen, t0), true);
  assert.equal(isLive(seen, t0 + 14_999), true);
  assert.equal(isLive(seen, t0 + 15_000), false);
  assert.equal(isLive(seen, t0 + 60_000), false);
});

test("lease: the list of nodes shows a dead node for a day after its lease ran out, then forgets it", () => {
  assert.equal(listedAfterDeathMs, 86_400_000);
  assert.equal(isListed(seen, t0 + 15_000), true);
  assert.equal(isListed(seen, t0 + 15_000 + listedAfterDeathMs - 1), true);
  assert.equal(isListed(seen, t0 + 15_000 + listedAfterDeathMs), false);
});

test("register: a free name, this process's own row and a dead node's row are taken; the node keeps the pools it belongs to", () => {
  const node = { instance: "new", location: "eu" };
  const taken = { refused: false, forgetOthers: false, keepPools: ["*", "eu"] };
  assert.deepEqual(register(undefined, node, t0, { alone: false }), taken);
  assert.deepEqual(register({ ...seen, instance: "new" }, node, t0, { alone: false }), taken);
  assert.deepEqual(register({ ...seen, instance: "old" }, node, t0 + 15_000, { alone: false }), taken);
});

test("register: a live node of the same name that is another process refuses it, unless it is the one replaced", () => {
  const node = { instance: "new", location: "eu" };
  assert.deepEqual(register({ ...seen, instance: "old" }, node, t0 + 14_999, { alone: false }), { refused: true });
  // A restart after a crash on the same host: the process it replaces is gone, whatever its lease says.
  assert.equal(register({ ...seen, instance: "old" }, node, t0, { alone: false, replacing: "old" }).refused, false);
  assert.equal(register({ ...seen, instance: "other" }, node, t0, { alone: false, replacing: "old" }).refused, true);
});

test("register: alone (one daemon serves the database), nothing refuses it and every other node is forgotten", () => {
  const node = { instance: "new", location: "default" };
  const taken = { refused: false, forgetOthers: true, keepPools: ["*", "default"] };
  assert.deepEqual(register({ ...seen, instance: "old" }, node, t0, { alone: true }), taken);
  assert.deepEqual(register(undefined, node, t0, { alone: true }), taken);
});
