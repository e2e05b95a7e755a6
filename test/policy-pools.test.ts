/**
 * Pools (src/policy/pools.ts), without a database: which pools a check is in, which nodes take part in a pool,
 * and what a rebalance or a placement drops and writes. The store's part (the rows, the lock, the bulk writes)
 * is tested through the cluster (test/nodes.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assign, place } from "../src/policy/assign.ts";
import { anywhere, nodePools, placing, poolMembers, poolsOf, rebalancing, unplaced, type Ownership } from "../src/policy/pools.ts";

const nodes = [
  { name: "a", location: "eu" },
  { name: "b", location: "us" },
  { name: "c", location: "eu" },
];

test("pools: a check runs anywhere, or in each of its locations; a paused one in none", () => {
  assert.deepEqual(poolsOf({ locations: null, paused: false }), [anywhere]);
  assert.deepEqual(poolsOf({ locations: ["eu", "us"], paused: false }), ["eu", "us"]);
  assert.deepEqual(poolsOf({ locations: ["eu"], paused: true }), []);
  assert.deepEqual(poolsOf({ locations: null, paused: true }), []);
  assert.deepEqual(nodePools("eu"), ["*", "eu"]);
});

test("pools: every node takes part in the pool of anywhere; a location's pool has only that location's nodes", () => {
  assert.deepEqual(poolMembers(nodes, anywhere), ["a", "b", "c"]);
  assert.deepEqual(poolMembers(nodes, "eu"), ["a", "c"]);
  assert.deepEqual(poolMembers(nodes, "asia"), []);
});

test("rebalancing: a first rebalance gives every check an owner in each of its pools, spread evenly", () => {
  const checks = [1, 2, 3, 4, 5, 6].map((key) => ({ key, locations: null, paused: false }));
  const { gone, moved } = rebalancing([...checks, { key: 7, locations: ["eu", "us"], paused: false }], [], nodes, assign);
  assert.deepEqual(gone, []);
  const per = new Map<string, number>();
  for (const o of moved.filter((o) => o.pool === anywhere)) per.set(o.node, (per.get(o.node) ?? 0) + 1);
  assert.deepEqual([...per.values()], [2, 2, 2]);
  assert.deepEqual(moved.filter((o) => o.service === 7).map((o) => [o.pool, o.node]), [["eu", "a"], ["us", "b"]]);
});

test("rebalancing: owners that stay live keep their checks; a dead node's checks move; nothing else is written", () => {
  const checks = [1, 2, 3, 4].map((key) => ({ key, locations: null, paused: false }));
  const owners: Ownership[] = [
    { service: 1, pool: anywhere, node: "a" },
    { service: 2, pool: anywhere, node: "a" },
    { service: 3, pool: anywhere, node: "b" },
    { service: 4, pool: anywhere, node: "b" },
  ];
  assert.deepEqual(rebalancing(checks, owners, nodes.slice(0, 2), assign), { gone: [], moved: [] });
  // b died: its two checks go to a and c (a keeps its own two, c had none).
  const { gone, moved } = rebalancing(checks, owners, [nodes[0]!, nodes[2]!], assign);
  assert.deepEqual(gone, []);
  assert.deepEqual(moved.map((o) => [o.service, o.node]).sort(), [[3, "c"], [4, "c"]]);
});

test("rebalancing: a paused check, a check gone from a pool, and a pool without a live node lose their owners", () => {
  const owners: Ownership[] = [
    { service: 1, pool: anywhere, node: "a" },
    { service: 2, pool: "eu", node: "a" },
    { service: 3, pool: "asia", node: "x" },
  ];
  const checks = [
    { key: 1, locations: null, paused: true },
    { key: 2, locations: ["us"], paused: false },
    { key: 3, locations: ["asia"], paused: false },
  ];
  const { gone, moved } = rebalancing(checks, owners, nodes, assign);
  assert.deepEqual(gone, owners);
  assert.deepEqual(moved, [{ service: 2, pool: "us", node: "b" }]);
});

test("unplaced and placing: a changed check loses the pools it left, and gets an owner in the pools it joined", () => {
  const owners: Ownership[] = [
    { service: 1, pool: "eu", node: "a" },
    { service: 1, pool: "us", node: "b" },
    { service: 2, pool: anywhere, node: "c" },
  ];
  const checks = [
    { key: 1, locations: ["eu", "asia"], paused: false },
    { key: 2, locations: null, paused: true },
    { key: 9, locations: null, paused: false },
  ];
  const { gone, missing } = unplaced(checks, owners);
  assert.deepEqual(gone, [owners[1], owners[2]]);
  assert.deepEqual([...missing], [["asia", [1]], [anywhere, [9]]]);
  // No live node in asia: that pool stays without an owner until one comes (the next rebalance).
  assert.deepEqual(placing(missing, nodes, place), [{ service: 9, pool: anywhere, node: "a" }]);
});
