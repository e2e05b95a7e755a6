/**
 * The store refusing writes (SQLite read-only or full) or going away (PostgreSQL unreachable): the daemon says
 * so, keeps checking, answers 503 to writes, and catches up when the store comes back, losing nothing.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import type { ScheduledService } from "../src/domain/model.ts";
import type { CheckDone } from "../src/daemon.ts";
import { rawQuery } from "./support/raw.ts";
import { serveHealthd } from "./support/cli.ts";
import { testDatabase } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";
import { tcpProxy, throughProxy } from "./support/tcp-proxy.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";

interface Outage {
  readonly name: string;
  /** How the log names the cause. */
  readonly code: RegExp;
  /** What a refused write says in its 503 (a full disk may still take a small write). */
  readonly refusal: RegExp | null;
  /** Start a daemon on the store to be refused; answers how to begin and end the outage. */
  start(t: TestContext, log: (line: string) => void): Promise<{ d: TestDaemon; refuse(): Promise<void>; allow(): Promise<void> }>;
}

const logger = async (write: (line: string) => void) => (await import("../src/platform/log.ts")).createLogger({ level: "warn", write });

const outages: Outage[] = [
  {
    name: "SQLite read-only",
    code: /SQLITE_READONLY|readonly/i,
    refusal: /the database cannot take this now \(SQLITE_READONLY\); nothing was changed/,
    async start(t, log) {
      const d = await testDaemon(t, { log: await logger(log) });
      return { d, refuse: async () => void (await rawQuery(d.store, "PRAGMA query_only = 1")), allow: async () => void (await rawQuery(d.store, "PRAGMA query_only = 0")) };
    },
  },
  {
    name: "SQLite disk full",
    code: /SQLITE_FULL|full/i,
    refusal: null,
    async start(t, log) {
      const d = await testDaemon(t, { log: await logger(log) });
      return {
        d,
        async refuse() {
          // No more pages, and the entries' last page filled to the brim: the next entry cannot be stored.
          const [{ page_count: pages }] = (await rawQuery(d.store, "PRAGMA page_count")) as [{ page_count: number }];
          await rawQuery(d.store, `PRAGMA max_page_count = ${pages}`);
          let filled = 0;
          await assert.rejects(async () => {
            for (;;) {
              await rawQuery(d.store, "INSERT INTO health_check_data_entries (service_key, checked_at, ok, status, latency_ms) VALUES (1, 0, 1, 200, 1)");
              filled++;
            }
          }, /full/);
          t.diagnostic(`filled the last pages with ${filled} rows`);
        },
        async allow() {
          await rawQuery(d.store, "PRAGMA max_page_count = 1073741823");
          await rawQuery(d.store, "DELETE FROM health_check_data_entries WHERE checked_at = 0");
        },
      };
    },
  },
  {
    name: "PostgreSQL gone",
    code: /ECONNREFUSED|Connection terminated|PostgreSQL/i,
    refusal: /the database cannot take this now \((ECONNREFUSED|ECONNRESET|EUNAVAILABLE)\); nothing was changed/,
    async start(t, log) {
      const url = await testDatabase(t, "postgres");
      const server = new URL(url);
      const proxy = await tcpProxy(t, { host: server.hostname, port: Number(server.port || 5432) });
      const d = await testDaemon(t, { db: throughProxy(url, proxy), log: await logger(log) });
      return { d, refuse: () => proxy.cut(), allow: () => proxy.restore() };
    },
  },
];

for (const outage of outages) {
  test(`${outage.name}: reported in the log, /healthz and /metrics; checks go on; writes are 503; nothing is lost`, async (t) => {
    const target = await httpTarget(t);
    const lines: string[] = [];
    const { d, refuse, allow } = await outage.start(t, (l) => lines.push(l));
    const first = nextEvent<[CheckDone]>(d.events, "check:done");
    await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: `${target.url}/ok`, intervalSeconds: 1 } }] });
    await first;
    const entries = async () => (await d.api("GET", "/services/s/a/data?limit=1000")).body.entries.length as number;
    const before = await entries();

    await refuse();
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
    assert.ok(lines.some((l) => /cannot store check results/.test(l) && outage.code.test(l)), lines.join(""));
    if (outage.refusal) {
      const put = await d.api("PUT", "/services/t", { services: [] });
      assert.equal(put.status, 503);
      assert.equal(put.headers.get("retry-after"), "5");
      assert.match(put.body.detail, outage.refusal);
    }

    const stored = startedDuring;
    await allow();
    // Healthy again once results are stored (PostgreSQL: after the connection backoff, a few seconds at most).
    await until(() => d.api("GET", "/healthz"), (h) => h.body.status === "ok", "results stored again");
    while ((await entries()) < before + stored) await nextEvent<[CheckDone]>(d.events, "check:done");
    assert.equal((await d.api("GET", "/healthz")).body.status, "ok");
    if (outage.refusal) assert.equal((await d.api("GET", "/services/t")).status, 404, "the refused PUT changed nothing");
    assert.ok(lines.filter((l) => /cannot store check results/.test(l)).length <= 2, "one error line per outage, not one per retry:\n" + lines.filter((l) => /cannot store check results/.test(l)).join(""));
  });
}

test("the WAL index truncated or made unwritable under the daemon: it survives, says so, and catches up", async (t) => {
  assert.equal(process.getuid?.(), 0, "this test makes a file immutable with chattr +i, which needs root");
  const target = await httpTarget(t);
  const db = tempDbPath(t);
  const served = await serveHealthd(t, ["--db", db]);
  const api = async (path: string) => (await fetch(served.url + path)).json() as Promise<any>;
  await fetch(`${served.url}/services/s`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ services: [{ id: "a", check: { url: `${target.url}/ok`, intervalSeconds: 1 } }] }),
  });
  const stored = async () => (await api("/services/s/a/data?limit=1000")).entries.length as number;
  let count = await until(stored, (n) => n >= 1, "a first entry");

  truncateSync(`${db}-shm`, 0);
  count = await until(stored, (n) => n >= count + 2, "entries after the truncation");
  assert.match(served.log(), /healthd\.db-shm was truncated by another process; healthd gave it its size back/);

  execFileSync("chattr", ["+i", `${db}-shm`]);
  try {
    const degraded = await until(() => api("/healthz"), (h) => h.status === "degraded", "degraded health");
    assert.ok(degraded.problems.some((p: string) => /healthd\.db-shm cannot be written \(EPERM\)/.test(p)), JSON.stringify(degraded));
    await until(() => fetch(served.url + "/metrics").then((r) => r.text()), (m) => /^healthd_store_writable 0$/m.test(m), "the metric");
  } finally {
    execFileSync("chattr", ["-i", `${db}-shm`]);
  }
  await until(() => api("/healthz"), (h) => h.status === "ok", "health back to ok");
  await until(stored, (n) => n >= count + 3, "the results kept during the outage");
  assert.equal(await served.stop(), 0, served.log());
});

test("a deleted database directory is noticed: the log says so, /healthz is degraded, and writes are 503", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "data", "healthd.db");
  mkdirSync(join(dir, "data"));
  const served = await serveHealthd(t, ["--db", db]);
  const logged = served.waitForLog(/the database needs attention .*healthd\.db was deleted/);
  rmSync(join(dir, "data"), { recursive: true, force: true });
  const health = await until(() => fetch(`${served.url}/healthz`).then((r) => r.json() as Promise<any>), (h) => h.status === "degraded", "degraded health");
  assert.ok(health.problems.some((p: string) => /healthd\.db was deleted; writes are refused and results wait in memory/.test(p)), JSON.stringify(health));
  await logged;
  // Before: 201, into a file nobody can open any more.
  const put = await fetch(`${served.url}/services/s`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services: [] }) });
  assert.equal(put.status, 503);
  assert.match(((await put.json()) as { detail: string }).detail, /the database cannot take this now \(FILE_DELETED\); nothing was changed/);
  assert.equal(await served.stop(), 0, served.log());
});
