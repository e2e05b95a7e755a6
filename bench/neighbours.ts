/**
 * npm run bench:neighbours — one checked site or one API client must not degrade the others. Two scenarios on the
 * built executable (BIN to measure another one, e.g. an older build), each for SECONDS:
 * 1. header flood: HOSTILE (10) services whose answer carries 5,000 headers, beside HEALTHY (100) services,
 *    all at 1 s. Prints the healthy services' checks per 10 s (the target counts them; 10 is every one),
 *    the scheduling lag (mean and p99 from the daemon's histogram), and /healthz response times.
 * 2. silent API clients: the daemon under `ulimit -n 256` with 50 healthy services at 1 s, while SOCKETS (2000)
 *    connections to the API are opened and left silent. Prints the checks that failed for want of file
 *    descriptors (errorKind internal), the services marked down, and the notifications queued.
 * Load goes to 127.0.0.1 only; everything stops by itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSeconds, listening } from "./proc.ts";
import { fixed, median, percentile } from "./stats.ts";

const seconds = Number(process.env.SECONDS ?? 20);
const hostile = Number(process.env.HOSTILE ?? 10);
const healthy = Number(process.env.HEALTHY ?? 100);
const sockets = Number(process.env.SOCKETS ?? 2000);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "healthd-bench-neighbours-"));

const hits = new Map<string, number>();
const target = createServer((req: IncomingMessage, res: ServerResponse) => {
  const path = (req.url ?? "/").split("?")[0]!;
  hits.set(path, (hits.get(path) ?? 0) + 1);
  if (path === "/flood") for (let i = 0; i < 5000; i++) res.setHeader(`x-header-${i}`, "value");
  res.end("ok");
});
await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

async function serve(db: string, ulimit?: number): Promise<{ child: ChildProcess; url: string }> {
  const args = [bin, "serve", "--db", db, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"];
  const child = ulimit
    ? spawn("sh", ["-c", `ulimit -n ${ulimit} && exec "$0" "$@"`, process.execPath, ...args])
    : spawn(process.execPath, args);
  const url = await listening(child);
  return { child, url };
}

const put = (url: string, server: string, services: object[]) =>
  fetch(`${url}/services/${server}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services }) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function histogram(metrics: string, name: string): { mean: number; p99: number } {
  const sum = Number(new RegExp(`^${name}_sum (\\S+)$`, "m").exec(metrics)?.[1]);
  const count = Number(new RegExp(`^${name}_count (\\S+)$`, "m").exec(metrics)?.[1]);
  const buckets = [...metrics.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))].map((m) => [Number(m[1]), Number(m[2])] as const);
  const p99 = buckets.find(([, n]) => n >= count * 0.99)?.[0] ?? NaN;
  return { mean: sum / count, p99 };
}

// 1. Header flood.
{
  const { child, url } = await serve(join(dir, "flood.db"));
  await put(url, "healthy", Array.from({ length: healthy }, (_, i) => ({ id: `h${i}`, check: { url: `${base}/ok/${i}`, intervalSeconds: 1, notify: false } })));
  await put(url, "flood", Array.from({ length: hostile }, (_, i) => ({ id: `f${i}`, check: { url: `${base}/flood`, intervalSeconds: 1, notify: false } })));
  await sleep(2000); // every service is scheduled and on its phase
  for (const key of hits.keys()) hits.delete(key);
  const health: number[] = [];
  const cpuBefore = cpuSeconds(child.pid!);
  const started = Date.now();
  while (Date.now() - started < seconds * 1000) {
    const t0 = performance.now();
    await fetch(`${url}/healthz`);
    health.push(performance.now() - t0);
    await sleep(250);
  }
  const elapsed = (Date.now() - started) / 1000;
  const cpu = (cpuSeconds(child.pid!) - cpuBefore) / elapsed;
  const perTen = [...hits].filter(([path]) => path.startsWith("/ok/")).map(([, n]) => (n / elapsed) * 10);
  const lag = histogram(await (await fetch(`${url}/metrics`)).text(), "healthd_scheduler_lag_seconds");
  health.sort((a, b) => a - b);
  console.log(`header flood: ${hostile} services answering 5,000 headers beside ${healthy} healthy ones, all at 1 s, for ${fixed(elapsed, 0)} s`);
  console.log(`  healthy checks per service per 10 s: median ${fixed(median(perTen))}, lowest ${fixed(Math.min(...perTen))} (10 is all of them)`);
  console.log(`  scheduling lag: mean ${fixed(lag.mean * 1000)} ms, p99 ≤${fixed(lag.p99 * 1000)} ms`);
  console.log(`  /healthz: median ${fixed(percentile(health, 50))} ms, max ${fixed(health.at(-1)!)} ms`);
  console.log(`  daemon CPU: ${fixed(cpu * 100)} % of a core`);
  child.kill("SIGTERM");
  await once(child, "exit");
}

// 2. Silent API clients under a small descriptor limit.
{
  const { child, url } = await serve(join(dir, "silent.db"), 256);
  await put(url, "healthy", Array.from({ length: 50 }, (_, i) => ({ id: `h${i}`, check: { url: `${base}/ok/${i}`, intervalSeconds: 1 } })));
  await sleep(2000);
  const { port } = new URL(url);
  const open: Socket[] = [];
  for (let i = 0; i < sockets; i++) {
    const socket = connect(Number(port), "127.0.0.1");
    socket.on("error", () => {});
    open.push(socket);
  }
  await sleep(seconds * 1000);
  const metrics = await (await fetch(`${url}/metrics`).catch(() => undefined))?.text();
  for (const socket of open) socket.destroy();
  await sleep(1000);
  const internal = /^healthd_checks_total\{type="http",result="failed",error_kind="internal"\} (\d+)$/m.exec(metrics ?? (await (await fetch(`${url}/metrics`)).text()))?.[1] ?? "0";
  const server = (await (await fetch(`${url}/services/healthy`)).json()) as { services: { state: { status: string } }[] };
  const down = server.services.filter((s) => s.state.status === "down").length;
  const queued = /^healthd_notifications\{status="unsent"\} (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? "0";
  console.log(`silent API clients: ${sockets} idle connections for ${seconds} s, daemon under ulimit -n 256, 50 healthy services at 1 s`);
  console.log(`  checks failed as internal (no descriptor): ${internal}; healthy services marked down: ${down}; notifications queued: ${queued}`);
  child.kill("SIGTERM");
  await once(child, "exit");
}

target.close();
target.closeAllConnections();
rmSync(dir, { recursive: true, force: true });
