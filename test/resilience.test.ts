/** The store refusing writes (read-only, disk full): the daemon says so, keeps checking, and catches up. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Recorded } from "../src/recorder.ts";
import type { ScheduledService } from "../src/store/servers.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";

const refusals = [
  { name: "read-only", refuse: "query_only = 1", allow: "query_only = 0", code: /SQLITE_READONLY|readonly/i },
  { name: "disk full", refuse: "", allow: "max_page_count = 1073741823", code: /SQLITE_FULL|full/i },
];

for (const r of refusals) {
  test(`database ${r.name}: reported in the log, /healthz and /metrics; checks go on; nothing is lost`, async (t) => {
    const target = await httpTarget(t);
    const lines: string[] = [];
    const { createLogger } = await import("../src/log.ts");
    const d = await testDaemon(t, { log: createLogger({ level: "warn", write: (l) => lines.push(l) }) });
    const first = nextEvent<[Recorded]>(d.events, "check:done");
    await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: `${target.url}/ok`, intervalSeconds: 1 } }] });
    await first;
    const count = () => (d.store.sqlite.prepare("SELECT count(*) AS n FROM health_check_data_entries").get() as { n: number }).n;
    const before = count();

    if (r.name === "disk full") {
      // No more pages, and the entries' last page filled to the brim: the next entry cannot be stored.
      d.store.sqlite.pragma(`max_page_count = ${d.store.sqlite.pragma("page_count", { simple: true })}`);
      const filler = d.store.sqlite.prepare(
        "INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms) VALUES (1, 0, 1, 200, 1)",
      );
      let filled = 0;
      assert.throws(() => {
        for (;;) (filler.run(), filled++);
      }, /full/);
      t.diagnostic(`filled the last pages with ${filled} rows`);
    } else d.store.sqlite.pragma(r.refuse);
    let startedDuring = 0;
    d.events.on("check:started", (_s: ScheduledService) => startedDuring++);
    await nextEvent(d.events, "check:started");
    await nextEvent(d.events, "check:started");
    await nextEvent(d.events, "check:started");
    const health = await d.api("GET", "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.body.status, "degraded");
    assert.match(health.body.problems[0], /cannot store check results/);
    const metrics = await (await fetch(d.url + "/metrics")).text();
    assert.match(metrics, /^healthd_store_writable 0$/m);
    assert.match(metrics, /^healthd_store_write_failures_total [1-9]/m);
    assert.ok(lines.some((l) => /cannot store check results/.test(l) && r.code.test(l)), lines.join(""));
    if (r.name === "read-only") {
      const put = await d.api("PUT", "/services/t", { services: [] });
      assert.equal(put.status, 503);
      assert.match(put.body.detail, /the database cannot take this now \(SQLITE_READONLY\); nothing was changed/);
    }

    const stored = startedDuring;
    d.store.sqlite.pragma(r.allow);
    d.store.sqlite.prepare("DELETE FROM health_check_data_entries WHERE checked_at = 0").run();
    await nextEvent<[Recorded]>(d.events, "check:done");
    await nextEvent(d.events, "check:done", () => count() >= before + stored);
    assert.equal((await d.api("GET", "/healthz")).body.status, "ok");
    assert.ok(lines.filter((l) => /cannot store check results/.test(l)).length <= 2, "one error line per outage, not one per retry");
  });
}
