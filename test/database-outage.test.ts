/**
 * PostgreSQL misbehaving under a running daemon, the way a hostile tester made it: a pooler in front of it that
 * accepts and closes, statements cancelled by a timeout, a lone node cut off for longer than its lease. The
 * daemon keeps checking, keeps its API answering, opens few connections, and loses no result.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { CheckDone } from "../src/daemon.ts";
import { createLogger } from "../src/platform/log.ts";
import { testDatabase } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { httpTarget, type Target } from "./support/targets.ts";
import { tcpProxy, throughProxy, type TcpProxy } from "./support/tcp-proxy.ts";

async function proxied(t: TestContext): Promise<{ url: string; proxy: TcpProxy }> {
  const url = await testDatabase(t, "postgres");
  const server = new URL(url);
  const proxy = await tcpProxy(t, { host: server.hostname, port: Number(server.port || 5432) });
  return { url, proxy };
}

/** Services checking `target` every second, all on server "s". */
const services = (target: Target, count: number, path = "/ok") =>
  Array.from({ length: count }, (_, i) => ({ id: `c${i}`, check: { url: `${target.url}${path}`, intervalSeconds: 1 } }));

test("a pooler that accepts and closes: a few connection attempts a second at most, the API answers, the daemon rejoins", async (t) => {
  const target = await httpTarget(t);
  const { url, proxy } = await proxied(t);
  const d = await testDaemon(t, { db: throughProxy(url, proxy) });
  await d.api("PUT", "/services/s", { services: services(target, 20) });
  await nextEvent(d.events, "check:done");

  await proxy.set("close");
  const before = proxy.accepted;
  const startedAt = Date.now();
  let checks = 0;
  const count = () => checks++;
  d.events.on("check:started", count);
  // Ten seconds of a pooler that closes every connection. Before the fix, each lost LISTEN connection was
  // retried twice, doubling every second: 4,387 connections in 15 s, 6,054 descriptors after healing.
  const said = new Set<string>();
  while (Date.now() - startedAt < 10_000) {
    const health = await Promise.race([d.api("GET", "/healthz"), sleep(2000).then(() => undefined)]);
    assert.ok(health, "/healthz answers within 2 s while the database is unreachable");
    said.add(health.body.status);
    await sleep(500);
  }
  assert.ok(said.has("degraded"), "/healthz says the database is failing");
  d.events.off("check:started", count);
  const attempts = proxy.accepted - before;
  t.diagnostic(`${attempts} connection attempts in 10 s; ${checks} checks started`);
  assert.ok(attempts <= 60, `at most a few connection attempts a second (got ${attempts} in 10 s)`);
  assert.ok(checks >= 100, `checks go on during the outage (${checks} started)`);

  await proxy.set("pass");
  await until(() => d.api("GET", "/healthz"), (h) => h.body.status === "ok", "health back to ok", 30_000);
  await nextEvent<[CheckDone]>(d.events, "check:done");
});

test("statements cancelled by a timeout are 'not now': every result is stored once the timeout is lifted", async (t) => {
  const target = await httpTarget(t);
  const url = await testDatabase(t, "postgres");
  const lines: string[] = [];
  const log = createLogger({ level: "warn", write: (line) => lines.push(line) });
  const d = await testDaemon(t, { db: url, log });
  const name = new URL(url).pathname.slice(1);
  await d.api("PUT", "/services/s", { services: services(target, 5) });
  await nextEvent(d.events, "check:done");

  const admin = await testAdmin(url);
  t.after(() => admin.end());
  // Every statement of every new session is cancelled after 1 ms; the daemon's sessions are ended so that its
  // new ones take the setting (that is what the hostile test did).
  await admin.query(`ALTER DATABASE "${name}" SET statement_timeout = 1`);
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
  const hitsBefore = target.hits.get("/ok") ?? 0;
  await until(() => Promise.resolve(lines), (l) => l.some((line) => /57014, operator intervention/.test(line)), "the log naming the class");
  let started = 0;
  const count = () => started++;
  d.events.on("check:started", count);
  while (started < 20) await nextEvent(d.events, "check:started");
  d.events.off("check:started", count);

  await admin.query(`ALTER DATABASE "${name}" RESET statement_timeout`);
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
  await until(() => d.api("GET", "/healthz"), (h) => h.body.status === "ok", "results stored again", 30_000);
  // Every check the target answered is stored: compare what it received with what was stored. A check in
  // flight when the daemon stops is not stored (an interrupted check says nothing): one per service at most.
  await d.stop();
  const received = target.hits.get("/ok") ?? 0;
  const { rows } = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM health_check_data_entries");
  t.diagnostic(`${received} requests received, ${received - hitsBefore} during the timeout; ${rows[0]!.n} entries stored`);
  assert.ok(received - hitsBefore >= 20, "checks ran during the timeout");
  assert.ok(rows[0]!.n >= received - 5, `every result stored: ${rows[0]!.n} entries for ${received} requests`);
  assert.ok(!lines.some((l) => /dropped/.test(l)), lines.join(""));
});

async function testAdmin(url: string) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

test("a lone node keeps checking through an outage longer than its lease, and stores every result after", async (t) => {
  const target = await httpTarget(t);
  const { url, proxy } = await proxied(t);
  const lines: string[] = [];
  const log = createLogger({ level: "warn", write: (line) => lines.push(line) });
  const d = await testDaemon(t, { db: throughProxy(url, proxy), leaseMs: 2000, log });
  await d.api("PUT", "/services/s", { services: services(target, 5) });
  await nextEvent(d.events, "check:done");

  const starts = new Map<string, number[]>();
  d.events.on("check:started", (service: { serviceId: string }) => {
    const list = starts.get(service.serviceId) ?? [];
    list.push(Date.now());
    starts.set(service.serviceId, list);
  });
  await proxy.cut();
  const cutAt = Date.now();
  // Three leases and more: before the fix the node fenced itself after one and checked nothing.
  while (Date.now() - cutAt < 7000) await nextEvent(d.events, "check:started");
  assert.ok(lines.some((line) => /no other node can take over, so this node keeps running/.test(line)), lines.join(""));
  const health = await d.api("GET", "/healthz");
  assert.ok(health.body.problems.some((p: string) => /no other node can take its checks over, so it keeps running them all/.test(p)), JSON.stringify(health.body));
  await proxy.restore();

  for (const [service, at] of starts) {
    const gaps = at.slice(1).map((time, i) => time - at[i]!);
    assert.ok(at.length >= 6, `${service} was checked through the outage (${at.length} runs)`);
    assert.ok(Math.max(...gaps) <= 2000, `${service} never went unchecked longer than its interval and a second: ${gaps.join(", ")} ms`);
  }
  await until(() => d.api("GET", "/healthz"), (h) => h.body.status === "ok", "results stored again", 30_000);
  await d.stop();
  const admin = await testAdmin(url);
  t.after(() => admin.end());
  const { rows } = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM health_check_data_entries");
  const received = target.hits.get("/ok") ?? 0;
  assert.ok(rows[0]!.n >= received - 5, `every result stored: ${rows[0]!.n} entries for ${received} requests`);
});

/** Two nodes on one database, each through a proxy of its own, sharing 10 services checked every second. */
async function twoNodes(t: TestContext) {
  const target = await httpTarget(t);
  const url = await testDatabase(t, "postgres");
  const server = new URL(url);
  const to = { host: server.hostname, port: Number(server.port || 5432) };
  const proxies = [await tcpProxy(t, to), await tcpProxy(t, to)];
  const nodes = [
    await testDaemon(t, { db: throughProxy(url, proxies[0]!), node: "n1", leaseMs: 2000 }),
    await testDaemon(t, { db: throughProxy(url, proxies[1]!), node: "n2", leaseMs: 2000 }),
  ];
  await nodes[0]!.api("PUT", "/services/s", { services: services(target, 10) });
  // Both nodes run some of them.
  await until(() => nodes[1]!.api("GET", "/nodes"), (a) => a.body.nodes.every((n: { services: number }) => n.services > 0), "both nodes run checks");
  const starts = new Map<string, number[]>();
  for (const node of nodes) {
    node.events.on("check:started", (service: { serviceId: string }) => starts.set(service.serviceId, [...(starts.get(service.serviceId) ?? []), Date.now()]));
  }
  return { target, url, proxies, nodes, starts };
}

test("PostgreSQL down for every node (connections refused): each node keeps checking its services, none goes unchecked", async (t) => {
  const { url, proxies, nodes, starts, target } = await twoNodes(t);
  await Promise.all(proxies.map((p) => p.cut()));
  const cutAt = Date.now();
  // Three leases and more: before, each node held the checks the other could run, and nothing was checked.
  while (Date.now() - cutAt < 7000) await nextEvent(nodes[0]!.events, "check:started");
  const health = await nodes[0]!.api("GET", "/healthz");
  assert.ok(health.body.problems.some((p: string) => /the database turns every node away, so none can take its checks over/.test(p)), JSON.stringify(health.body));
  await Promise.all(proxies.map((p) => p.restore()));
  for (const [service, at] of starts) {
    const during = at.filter((time) => time > cutAt);
    const gaps = during.slice(1).map((time, i) => time - during[i]!);
    assert.ok(during.length >= 6, `${service} was checked through the outage (${during.length} runs)`);
    assert.ok(Math.max(...gaps) <= 2000, `${service} never went unchecked longer than its interval and a second: ${gaps.join(", ")} ms`);
  }
  for (const node of nodes) await until(() => node.api("GET", "/healthz"), (h) => h.body.status === "ok", "results stored again", 30_000);
  // Back together, each keeps its share: before, the first node back took every check (the other's lease had
  // run out meanwhile) and the two ran many of them twice until the other took its share back.
  const back = Date.now();
  while (Date.now() - back < 3000) await nextEvent(nodes[0]!.events, "check:started");
  // One service handed over as the nodes settle may run once on each within an interval (seen once in a CI run
  // on a loaded machine); the fault this holds off ran many of the ten twice, for seconds.
  const twice = [...starts].flatMap(([service, at]) => {
    const after = at.filter((time) => time > back);
    return after.slice(1).flatMap((time, i) => (time - after[i]! < 500 ? [`${service} ${time - after[i]!} ms apart`] : []));
  });
  assert.ok(twice.length <= 1, `checked twice in an interval: ${twice.join("; ")}`);
  const spread = await nodes[0]!.api("GET", "/nodes");
  assert.ok(spread.body.nodes.every((n: { services: number }) => n.services > 0), JSON.stringify(spread.body));
  await Promise.all(nodes.map((n) => n.stop()));
  const admin = await testAdmin(url);
  t.after(() => admin.end());
  const { rows } = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM health_check_data_entries");
  const received = target.hits.get("/ok") ?? 0;
  assert.ok(rows[0]!.n >= received - 10, `every result stored: ${rows[0]!.n} entries for ${received} requests`);
});

test("one node's link to PostgreSQL lost (a black hole): the other takes its checks over, and it runs none of them meanwhile", async (t) => {
  const { proxies, nodes, starts } = await twoNodes(t);
  await proxies[0]!.set("blackhole");
  const cutAt = Date.now();
  let late = 0;
  // Runs by n1 once its lease may have passed would run beside n2's after the takeover.
  nodes[0]!.events.on("check:started", () => Date.now() - cutAt > 2000 && late++);
  while (Date.now() - cutAt < 7000) await nextEvent(nodes[1]!.events, "check:started");
  const health = await nodes[0]!.api("GET", "/healthz");
  assert.ok(health.body.problems.some((p: string) => /it runs only the checks no other live node can take over/.test(p)), JSON.stringify(health.body));
  assert.equal(late, 0, "n1 started no run after its lease");
  for (const [service, at] of starts) assert.ok(at.some((time) => time > cutAt + 5000), `${service} is checked by n2 after the takeover`);
  await proxies[0]!.restore();
});

test("two nodes each adding half of a dependency cycle at once: one is refused, no cycle is stored", async (t) => {
  const target = await httpTarget(t);
  const url = await testDatabase(t, "postgres");
  const [one, two] = [await testDaemon(t, { db: url, node: "one" }), await testDaemon(t, { db: url, node: "two" })];
  const check = (dependsOn: string[]) => ({ url: `${target.url}/ok`, intervalSeconds: 60, dependsOn });
  // Before the fix both PUTs succeeded in 10 of 20 rounds; each round is a fresh pair.
  // Each half on another server: a PUT of one server's service locks that server's row alone.
  for (let round = 0; round < 20; round++) {
    const [x, y] = [`x${round}`, `y${round}`];
    for (const server of [x, y]) {
      const created = await one.api("PUT", `/services/${server}`, { services: [{ id: "a", check: check([]) }] });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const answers = await Promise.all([
      one.api("PUT", `/services/${x}/a`, { check: check([`${y}/a`]) }),
      two.api("PUT", `/services/${y}/a`, { check: check([`${x}/a`]) }),
    ]);
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 400], `round ${round}: ${JSON.stringify(answers.map((a) => a.body))}`);
    const refused = answers.find((a) => a.status === 400)!;
    assert.match(refused.body.detail, /makes a cycle/);
  }
});
