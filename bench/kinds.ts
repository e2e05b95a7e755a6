/**
 * npm run bench:kinds — what a tcp and a dns check cost beside an http check: CPU time per check of a daemon
 * with SERVICES (1,000) services of one kind at INTERVAL (20) s against local targets (bench/kind-target.ts),
 * settled (measured for SECONDS (60) once it has made WARMUP_CHECKS (2,400) checks, 48 s at 1,000 services),
 * the kinds alternating within each of RUNS (3) runs, a fresh daemon each. CPU from /proc, per check
 * the target received. Prints each kind's median and its ratio to http's. Load goes to 127.0.0.1 only.
 * postgres, mysql and redis check this machine's servers (127.0.0.1:5432 as postgres, :3306 as root with
 * database test, :6379; BENCH_POSTGRES_URL, BENCH_MYSQL_URL, BENCH_REDIS_URL for others), which count nothing
 * for us: their checks are the daemon's own count of passing ones (/metrics). KINDS=http,redis picks kinds.
 */
import { fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSeconds, listening, rssMb } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 3);
const services = Number(process.env.SERVICES ?? 1000);
const interval = Number(process.env.INTERVAL ?? 20);
const warmupChecks = Number(process.env.WARMUP_CHECKS ?? 2400);
const seconds = Number(process.env.SECONDS ?? 60);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const allKinds = ["http", "tcp", "dns", "postgres", "mysql", "redis"] as const;
type Kind = (typeof allKinds)[number];
const kinds = allKinds.filter((kind) => process.env.KINDS === undefined || process.env.KINDS.split(",").includes(kind));
const databases: Partial<Record<Kind, string>> = {
  postgres: process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  mysql: process.env.BENCH_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test",
  redis: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
};

const target = fork(new URL("./kind-target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [ports] = (await once(target, "message")) as [Record<Kind, number>];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A database kind's checks that passed, as the daemon at `url` counts them (its targets count nothing for us). */
async function passed(url: string, kind: Kind): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = new RegExp(`^healthd_checks_total\\{type="${kind}",result="ok"[^}]*\\} (\\d+)$`, "m");
  return Number(line.exec(text)?.[1] ?? 0);
}
async function received(kind: Kind): Promise<number> {
  target.send({ count: kind });
  const [message] = (await once(target, "message")) as [{ count: number }];
  return message.count;
}

const checkOf = (kind: Kind, i: number) =>
  databases[kind] !== undefined
    ? { type: kind, url: databases[kind] }
    : kind === "http"
    ? { url: `http://127.0.0.1:${ports.http}/svc-${i}` }
    : kind === "tcp"
      ? { type: "tcp", host: "127.0.0.1", port: ports.tcp, expect: [{ banner: { contains: "220 " } }] }
      : { type: "dns", name: `svc-${i}.bench.test`, server: `127.0.0.1:${ports.dns}`, expect: [{ answers: { includes: "192.0.2.10" } }] };

async function measure(kind: Kind): Promise<{ cpuMsPerCheck: number; rssMb: number }> {
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-kinds-"));
  const child = spawn(process.execPath, [bin, "serve", "--db", join(dir, "bench.db"), "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  try {
    const url = await listening(child);
    for (let s = 0; s * 1000 < services; s++) {
      const count = Math.min(1000, services - s * 1000);
      const doc = { services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { ...checkOf(kind, s * 1000 + i), intervalSeconds: interval, notify: false } })) };
      const answer = await fetch(`${url}/services/server-${s}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(doc) });
      if (answer.status !== 201) throw new Error(`PUT failed: ${answer.status} ${await answer.text()}`);
    }
    await sleep((warmupChecks / (services / interval)) * 1000 + 2000);
    const count = databases[kind] !== undefined ? () => passed(url, kind) : () => received(kind);
    const before = databases[kind] !== undefined ? await count() : (await count(), 0);
    const cpu0 = cpuSeconds(child.pid!);
    await sleep(seconds * 1000);
    const cpuMs = (cpuSeconds(child.pid!) - cpu0) * 1000;
    const checks = (await count()) - before;
    const expected = (seconds * services) / interval;
    if (checks < expected * 0.9) throw new Error(`${kind}: the target received ${checks} checks, fewer than the ${expected} planned`);
    return { cpuMsPerCheck: cpuMs / checks, rssMb: rssMb(child.pid!) };
  } finally {
    child.kill("SIGTERM");
    await once(child, "exit");
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = Object.fromEntries(allKinds.map((kind) => [kind, [] as number[]])) as Record<Kind, number[]>;
for (let r = 0; r < runs; r++) {
  // The kinds alternate, starting from a different one each run.
  for (let k = 0; k < kinds.length; k++) {
    const kind = kinds[(r + k) % kinds.length]!;
    const m = await measure(kind);
    results[kind].push(m.cpuMsPerCheck);
    console.log(`run ${r + 1}/${runs} ${kind}: ${services} services at ${interval} s, settled: ${fixed(m.cpuMsPerCheck, 3)} ms CPU per check, RSS ${fixed(m.rssMb, 1)} MB`);
  }
}
const http = median(results.http);
for (const kind of kinds) {
  console.log(`${kind}: ${fixed(median(results[kind]), 3)} ms CPU per check (median of ${runs}), ratio to http ${fixed(median(results[kind]) / http, 2)}`);
}
target.kill();
