/**
 * Several nodes on one PostgreSQL database, as users run them: real processes of the built executable, each
 * on its own port, sharing one fresh database per test, checking targets on 127.0.0.1. The tests wait on the
 * API (GET /nodes, /metrics) and on the targets' hits; the bounds they assert are the contract's (a takeover
 * within the lease plus an interval), with a second for a loaded machine.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { serveHealthd, type Served } from "./support/cli.ts";
import { testDatabase } from "./support/databases.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type NtfyStandIn } from "./support/ntfy.ts";
import { recordingTarget, type Hit } from "./support/targets.ts";

interface NodeView {
  name: string;
  location: string;
  services: number;
  live: boolean;
  self: boolean;
}

async function api(node: Served, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(node.url + path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const nodesSeenBy = async (node: Served) => (await api(node, "GET", "/nodes")).body.nodes as NodeView[];

function startNode(t: TestContext, db: string, name: string, options: { lease?: number; location?: string; env?: Record<string, string> } = {}) {
  const args = ["--db", db, "--node", name, "--lease-seconds", String(options.lease ?? 15), "--location", options.location ?? "default"];
  return serveHealthd(t, args, options.env);
}

/** `count` services on server "web", each checking its own path of the target every `interval` seconds. */
function servicesDoc(target: string, count: number, interval: number, more: object = {}) {
  // groupThreshold 0: these count each service's DOWN and RECOVERED, not one for a storm.
  return { groupThreshold: 0, services: Array.from({ length: count }, (_, i) => ({ id: `s${i}`, check: { url: `${target}/s${i}`, intervalSeconds: interval, ...more } })) };
}

/** Wait until every node sees the same live nodes, with all `total` services owned among them. */
async function settled(nodes: readonly Served[], names: readonly string[], total: number): Promise<NodeView[]> {
  return until(
    () => nodesSeenBy(nodes[0]!),
    (seen) => {
      const live = seen.filter((n) => n.live);
      return live.length === names.length && live.every((n) => names.includes(n.name)) && live.reduce((sum, n) => sum + n.services, 0) === total;
    },
    `${names.join(", ")} sharing ${total} services`,
  );
}

/** The hits on `path` at or after `from`, in order. */
const hitsOf = (hits: readonly Hit[], path: string, from = 0) => hits.filter((h) => h.path === path && h.at >= from).map((h) => h.at);

/** Wait until every one of `paths` has been hit at least `count` times since `from`. */
async function hitAll(events: NodeJS.EventEmitter, hits: readonly Hit[], paths: readonly string[], from: number, count = 1): Promise<void> {
  const enough = () => paths.every((p) => hitsOf(hits, p, from).length >= count);
  while (!enough()) await nextEvent(events, "hit", () => true, 30_000);
}

test("three nodes share 120 services evenly and check each once per interval; GET /nodes shows the spread", async (t) => {
  const db = await testDatabase(t, "postgres");
  const target = await recordingTarget(t);
  const nodes = [await startNode(t, db, "n1"), await startNode(t, db, "n2"), await startNode(t, db, "n3")];
  await until(() => nodesSeenBy(nodes[2]!), (seen) => seen.filter((n) => n.live).length === 3, "three live nodes");
  const interval = 2;
  assert.equal((await api(nodes[0]!, "PUT", "/services/web", servicesDoc(target.url, 120, interval))).status, 201);
  const seen = await settled(nodes, ["n1", "n2", "n3"], 120);
  for (const node of seen) assert.ok(node.services >= 32 && node.services <= 48, `${node.name} runs ${node.services} of 120 (share 40 ± 20 %)`);
  assert.deepEqual(
    (await nodesSeenBy(nodes[1]!)).map((n) => [n.name, n.self]),
    [["n1", false], ["n2", true], ["n3", false]],
  );
  const metrics = await (await fetch(nodes[0]!.url + "/metrics")).text();
  assert.match(metrics, /^healthd_cluster_nodes\{location="default"\} 3$/m);
  assert.match(metrics, new RegExp(`^healthd_node_services ${seen[0]!.services}$`, "m"));

  // Four intervals of checks: every service, once per interval (no gap under half an interval: no service
  // is run by two nodes; none over one and a half: none is missed). A new service's first check comes
  // within a second of the PUT, off its phase: the gaps are counted from its second one.
  const from = Date.now();
  const paths = Array.from({ length: 120 }, (_, i) => `/s${i}`);
  await hitAll(target.events, target.hits, paths, from, 5);
  for (const path of paths) {
    const at = hitsOf(target.hits, path, Math.max(from, hitsOf(target.hits, path)[1]!));
    for (let i = 1; i < at.length; i++) {
      const gap = at[i]! - at[i - 1]!;
      assert.ok(gap > (interval * 1000) / 2 && gap < interval * 1500, `${path}: ${gap} ms between two checks (interval ${interval} s)`);
    }
  }
  assert.ok(target.hits.every((h) => h.userAgent === "healthd/0.1.0 (location default)"), target.hits[0]?.userAgent);
});

test("kill -9 of a node: the others check its services again within the lease and an interval; SIGTERM hands over at once", async (t) => {
  const db = await testDatabase(t, "postgres");
  const target = await recordingTarget(t);
  // A lease well above two intervals, so that a handover at SIGTERM (at most two intervals, below) cannot pass
  // for a takeover that waited out the lease.
  const lease = 8;
  const interval = 2;
  const nodes = [await startNode(t, db, "n1", { lease }), await startNode(t, db, "n2", { lease }), await startNode(t, db, "n3", { lease })];
  await until(() => nodesSeenBy(nodes[0]!), (seen) => seen.filter((n) => n.live).length === 3, "three live nodes");
  await api(nodes[0]!, "PUT", "/services/web", servicesDoc(target.url, 30, interval));
  await settled(nodes, ["n1", "n2", "n3"], 30);
  const paths = Array.from({ length: 30 }, (_, i) => `/s${i}`);
  await hitAll(target.events, target.hits, paths, Date.now(), 1);

  const killedAt = Date.now();
  assert.equal(await nodes[1]!.stop("SIGKILL"), null);
  await settled([nodes[0]!], ["n1", "n3"], 30);
  await hitAll(target.events, target.hits, paths, killedAt + lease * 1000, 1);
  for (const path of paths) {
    const at = hitsOf(target.hits, path, killedAt);
    const longest = Math.max(...at.map((x, i) => x - (i === 0 ? killedAt : at[i - 1]!)));
    assert.ok(longest <= (lease + interval + 1) * 1000, `${path}: ${longest} ms without a check after kill -9 (lease ${lease} s + interval ${interval} s)`);
    // A takeover may run a check twice, at most once (a result the dead node had not stored yet).
    const twice = at.slice(1).filter((x, i) => x - at[i]! < (interval * 1000) / 2).length;
    assert.ok(twice <= 1, `${path} was checked twice in an interval ${twice} times after the kill`);
  }

  // A clean stop hands over at once: no gap longer than two intervals (and a second), far less than the lease.
  // Two, not one: a handover that lands just after a planned run waits for the next one rather than run a
  // service twice in an interval (the departing node may have started that run; see reconcile in daemon.ts).
  const stoppedAt = Date.now();
  assert.equal(await nodes[2]!.stop("SIGTERM"), 0);
  await settled([nodes[0]!], ["n1"], 30);
  const after = Date.now();
  await hitAll(target.events, target.hits, paths, after, 2);
  for (const path of paths) {
    // The last check before the stop (the kill -9 above may have run one twice: allowed once per takeover), then those after it.
    const at = [hitsOf(target.hits, path).filter((x) => x < stoppedAt).at(-1)!, ...hitsOf(target.hits, path, stoppedAt)];
    const gaps = at.slice(1).map((x, i) => x - at[i]!);
    assert.ok(Math.max(...gaps) <= (2 * interval + 1) * 1000, `${path}: ${Math.max(...gaps)} ms without a check after SIGTERM (lease ${lease} s)`);
    // And none twice in an interval: a handover keeps each service's phase.
    assert.ok(Math.min(...gaps) > (interval * 1000) / 2, `${path} was checked twice in an interval: ${at.map((x) => x - stoppedAt).join(", ")} ms after the stop`);
  }
});

test("a node paused past its lease (SIGSTOP, SIGCONT) starts none of its overdue runs before it has read what it owns", async (t) => {
  const db = await testDatabase(t, "postgres");
  const target = await recordingTarget(t);
  const lease = 3;
  const interval = 2;
  const nodes = [await startNode(t, db, "n1", { lease }), await startNode(t, db, "n2", { lease })];
  await until(() => nodesSeenBy(nodes[0]!), (seen) => seen.filter((n) => n.live).length === 2, "two live nodes");
  await api(nodes[0]!, "PUT", "/services/web", servicesDoc(target.url, 20, interval));
  await settled(nodes, ["n1", "n2"], 20);
  const paths = Array.from({ length: 20 }, (_, i) => `/s${i}`);
  await hitAll(target.events, target.hits, paths, Date.now(), 1);

  const pausedAt = Date.now();
  nodes[1]!.child.kill("SIGSTOP");
  await settled([nodes[0]!], ["n1"], 20); // n1 took n2's services over
  await hitAll(target.events, target.hits, paths, Date.now(), 1);
  nodes[1]!.child.kill("SIGCONT");
  await settled(nodes, ["n1", "n2"], 20);
  await hitAll(target.events, target.hits, paths, Date.now(), 2);
  // Before the fix, n2 ran its overdue runs as it woke, beside n1: about three doubles per service.
  for (const path of paths) {
    const at = hitsOf(target.hits, path, pausedAt);
    const twice = at.slice(1).filter((x, i) => x - at[i]! < (interval * 1000) / 2).length;
    assert.ok(twice <= 1, `${path} was checked twice in an interval ${twice} times: ${at.map((x) => x - pausedAt).join(", ")} ms after the pause`);
  }
});

test("a PUT through one node is checked within a second by the node of the location it names", async (t) => {
  const db = await testDatabase(t, "postgres");
  const target = await recordingTarget(t);
  const a = await startNode(t, db, "na", { location: "a" });
  const b = await startNode(t, db, "nb", { location: "b" });
  await until(() => nodesSeenBy(a), (seen) => seen.filter((n) => n.live).length === 2, "two live nodes");
  const hit = nextEvent<[Hit]>(target.events, "hit", (h) => h.path === "/where");
  const put = Date.now();
  const created = await api(a, "PUT", "/services/web", { services: [{ id: "where", check: { url: `${target.url}/where`, intervalSeconds: 60, locations: ["b"] } }] });
  assert.equal(created.status, 201);
  const [first] = await hit;
  assert.ok(first.at - put < 1500, `checked ${first.at - put} ms after the PUT`);
  assert.equal(first.userAgent, "healthd/0.1.0 (location b)");
  const state = await until(
    async () => (await api(a, "GET", "/services/web/where")).body.state,
    (s) => s.locations?.b?.status === "up",
    "location b's result in the state",
  );
  assert.deepEqual(Object.keys(state.locations), ["b"]);
  const [entry] = (await api(b, "GET", "/services/web/where/data")).body.entries;
  assert.equal(entry.location, "b");
});

/** Every ntfy message of the test topic, by title. */
const titles = (ntfy: NtfyStandIn) => ntfy.messages("ops").map((m) => m.title!).sort();

async function drained(node: Served): Promise<void> {
  await until(
    async () => Number(/^healthd_notifications\{status="pending"\} (\d+)$/m.exec(await (await fetch(node.url + "/metrics")).text())?.[1]),
    (pending) => pending === 0,
    "the outbox drained",
  );
}

test("six services that fail and recover publish exactly one DOWN and one RECOVERED each, with nodes killed in between", async (t) => {
  const db = await testDatabase(t, "postgres");
  const ntfy = await ntfyStandIn(t);
  const target = await recordingTarget(t);
  let failing = true;
  target.fails = () => failing;
  const env = { HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };
  const lease = 3;
  const start = (name: string) => startNode(t, db, name, { lease, env });
  const nodes = new Map([["n1", await start("n1")], ["n2", await start("n2")], ["n3", await start("n3")]]);
  await until(() => nodesSeenBy(nodes.get("n1")!), (seen) => seen.filter((n) => n.live).length === 3, "three live nodes");
  await api(nodes.get("n1")!, "PUT", "/services/web", servicesDoc(target.url, 6, 1, { notifyThreshold: 1 }));
  const downs = Array.from({ length: 6 }, (_, i) => `DOWN: web/s${i}`);
  await until(async () => titles(ntfy), (seen) => downs.every((d) => seen.includes(d)), "six DOWNs");

  // n2 dies with incidents open; n4 joins in its place.
  await nodes.get("n2")!.stop("SIGKILL");
  nodes.delete("n2");
  nodes.set("n4", await start("n4"));
  await settled([nodes.get("n1")!], ["n1", "n3", "n4"], 6);
  failing = false;
  const recovered = Array.from({ length: 6 }, (_, i) => `RECOVERED: web/s${i}`);
  // n3 dies while the recoveries come in.
  await nextEvent<[Hit]>(target.events, "hit", () => true);
  await nodes.get("n3")!.stop("SIGKILL");
  await until(async () => titles(ntfy), (seen) => recovered.every((r) => seen.includes(r)), "six RECOVEREDs");
  // Idle: the outbox drained and every service passed twice more. Then nothing more was published.
  await drained(nodes.get("n1")!);
  await hitAll(target.events, target.hits, Array.from({ length: 6 }, (_, i) => `/s${i}`), Date.now(), 2);
  await drained(nodes.get("n1")!);
  assert.deepEqual(titles(ntfy), [...downs, ...recovered].sort());
});

test("a node started without --ntfy-topic delivers to the cluster's topic: every DOWN and RECOVERED goes out once, in order", async (t) => {
  const db = await testDatabase(t, "postgres");
  const ntfy = await ntfyStandIn(t);
  const target = await recordingTarget(t);
  let failing = true;
  target.fails = () => failing;
  const lease = 3;
  const n1 = await startNode(t, db, "n1", { lease, env: { HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" } });
  // n2 has the ntfy server but no topic: before, the DOWNs it recorded stayed unsent and n1 published their
  // RECOVEREDs alone (7 of 10 services in the hostile test).
  const n2 = await startNode(t, db, "n2", { lease, env: { HEALTHD_NTFY_URL: ntfy.url } });
  await settled([n1, n2], ["n1", "n2"], 0);
  await api(n1, "PUT", "/services/web", servicesDoc(target.url, 10, 1, { notifyThreshold: 1 }));
  await settled([n1, n2], ["n1", "n2"], 10);
  const downs = Array.from({ length: 10 }, (_, i) => `DOWN: web/s${i}`);
  await until(async () => titles(ntfy), (seen) => downs.every((d) => seen.includes(d)), "ten DOWNs");
  failing = false;
  const recovered = Array.from({ length: 10 }, (_, i) => `RECOVERED: web/s${i}`);
  await until(async () => titles(ntfy), (seen) => recovered.every((r) => seen.includes(r)), "ten RECOVEREDs");
  await drained(n1);
  assert.deepEqual(titles(ntfy), [...downs, ...recovered].sort());
  for (let i = 0; i < 10; i++) {
    const order = ntfy.messages("ops").map((m) => m.title!).filter((title) => title.endsWith(`web/s${i}`));
    assert.deepEqual(order, [`DOWN: web/s${i}`, `RECOVERED: web/s${i}`]);
  }
  const unsent = /^healthd_notifications\{status="unsent"\} (\d+)$/m.exec(await (await fetch(n2.url + "/metrics")).text())?.[1];
  assert.equal(unsent, "0");
});

test("three locations with quorum 2: one failing location opens no incident, two open exactly one", async (t) => {
  const db = await testDatabase(t, "postgres");
  const ntfy = await ntfyStandIn(t);
  const target = await recordingTarget(t);
  let failingIn = ["a"];
  target.fails = (hit) => failingIn.some((l) => hit.userAgent.endsWith(`(location ${l})`));
  const env = { HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };
  const nodes = [
    await startNode(t, db, "na", { location: "a", env }),
    await startNode(t, db, "nb", { location: "b", env }),
    await startNode(t, db, "nc", { location: "c", env }),
  ];
  await until(() => nodesSeenBy(nodes[0]!), (seen) => seen.filter((n) => n.live).length === 3, "three live nodes");
  await api(nodes[0]!, "PUT", "/services/web", { services: [{ id: "site", check: { url: `${target.url}/site`, intervalSeconds: 1, notifyThreshold: 0, locations: ["a", "b", "c"] } }] });
  // Every location checks it, every second: a fails, b and c pass.
  await hitAll(target.events, target.hits, ["/site"], Date.now(), 12);
  const state = (await api(nodes[1]!, "GET", "/services/web/site")).body.state;
  assert.deepEqual(
    Object.entries(state.locations).map(([name, l]) => [name, (l as { status: string }).status]),
    [["a", "down"], ["b", "up"], ["c", "up"]],
  );
  assert.equal(state.status, "up");
  assert.equal(state.consecutiveFailures, 0);
  await drained(nodes[0]!);
  assert.deepEqual((await api(nodes[2]!, "GET", "/incidents")).body.incidents, []);
  assert.deepEqual(titles(ntfy), []);
  const perLocation = (l: string) => target.hits.filter((h) => h.userAgent.endsWith(`(location ${l})`)).length;
  assert.ok(perLocation("a") >= 3 && perLocation("b") >= 3 && perLocation("c") >= 3, `${perLocation("a")}, ${perLocation("b")}, ${perLocation("c")}`);

  failingIn = ["a", "b"];
  await until(async () => titles(ntfy), (seen) => seen.includes("DOWN: web/site"), "the DOWN");
  await hitAll(target.events, target.hits, ["/site"], Date.now(), 9);
  await drained(nodes[0]!);
  assert.deepEqual(titles(ntfy), ["DOWN: web/site"]);
  const [incident] = (await api(nodes[2]!, "GET", "/incidents")).body.incidents;
  assert.match(incident.firstError, /^2 of 3 locations fail; (a|b): status 500/);
  const message = ntfy.messages("ops")[0]!.message;
  assert.match(message, /2 of 3 locations fail/);
});

test("SQLite: GET /nodes lists the one daemon; locations it is not in stay unmonitored", async (t) => {
  const { testDaemon } = await import("./support/daemon.ts");
  const { open } = await import("./support/raw.ts");
  const target = await recordingTarget(t);
  // The row of a daemon that died a moment ago under another name: one daemon serves a SQLite file, so it is
  // dead however young its heartbeat, and the one that starts takes everything (before, it shared the checks
  // with it until its lease ran out).
  const db = await testDatabase(t, "sqlite");
  const before = await open(db, { mode: "write" });
  const now = Date.now();
  await before.registerNode({ name: "ghost", instance: "x", host: "elsewhere", pid: 1, location: "home", version: "0.1.0", startedAt: now, lastSeenAt: now, leaseMs: 180_000 }, now);
  await before.close();
  const d = await testDaemon(t, { db, node: "solo", location: "home" });
  const nodes = (await d.api("GET", "/nodes")).body.nodes;
  assert.deepEqual(nodes.map((n: NodeView) => n.name), ["solo"]);
  const [self] = nodes;
  assert.deepEqual([self.name, self.location, self.self, self.live, self.services], ["solo", "home", true, true, 0]);
  const hit = nextEvent<[Hit]>(target.events, "hit");
  await d.api("PUT", "/services/web", { services: [{ id: "site", check: { url: `${target.url}/site`, locations: ["home", "away"], quorum: 1 } }] });
  const [first] = await hit;
  assert.equal(first.userAgent, "healthd/0.1.0 (location home)");
  const state = await until(
    async () => (await d.api("GET", "/services/web/site")).body.state,
    (s) => s.locations.home.status === "up",
    "home's result",
  );
  assert.deepEqual(state.locations.away, { status: "unmonitored", lastCheckedAt: null });
  assert.equal((await d.api("GET", "/nodes")).body.nodes[0].services, 1);
  assert.equal((await d.api("GET", "/services/web/site/data")).body.entries[0].location, "home");
  const invalid = await d.api("PUT", "/services/web", { services: [{ id: "site", check: { url: target.url, locations: ["a", "b"], quorum: 3 } }] });
  assert.deepEqual(invalid.body.errors, [{ path: "/services/0/check/quorum", message: "must be from 1 to the number of locations (2)" }]);
});
