/**
 * A look inside a daemon under bench:kinds' load of one database kind: SERVICES (1,000) checks of KIND
 * (postgres) every INTERVAL (20) s, settled for WARMUP (30) s, then SECONDS (20) s measured: the daemon's CPU per
 * check that passed and per check made, its checks by result and error kind, planned runs skipped, checks in
 * flight, scheduler lag and check durations (from /metrics), the kernel's count of connections dropped by a
 * full accept queue (any listening socket of the machine: ListenOverflows), and the server's connections at
 * the end (PostgreSQL's pg_stat_activity). PROF=dir profiles the daemon (node --cpu-prof) into dir.
 */
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { listening } from "./proc.ts";

const services = Number(process.env.SERVICES ?? 1000);
const interval = Number(process.env.INTERVAL ?? 20);
const warmup = Number(process.env.WARMUP ?? 30);
const seconds = Number(process.env.SECONDS ?? 20);
const kind = process.env.KIND ?? "postgres";
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const urls: Record<string, string> = {
  postgres: process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  redis: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
  mysql: process.env.BENCH_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test",
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpu = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};
async function metrics(url: string) {
  const text = await (await fetch(`${url}/metrics`, { headers: { connection: "close" } })).text();
  const sum = (re: RegExp) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[m.length - 1]), 0);
  const byResult: Record<string, number> = {};
  for (const m of text.matchAll(/^healthd_checks_total\{([^}]*)\} (\d+)$/gm)) {
    if (!m[1]!.includes(`type="${kind}"`)) continue;
    const key = `${/result="(\w+)"/.exec(m[1]!)![1]}/${/error_kind="(\w+)"/.exec(m[1]!)?.[1]}`;
    byResult[key] = (byResult[key] ?? 0) + Number(m[2]);
  }
  return {
    byResult,
    skipped: sum(/^healthd_scheduler_skipped_runs_total (\d+)$/gm),
    inFlight: sum(/^healthd_checks_in_flight (\d+)$/gm),
    lagSum: sum(/^healthd_scheduler_lag_seconds_sum (\S+)$/gm),
    lagCount: sum(/^healthd_scheduler_lag_seconds_count (\S+)$/gm),
    durSum: sum(/^healthd_check_duration_seconds_sum (\S+)$/gm),
    durCount: sum(/^healthd_check_duration_seconds_count (\S+)$/gm),
  };
}
const backends = () => {
  if (kind !== "postgres") return "";
  try {
    return execFileSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-Atc", "select count(*) from pg_stat_activity where backend_type = 'client backend'"], { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
};

/** The kernel's counts of connections a listening socket dropped: its accept queue full, SYNs dropped (nstat). */
const listenDrops = () => {
  const text = readFileSync("/proc/net/netstat", "utf8").split("\n");
  const names = text[0]!.split(" ");
  const values = text[1]!.split(" ");
  return { overflows: Number(values[names.indexOf("ListenOverflows")]), drops: Number(values[names.indexOf("ListenDrops")]) };
};

const dir = mkdtempSync(join(tmpdir(), "healthd-probe-"));
const prof = process.env.PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.PROF] : [];
const child = spawn(process.execPath, [...prof, bin, "serve", "--db", join(dir, "probe.db"), "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
try {
  const url = await listening(child);
  for (let s = 0; s * 1000 < services; s++) {
    const count = Math.min(1000, services - s * 1000);
    const doc = { services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { type: kind, url: urls[kind], intervalSeconds: interval, notify: false } })) };
    const answer = await fetch(`${url}/services/server-${s}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(doc) });
    if (answer.status !== 201) throw new Error(`PUT failed: ${answer.status} ${await answer.text()}`);
  }
  await sleep(warmup * 1000);
  const m0 = await metrics(url);
  const c0 = cpu(child.pid!);
  const l0 = listenDrops();
  const t0 = Date.now();
  const samples: string[] = [];
  for (let i = 0; i < seconds; i += 2) {
    await sleep(2000);
    const m = await metrics(url);
    samples.push(String(m.inFlight));
  }
  const c1 = cpu(child.pid!);
  const l1 = listenDrops();
  const elapsed = (Date.now() - t0) / 1000;
  const m1 = await metrics(url);
  const delta: Record<string, number> = {};
  for (const k of new Set([...Object.keys(m0.byResult), ...Object.keys(m1.byResult)])) delta[k] = (m1.byResult[k] ?? 0) - (m0.byResult[k] ?? 0);
  const made = Object.values(delta).reduce((a, b) => a + b, 0);
  const ok = Object.entries(delta).filter(([k]) => k.startsWith("ok")).reduce((a, [, v]) => a + v, 0);
  const cpuMs = (c1 - c0) * 1000;
  console.log(JSON.stringify({
    kind, services, interval, seconds: elapsed, planned: Math.round((services * elapsed) / interval), made, ok, byResult: delta,
    listenOverflows: l1.overflows - l0.overflows, listenDrops: l1.drops - l0.drops,
    cpuMsPerOk: +(cpuMs / ok).toFixed(3), cpuMsPerMade: +(cpuMs / made).toFixed(3),
    skipped: m1.skipped - m0.skipped,
    meanLagMs: +(((m1.lagSum - m0.lagSum) / (m1.lagCount - m0.lagCount)) * 1000).toFixed(1),
    meanDurationMs: +(((m1.durSum - m0.durSum) / (m1.durCount - m0.durCount)) * 1000).toFixed(1),
    inFlightEvery2s: samples.join(" "),
    serverBackendsAtEnd: backends(),
  }));
} finally {
  child.kill("SIGTERM");
  await once(child, "exit");
  rmSync(dir, { recursive: true, force: true });
}
