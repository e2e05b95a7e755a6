/**
 * npm run bench:kinds — what each kind of check costs beside an http check: CPU time per check of a daemon
 * with SERVICES (1,000) services of one kind at INTERVAL (20) s against local targets (bench/kind-target.ts),
 * settled (measured for SECONDS (60) once it has made WARMUP_CHECKS (2,400) checks, 48 s at 1,000 services),
 * the kinds alternating within each of RUNS (3) runs, a fresh daemon each. KINDS (all of `checks` below, by
 * default) picks some. CPU from /proc, the daemon's own and that of the children it waited for (icmp's ping),
 * per check that passed (its healthd_checks_total, checked against what the target received where it counts).
 * postgres, mysql and redis check this machine's own servers (127.0.0.1:5432 as postgres, :3306 as root with
 * database test, :6379; BENCH_POSTGRES_URL, BENCH_MYSQL_URL, BENCH_REDIS_URL for others).
 * Prints each kind's median and its ratio to http's. Load goes to 127.0.0.1 only.
 */
import { fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { listening, rssMb } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const runs = Number(process.env.RUNS ?? 3);
const services = Number(process.env.SERVICES ?? 1000);
const interval = Number(process.env.INTERVAL ?? 20);
const warmupChecks = Number(process.env.WARMUP_CHECKS ?? 2400);
const seconds = Number(process.env.SECONDS ?? 60);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

/** Each kind's check of service `i` against the target's ports: a new kind is one line here (and its target). */
const checks: Record<string, (ports: Record<string, number>, i: number) => object> = {
  http: (p, i) => ({ url: `http://127.0.0.1:${p.http}/svc-${i}` }),
  tcp: (p) => ({ type: "tcp", host: "127.0.0.1", port: p.tcp, expect: [{ banner: { contains: "220 " } }] }),
  dns: (p, i) => ({ type: "dns", name: `svc-${i}.bench.test`, server: `127.0.0.1:${p.dns}`, expect: [{ answers: { includes: "192.0.2.10" } }] }),
  udp: (p) => ({ type: "udp", host: "127.0.0.1", port: p.udp, send: "ping", expect: [{ contains: "echo: ping" }] }),
  https: (p, i) => ({ url: `https://127.0.0.1:${p.https}/svc-${i}`, verifyTls: false }),
  tls: (p) => ({ type: "tls", host: "127.0.0.1", port: p.tls, verifyTls: false }),
  // One echo a check, as the others make one exchange (the default, 3, is three).
  icmp: () => ({ type: "icmp", host: "127.0.0.1", count: 1 }),
  websocket: (p) => ({ type: "websocket", url: `ws://127.0.0.1:${p.websocket}/svc`, send: "ping", expect: [{ contains: "pong" }] }),
  grpc: (p) => ({ type: "grpc", target: `127.0.0.1:${p.grpc}` }),
  // This machine's own servers (the target has none to offer); BENCH_*_URL for others.
  postgres: () => ({ type: "postgres", url: process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" }),
  mysql: () => ({ type: "mysql", url: process.env.BENCH_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" }),
  redis: () => ({ type: "redis", url: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379" }),
};
const kinds = (process.env.KINDS?.split(",") ?? Object.keys(checks)).filter((k) => k in checks);
if (!kinds.includes("http")) kinds.unshift("http"); // the ratio's base
type Kind = string;

const target = fork(new URL("./kind-target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [ports] = (await once(target, "message")) as [Record<Kind, number>];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What the target received of `kind` since last asked; null for a kind it cannot count (icmp). */
async function received(kind: Kind): Promise<number | null> {
  target.send({ count: kind });
  const [message] = (await once(target, "message")) as [{ count: number | null }];
  return message.count;
}
/** The checks of `kind` that passed so far, from the daemon's /metrics: a kind whose target failed it is not measured. */
async function made(url: string, kind: Kind): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^healthd_checks_total\{([^}]*)\} (\d+)$/gm)) if (m[1]!.includes(`type="${kind === "https" ? "http" : kind}"`) && m[1]!.includes('result="ok"')) sum += Number(m[2]);
  return sum;
}
/** CPU seconds of a process and of the children it has waited for (utime, stime, cutime, cstime). */
function cpuWithChildren(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / 100;
}
const checkOf = (kind: Kind, i: number) => checks[kind]!(ports, i);

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
    await received(kind);
    const made0 = await made(url, kind);
    const cpu0 = cpuWithChildren(child.pid!);
    await sleep(seconds * 1000);
    const cpuMs = (cpuWithChildren(child.pid!) - cpu0) * 1000;
    const checks = (await made(url, kind)) - made0;
    const got = await received(kind);
    const expected = (seconds * services) / interval;
    if (checks < expected * 0.9) throw new Error(`${kind}: ${checks} checks passed, fewer than the ${expected} planned (is its target up?)`);
    if (got !== null && got < checks * 0.9) throw new Error(`${kind}: the target received ${got} of the daemon's ${checks} checks`);
    return { cpuMsPerCheck: cpuMs / checks, rssMb: rssMb(child.pid!) };
  } finally {
    child.kill("SIGTERM");
    await once(child, "exit");
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<Kind, number[]> = Object.fromEntries(kinds.map((k) => [k, []]));
for (let r = 0; r < runs; r++) {
  // The kinds alternate, starting from a different one each run.
  for (let k = 0; k < kinds.length; k++) {
    const kind = kinds[(r + k) % kinds.length]!;
    const m = await measure(kind);
    results[kind]!.push(m.cpuMsPerCheck);
    console.log(`run ${r + 1}/${runs} ${kind}: ${services} services at ${interval} s, settled: ${fixed(m.cpuMsPerCheck, 3)} ms CPU per check, RSS ${fixed(m.rssMb, 1)} MB`);
  }
}
const http = median(results.http!);
for (const kind of kinds) {
  console.log(`${kind}: ${fixed(median(results[kind]!), 3)} ms CPU per check (median of ${runs}), ratio to http ${fixed(median(results[kind]!) / http, 2)}`);
}
target.kill();
