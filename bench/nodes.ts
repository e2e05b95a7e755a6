/**
 * npm run bench:nodes — three nodes of the built executable on one PostgreSQL database share SERVICES (3,000)
 * services at INTERVAL (10) s: 300 checks/s in all, against a target in this process that records every hit.
 * ROUNDS (3) rounds, each: STEADY (30) s of steady state, then kill -9 of one node (a different one each
 * round), TAKEOVER (lease + 2 intervals) s of watching the others take over, then the node starts again.
 * Prints per round and as medians: checks per node (spread against the fair share), scheduling lag p99,
 * duplicate runs (two within half an interval) and missed runs (a gap over one and a half intervals) per
 * service outside and inside the takeover window, and the takeover time (the kill to the last of the dead
 * node's services checked again) against the lease plus an interval.
 *
 * Then three database outages of OUTAGE (30) s, each node reaching PostgreSQL through a proxy of its own: one
 * node's link lost (a black hole: the others take over), PostgreSQL refusing every node (each keeps checking),
 * and a lone node refused (the other two stopped first). For each: the longest time a service went unchecked,
 * duplicate runs, and results lost (requests the target received in the window against entries stored for it).
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (PGURL to use another); makes and drops its own database. Load goes to
 * 127.0.0.1 only; it stops by itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { tcpProxy, throughProxy, type TcpProxy } from "../test/support/tcp-proxy.ts";
import { lagBucketsIn, listening, metricIn, scrape } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 3000);
const interval = Number(process.env.INTERVAL ?? 10);
const rounds = Number(process.env.ROUNDS ?? 3);
const steady = Number(process.env.STEADY ?? 30);
const lease = Number(process.env.LEASE ?? 15);
const takeover = Number(process.env.TAKEOVER ?? lease + 2 * interval);
const outage = Number(process.env.OUTAGE ?? 30);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const admin = process.env.PGURL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const names = ["n1", "n2", "n3"];
const perServer = 100;

const database = `healthd_bench_nodes_${process.pid}`;
const adminClient = new pg.Client({ connectionString: admin });
await adminClient.connect();
await adminClient.query(`CREATE DATABASE ${database}`);
const url = new URL(admin);
url.pathname = `/${database}`;
const db = url.toString();

// The target: every hit's time, by service path.
const hits = new Map<string, number[]>();
const target = createServer((req, res) => {
  const path = req.url ?? "/";
  let list = hits.get(path);
  if (!list) hits.set(path, (list = []));
  list.push(Date.now());
  res.end("ok");
});
await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

interface Node {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
}

// Each node reaches PostgreSQL through a proxy of its own, so that one node's link can be cut.
const closing: (() => unknown)[] = [];
const proxies = new Map<string, TcpProxy>();
for (const name of names) proxies.set(name, await tcpProxy({ after: (fn) => closing.push(fn) }, { host: url.hostname, port: Number(url.port || 5432) }));

async function start(name: string): Promise<Node> {
  const through = throughProxy(db, proxies.get(name)!);
  const child = spawn(process.execPath, [bin, "serve", "--db", through, "--port", "0", "--node", name, "--lease-seconds", String(lease), "--max-in-flight", "512"], {
    env: { ...process.env, HEALTHD_NTFY_URL: "http://127.0.0.1:9" },
  });
  const url = await listening(child, name);
  child.stderr!.resume();
  return { name, child, url };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** p99 of the runs started between two scrapes of several nodes, as a bucket's upper bound (ms). */
function p99(before: Map<number, number>[], after: Map<number, number>[]): number {
  const bounds = [...after[0]!.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => after.reduce((sum, a, i) => sum + a.get(b)! - (before[i]?.get(b) ?? 0), 0));
  const total = counts.at(-1)!;
  return bounds[counts.findIndex((c) => c >= 0.99 * total)]!;
}

/** Duplicate and missed runs of each path between `from` and `until`. */
function runs(paths: readonly string[], from: number, until: number) {
  let duplicates = 0;
  let missed = 0;
  let worstDuplicates = 0;
  for (const path of paths) {
    const at = (hits.get(path) ?? []).filter((t) => t >= from - interval * 1000 && t < until);
    let twice = 0;
    for (let i = 1; i < at.length; i++) {
      const gap = at[i]! - at[i - 1]!;
      if (gap < (interval * 1000) / 2) twice++;
      if (gap > interval * 1500) missed += Math.round(gap / (interval * 1000)) - 1;
    }
    const last = at.at(-1);
    if (last !== undefined && until - last > interval * 1500) missed += Math.floor((until - last) / (interval * 1000));
    duplicates += twice;
    worstDuplicates = Math.max(worstDuplicates, twice);
  }
  return { duplicates, missed, worstDuplicates };
}

const nodes = new Map<string, Node>();
try {
  for (const name of names) nodes.set(name, await start(name));
  const first = nodes.get("n1")!;
  for (let s = 0; s < services / perServer; s++) {
    const list = Array.from({ length: perServer }, (_, i) => ({ id: `s${i}`, check: { url: `${base}/${s}/${i}`, intervalSeconds: interval } }));
    const put = await fetch(`${first.url}/services/srv-${s}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services: list }) });
    if (put.status !== 201) throw new Error(`PUT answered ${put.status}: ${await put.text()}`);
  }
  const paths = Array.from({ length: services }, (_, i) => `/${Math.floor(i / perServer)}/${i % perServer}`);
  const owners = new pg.Client({ connectionString: db });
  await owners.connect();
  // Warm-up: every service checked at least once, then one more interval.
  while (paths.some((p) => !hits.has(p))) await sleep(500);
  await sleep(interval * 1000);

  const results: { spread: number; lagP99: number; steadyDup: number; steadyMissed: number; takeoverS: number; takeoverDupMax: number; takeoverMissed: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    const live = [...nodes.values()];
    const checks0 = await Promise.all(live.map(async (n) => metricIn(await scrape(n.url), "healthd_checks_total")));
    const buckets0 = await Promise.all(live.map(async (n) => lagBucketsIn(await scrape(n.url))));
    const steadyFrom = Date.now();
    await sleep(steady * 1000);
    const steadyUntil = Date.now();
    const perNode = (await Promise.all(live.map(async (n) => metricIn(await scrape(n.url), "healthd_checks_total")))).map((c, i) => (c - checks0[i]!) / steady);
    const lagP99 = p99(buckets0, await Promise.all(live.map(async (n) => lagBucketsIn(await scrape(n.url)))));
    const share = perNode.reduce((a, b) => a + b, 0) / perNode.length;
    const spread = Math.max(...perNode.map((c) => Math.abs(c - share) / share));
    const steadyRuns = runs(paths, steadyFrom + interval * 1000, steadyUntil);

    // kill -9 one node; watch the others take over its services.
    const victim = names[round % names.length]!;
    const { rows } = await owners.query<{ server_id: string; id: string }>(
      "SELECT s.server_id, s.id FROM service_owners o JOIN services s ON s.key = o.service_key WHERE o.node = $1",
      [victim],
    );
    const orphans = rows.map((r) => `/${r.server_id.slice(4)}/${r.id.slice(1)}`);
    const killedAt = Date.now();
    nodes.get(victim)!.child.kill("SIGKILL");
    nodes.delete(victim);
    await sleep(takeover * 1000);
    const takeoverUntil = Date.now();
    const firstAfter = orphans.map((p) => (hits.get(p) ?? []).find((t) => t > killedAt + 1000) ?? Infinity);
    const takeoverS = (Math.max(...firstAfter) - killedAt) / 1000;
    const takeoverRuns = runs(orphans, killedAt, takeoverUntil);
    results.push({
      spread,
      lagP99,
      steadyDup: steadyRuns.duplicates,
      steadyMissed: steadyRuns.missed,
      takeoverS,
      takeoverDupMax: takeoverRuns.worstDuplicates,
      takeoverMissed: takeoverRuns.missed,
    });
    console.log(
      `round ${round + 1}/${rounds}: checks/s per node ${perNode.map((c) => fixed(c)).join(", ")} (spread ±${fixed(spread * 100)} % of the share), ` +
        `lag p99 ≤${lagP99} ms, steady: ${steadyRuns.duplicates} duplicate and ${steadyRuns.missed} missed runs of ${services} services; ` +
        `kill -9 ${victim} (${orphans.length} services): all checked again after ${fixed(takeoverS)} s (lease + interval = ${lease + interval} s), ` +
        `at most ${takeoverRuns.worstDuplicates} duplicate per service, ${takeoverRuns.missed} missed runs in the window`,
    );
    nodes.set(victim, await start(victim));
    await sleep(interval * 1000); // it takes its share back, and the services settle on their phases
  }
  const med = (key: keyof (typeof results)[number]) => median(results.map((r) => r[key]));
  console.log(
    `median: spread ±${fixed(med("spread") * 100)} % (target ±20 %), lag p99 ≤${med("lagP99")} ms, ` +
      `steady duplicates ${med("steadyDup")} and missed ${med("steadyMissed")} (target 0), ` +
      `takeover ${fixed(med("takeoverS"))} s (target ≤ ${lease + interval} s), at most ${med("takeoverDupMax")} duplicate per service per takeover (target ≤ 1)`,
  );

  /** An outage of OUTAGE seconds made by `cut` and ended by `heal`; the figures for `watched` services. */
  const outageRound = async (name: string, watched: readonly string[], cut: () => Promise<void>, heal: () => Promise<void>) => {
    const from = Date.now();
    await cut();
    await sleep(outage * 1000);
    await heal();
    const healedAt = Date.now();
    // Every node stores what it kept once it reaches the database again.
    for (const node of nodes.values()) {
      while ((await (await fetch(`${node.url}/healthz`)).json() as { status: string }).status !== "ok") await sleep(500);
    }
    await sleep(interval * 1000);
    const until = Date.now();
    let longest = 0;
    for (const path of watched) {
      const at = (hits.get(path) ?? []).filter((t) => t >= from - interval * 1000 && t < until);
      for (let i = 1; i < at.length; i++) longest = Math.max(longest, at[i]! - at[i - 1]!);
    }
    const { duplicates } = runs(watched, from, until);
    const received = watched.reduce((n, path) => n + (hits.get(path) ?? []).filter((t) => t >= from && t < healedAt).length, 0);
    const keys = watched.map((path) => path.split("/").slice(1));
    const { rows } = await owners.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM health_check_data_entries e JOIN services s ON s.key = e.service_key
       WHERE e.checked_at >= $1 AND e.checked_at < $2 AND (s.server_id, s.id) IN (SELECT 'srv-' || x, 's' || y FROM unnest($3::text[], $4::text[]) AS u(x, y))`,
      // A check reaches the target a moment after it starts (checked_at): the same window, a little earlier.
      [from - 100, healedAt - 100, keys.map((k) => k[0]), keys.map((k) => k[1])],
    );
    console.log(
      `outage ${outage} s, ${name}: ${watched.length} services, longest unchecked ${fixed(longest / 1000)} s (interval ${interval} s), ` +
        `${duplicates} duplicate runs, ${received} requests received and ${rows[0]!.n} entries stored for them (${Math.max(0, received - rows[0]!.n)} lost)`,
    );
  };
  const ownedBy = async (name: string) => {
    const { rows } = await owners.query<{ server_id: string; id: string }>(
      "SELECT s.server_id, s.id FROM service_owners o JOIN services s ON s.key = o.service_key WHERE o.node = $1",
      [name],
    );
    return rows.map((r) => `/${r.server_id.slice(4)}/${r.id.slice(1)}`);
  };
  await outageRound("one node's link lost (black hole), the others take over", await ownedBy("n1"), () => proxies.get("n1")!.set("blackhole"), () => proxies.get("n1")!.restore());
  await sleep(interval * 1000);
  const all = [...proxies.values()];
  await outageRound(
    "PostgreSQL refusing every node",
    paths,
    () => Promise.all(all.map((p) => p.cut())).then(() => {}),
    () => Promise.all(all.map((p) => p.restore())).then(() => {}),
  );
  for (const name of ["n2", "n3"]) {
    const node = nodes.get(name)!;
    node.child.kill("SIGTERM");
    await new Promise((resolve) => node.child.once("exit", resolve));
    nodes.delete(name);
  }
  await sleep(interval * 1000);
  await outageRound("a lone node refused", paths, () => proxies.get("n1")!.cut(), () => proxies.get("n1")!.restore());
  await owners.end();
} finally {
  for (const node of nodes.values()) node.child.kill("SIGTERM");
  await Promise.all([...nodes.values()].map((n) => new Promise((resolve) => (n.child.exitCode !== null ? resolve(null) : n.child.once("exit", resolve)))));
  target.close();
  for (const close of closing) await close();
  await adminClient.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await adminClient.end();
}
