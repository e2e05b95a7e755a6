/**
 * The pure parts of the alerting controls: when a silence or a maintenance window covers a service, and
 * what is wrong with a graph of dependsOn.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { dependencyProblems } from "../src/policy/dependencies.ts";
import { maintenanceAt, silencedAt } from "../src/policy/silence.ts";

const db = { serverId: "web-01", serviceId: "db" };
const app = { serverId: "web-01", serviceId: "app" };

test("a silence covers its server's services, or its one service, from its start to before its end", () => {
  const server = [{ serverId: "web-01", serviceId: null, startsAt: 1000, endsAt: 2000 }];
  assert.equal(silencedAt(server, [], db, 999), false);
  assert.equal(silencedAt(server, [], db, 1000), true);
  assert.equal(silencedAt(server, [], app, 1999), true);
  assert.equal(silencedAt(server, [], db, 2000), false);
  assert.equal(silencedAt(server, [], { serverId: "web-02", serviceId: "db" }, 1500), false);
  const one = [{ serverId: "web-01", serviceId: "db", startsAt: 1000, endsAt: 2000 }];
  assert.equal(silencedAt(one, [], db, 1500), true);
  assert.equal(silencedAt(one, [], app, 1500), false);
});

test("a maintenance window recurs by its cron pattern in its time zone, for its duration, for its services", () => {
  // Sundays at 03:00 in Berlin for 60 minutes: 2026-11-22 is a Sunday, and Berlin is UTC+1 in November.
  const weekly = [{ cron: "0 3 * * 0", durationMinutes: 60, timezone: "Europe/Berlin", services: ["db"] }];
  const at = (iso: string) => Date.parse(iso);
  assert.equal(maintenanceAt(weekly, "db", at("2026-11-22T01:59:59Z")), undefined, "before: 02:59:59 in Berlin");
  assert.ok(maintenanceAt(weekly, "db", at("2026-11-22T02:00:00Z")), "03:00 in Berlin");
  assert.ok(maintenanceAt(weekly, "db", at("2026-11-22T02:59:59Z")));
  assert.equal(maintenanceAt(weekly, "db", at("2026-11-22T03:00:00Z")), undefined, "an hour later it is over");
  assert.equal(maintenanceAt(weekly, "app", at("2026-11-22T02:30:00Z")), undefined, "other services are not in it");
  assert.ok(maintenanceAt(weekly, "db", at("2026-11-29T02:30:00Z")), "the next Sunday");
  assert.equal(maintenanceAt(weekly, "db", at("2026-11-23T02:30:00Z")), undefined, "not on Monday");
  // Without services, every service of the server.
  const daily = [{ cron: "30 23 * * *", durationMinutes: 90, timezone: "UTC" }];
  assert.ok(maintenanceAt(daily, "app", at("2026-11-23T00:59:00Z")), "a window that crosses midnight");
  assert.equal(maintenanceAt(daily, "app", at("2026-11-23T01:00:00Z")), undefined);
  assert.equal(silencedAt([], daily, app, at("2026-11-23T00:00:00Z")), true);
});

test("dependsOn: unknown references of the written services, dangling ones of the others, and cycles", () => {
  const nodes = [
    { serverId: "web-01", serviceId: "db", dependsOn: [] },
    { serverId: "web-01", serviceId: "app", dependsOn: ["db", "web-02/cache"] },
    { serverId: "web-02", serviceId: "api", dependsOn: ["web-01/gone"] },
  ];
  const written = (name: string) => name.startsWith("web-01/");
  const exists = (name: string) => nodes.some((n) => `${n.serverId}/${n.serviceId}` === name);
  assert.deepEqual(dependencyProblems(nodes, exists, written), [
    { kind: "unknown", service: "web-01/app", index: 1, ref: "web-02/cache" },
    { kind: "dangling", dependents: ["web-02/api"], missing: "web-01/gone" },
  ]);
  const cycle = [
    { serverId: "a", serviceId: "x", dependsOn: ["y"] },
    { serverId: "a", serviceId: "y", dependsOn: ["b/z"] },
    { serverId: "b", serviceId: "z", dependsOn: ["a/x"] },
    { serverId: "b", serviceId: "free", dependsOn: ["a/x"] },
  ];
  assert.deepEqual(dependencyProblems(cycle, () => true, () => true), [{ kind: "cycle", cycle: ["a/x", "a/y", "b/z", "a/x"] }]);
  assert.deepEqual(dependencyProblems([{ serverId: "a", serviceId: "x", dependsOn: ["x"] }], () => true, () => true), [{ kind: "cycle", cycle: ["a/x", "a/x"] }]);
  // A chain of three is fine.
  const chain = [
    { serverId: "a", serviceId: "x", dependsOn: [] },
    { serverId: "a", serviceId: "y", dependsOn: ["x"] },
    { serverId: "a", serviceId: "z", dependsOn: ["y"] },
  ];
  assert.deepEqual(dependencyProblems(chain, () => true, () => true), []);
});
