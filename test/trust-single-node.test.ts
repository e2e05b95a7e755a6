/**
 * A single node says nothing of rebalancing: alone, there is nothing to balance, at its start (taking over
 * the checks of its previous run) or as services are added. Two nodes still say how many checks moved
 * (test/first-hour.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { createLogger } from "../src/platform/log.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";

const services = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, check: { type: "tcp", host: "127.0.0.1", port: 1, intervalSeconds: 3600 } }));

for (const engine of engines) {
  test(`${engine}: a single node logs no rebalancing, after a restart with 12 services or after adding more`, async (t) => {
    const db = await testDatabase(t, engine);
    const first = await testDaemon(t, { db, engine });
    assert.equal((await first.api("PUT", "/services/web-01", { services: services("s", 12) })).status, 201);
    await first.stop();

    const lines: string[] = [];
    const d = await testDaemon(t, { db, engine, log: createLogger({ write: (line) => lines.push(line) }) });
    assert.ok(lines.some((l) => /listening|serving|http:\/\/127\.0\.0\.1/.test(l)), lines.join(""));
    const added = nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.service.serviceId === "t0");
    assert.equal((await d.api("PUT", "/services/db-01", { services: services("t", 3) })).status, 201);
    await added;
    // The rebalance a change asks for comes a few seconds after it, when there are others to balance with.
    await d.stop();
    assert.deepEqual(lines.filter((l) => /rebalanced/.test(l)), [], "nothing rebalanced on one node");
  });
}
