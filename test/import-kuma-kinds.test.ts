/**
 * An Uptime Kuma database with the monitors a sysadmin's estate is made of (issue 84): ping, keyword (and an
 * inverted one), gRPC, PostgreSQL, MySQL and Redis. A real kuma.db is written (test/support/kuma.ts, Kuma's
 * schema), imported as `healthd import` reads it, and what was carried over is applied to the daemon and
 * checked against 127.0.0.1. Whatever the importer does with a monitor, it never drops one silently: each is
 * a service or a note that names it.
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

test("a kuma.db with ping, keyword, gRPC, PostgreSQL, MySQL and Redis monitors: ping and keyword are checked as Kuma did, none is dropped unsaid", async (t) => {
  const target = await httpTarget(t);
  const kuma = join(tempDir(t), "kuma.db");
  const monitors = [
    { id: 1, name: "Estate", type: "group", interval: 60 },
    { id: 2, name: "Gateway ping", type: "ping", hostname: "127.0.0.1", interval: 30, maxretries: 1, parent: 1 },
    { id: 3, name: "Shop keyword", type: "keyword", url: `${target.url}/ok`, keyword: "Welcome", interval: 60, parent: 1 },
    { id: 4, name: "No errors", type: "keyword", url: `${target.url}/ok`, keyword: "Traceback", invert_keyword: 1, interval: 60, parent: 1 },
    { id: 5, name: "Orders gRPC", type: "grpc-keyword", grpc_url: "127.0.0.1:50051", grpc_service_name: "orders.Orders", keyword: "SERVING", parent: 1 },
    { id: 6, name: "Main database", type: "postgres", database_connection_string: "postgres://monitor:pg-secret@127.0.0.1:5432/app", database_query: "SELECT 1", parent: 1 },
    { id: 7, name: "Legacy MySQL", type: "mysql", database_connection_string: "mysql://monitor:my-secret@127.0.0.1:3306/app", parent: 1 },
    { id: 8, name: "Cache", type: "redis", database_connection_string: "redis://:redis-secret@127.0.0.1:6379", parent: 1 },
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

  // Every monitor is a service or named in a note: nothing is dropped unsaid, whatever kinds healthd has.
  for (const m of monitors.filter((m) => m.type !== "group")) {
    const carried = byName.has(m.name);
    const said = imported.notes.some((n) => n.includes(`monitor ${JSON.stringify(m.name)} (${m.type})`));
    assert.ok(carried || said, `${m.name} (${m.type}) is neither carried over nor named in a note`);
  }

  // What was carried over applies as it is and runs against the same targets.
  const d = await testDaemon(t);
  const done = (id: string) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id).then(([r]) => r.entry);
  const checked = ["gateway-ping", "shop-keyword", "no-errors"].map(done);
  const put = await d.api("PUT", "/services/estate", { services });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const [ping, keyword, inverted] = await Promise.all(checked);
  assert.deepEqual([ping!.type, ping!.ok, ping!.answers?.[0]], ["icmp", true, "sent 1, received 1, loss 0%"]);
  assert.deepEqual([keyword!.type, keyword!.ok, inverted!.ok], ["http", true, true]);
});
