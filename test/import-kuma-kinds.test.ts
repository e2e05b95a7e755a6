/**
 * An Uptime Kuma database with the monitors a sysadmin's estate is made of (issue 84): ping, keyword (and an
 * inverted one), gRPC, PostgreSQL, MySQL and Redis. A real kuma.db is written (test/support/kuma.ts, Kuma's
 * schema), imported as `healthd import` reads it, and what was carried over is applied to the daemon and
 * checked against 127.0.0.1 (this machine's PostgreSQL, MariaDB and Redis). Nothing is dropped: each monitor is
 * a service, and no password Kuma kept is written out (each becomes a ${NAME} the import names).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { importFile } from "../src/import/index.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { httpTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

test("a kuma.db with ping, keyword, gRPC, PostgreSQL, MySQL and Redis monitors imports whole, passwords as ${NAME}, and is checked as Kuma did", async (t) => {
  const target = await httpTarget(t);
  const kuma = join(tempDir(t), "kuma.db");
  const monitors = [
    { id: 1, name: "Estate", type: "group", interval: 60 },
    { id: 2, name: "Gateway ping", type: "ping", hostname: "127.0.0.1", interval: 30, maxretries: 1, parent: 1 },
    { id: 3, name: "Shop keyword", type: "keyword", url: `${target.url}/ok`, keyword: "Welcome", interval: 60, parent: 1 },
    { id: 4, name: "No errors", type: "keyword", url: `${target.url}/ok`, keyword: "Traceback", invert_keyword: 1, interval: 60, parent: 1 },
    // The standard health service, as Kuma's users set it up: its protobuf pasted, Health/Check, the service asked.
    { id: 5, name: "Orders gRPC", type: "grpc-keyword", grpc_url: "127.0.0.1:50051", grpc_protobuf: healthProto, grpc_service_name: "Health", grpc_method: "Check", grpc_body: '{"service": "orders.Orders"}', keyword: "SERVING", parent: 1 },
    // PostgreSQL trusts 127.0.0.1 here (the password is read, not needed); MariaDB's root there has none.
    { id: 6, name: "Main database", type: "postgres", database_connection_string: "postgres://postgres:pg-secret@127.0.0.1:5432/postgres", database_query: "SELECT 1", parent: 1 },
    { id: 7, name: "Legacy MySQL", type: "mysql", database_connection_string: "mysql://root@127.0.0.1:3306/test", parent: 1 },
    { id: 8, name: "Cache", type: "redis", database_connection_string: "redis://127.0.0.1:6379", parent: 1 },
  ];
  kumaDatabase(kuma, monitors);
  const { imported } = importFile("uptime-kuma", kuma, readFileSync(kuma), "uptime-kuma");
  const services = imported.servers.estate?.services ?? [];
  const byName = new Map(services.map((s) => [s.name ?? s.id, s]));

  // Ping: an icmp check, one echo a beat as Kuma 1 sent, its retries as the threshold.
  assert.deepEqual(byName.get("Gateway ping"), {
    id: "gateway-ping",
    name: "Gateway ping",
    check: { type: "icmp", host: "127.0.0.1", count: 1, intervalSeconds: 30, timeoutMs: 24_000, notifyThreshold: 1 },
  });
  // Keyword: an http check whose body must hold the keyword, or must not when Kuma inverted it.
  assert.deepEqual(byName.get("Shop keyword")?.check, { url: `${target.url}/ok`, expect: [{ status: "2xx", bodyContains: "Welcome" }], intervalSeconds: 60, timeoutMs: 48_000, notifyThreshold: 0 });
  assert.deepEqual(byName.get("No errors")?.check, { url: `${target.url}/ok`, expect: [{ status: "2xx", bodyNotContains: "Traceback" }], intervalSeconds: 60, timeoutMs: 48_000, notifyThreshold: 0 });
  assert.ok(!imported.notes.some((n) => /Gateway ping|Shop keyword|No errors/.test(n)), `nothing of ping or keyword is left out: ${imported.notes.join("\n")}`);

  // gRPC: the health service's Check of the service Kuma asked about.
  assert.deepEqual(pick(byName.get("Orders gRPC")?.check, ["type", "target", "service"]), { type: "grpc", target: "127.0.0.1:50051", service: "orders.Orders" });
  // The databases: their connection and query, the password a variable the import names, never written out.
  assert.deepEqual(pick(byName.get("Main database")?.check, ["type", "url", "query"]), { type: "postgres", url: "postgres://postgres:${HEALTHD_SECRET_POSTGRES_POSTGRES_127_0_0_1_5432}@127.0.0.1:5432/postgres", query: "SELECT 1" });
  assert.deepEqual(pick(byName.get("Legacy MySQL")?.check, ["type", "url"]), { type: "mysql", url: "mysql://root@127.0.0.1:3306/test" });
  assert.deepEqual(pick(byName.get("Cache")?.check, ["type", "url"]), { type: "redis", url: "redis://127.0.0.1:6379" });
  assert.doesNotMatch(JSON.stringify(imported), /pg-secret/);
  assert.ok(imported.notes.some((n) => n.includes("set HEALTHD_SECRET_POSTGRES_POSTGRES_127_0_0_1_5432")), imported.notes.join("\n"));
  // Nothing is dropped: every monitor is a service.
  assert.deepEqual(monitors.filter((m) => m.type !== "group" && !byName.has(m.name)), []);

  // What was carried over applies as it is and runs against the same targets.
  const env = { ...process.env, HEALTHD_SECRET_POSTGRES_POSTGRES_127_0_0_1_5432: "pg-secret" };
  const d = await testDaemon(t, { env });
  const done = (id: string) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id).then(([r]) => r.entry);
  const checked = ["gateway-ping", "shop-keyword", "no-errors", "main-database", "legacy-mysql", "cache"].map(done);
  const put = await d.api("PUT", "/services/estate", { services });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const [ping, keyword, inverted, ...databases] = await Promise.all(checked);
  assert.deepEqual([ping!.type, ping!.ok, ping!.answers?.[0]], ["icmp", true, "sent 1, received 1, loss 0%"]);
  assert.deepEqual([keyword!.type, keyword!.ok, inverted!.ok], ["http", true, true]);
  assert.deepEqual(databases.map((e) => [e!.type, e!.ok, e!.error]), [["postgres", true, null], ["mysql", true, null], ["redis", true, null]]);
});

const healthProto = 'syntax = "proto3";\npackage grpc.health.v1;\nservice Health { rpc Check(HealthCheckRequest) returns (HealthCheckResponse); }';

function pick(o: object | undefined, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => o && k in o).map((k) => [k, (o as Record<string, unknown>)[k]]));
}

test("a Kuma password with / and @ in it is never written, in part or whole: the user information ends at the last @", (t) => {
  const kuma = join(tempDir(t), "kuma.db");
  kumaDatabase(kuma, [{ id: 1, name: "Odd", type: "postgres", database_connection_string: "postgres://app:pa/ss@w0rd@db.example:5432/app" }]);
  const { imported } = importFile("uptime-kuma", kuma, readFileSync(kuma), "uptime-kuma");
  const [service] = Object.values(imported.servers).flatMap((s) => s.services);
  assert.equal(service?.check.url, "postgres://app:${HEALTHD_SECRET_POSTGRES_APP_DB_EXAMPLE_5432}@db.example:5432/app");
  assert.doesNotMatch(JSON.stringify(imported), /pa\/ss|w0rd/);
});
