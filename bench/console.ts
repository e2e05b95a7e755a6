/**
 * npm run bench:console — GET /console of the built executable with SERVICES (1,000) services across 10 servers,
 * each with a last entry (a tenth of them failing), on ENGINE (sqlite): the median and p99 of REQUESTS (20)
 * after a first one, end to end on loopback (as a browser asks, brotli accepted, until the last byte), with the
 * page's size; then a filtered overview and a service's page likewise. The overview's rows are shared by every
 * reader for up to a second (as the status page's views): each request waits until they are over a second old,
 * so that it times a build, not a copy. Target: under 100 ms.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { brotliDecompressSync } from "node:zlib";
import type { CheckRun } from "../src/domain/batch.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open } from "../test/support/raw.ts";
import { benchDatabase } from "./database.ts";
import { listening } from "./proc.ts";
import { fixed, percentile } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 1000);
const requests = Number(process.env.REQUESTS ?? 20);
const engine = process.env.ENGINE ?? "sqlite";
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const { target, cleanUp } = benchDatabase(engine, "console");

try {
  const store = await open(target, { mode: "write" });
  const servers = new Map();
  for (let s = 0; s < 10; s++) {
    const count = Math.ceil(services / 10);
    servers.set(`server-${s}`, serverDocument.parse({ services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, name: `Service ${s}-${i}`, check: { url: `http://127.0.0.1:9/${s}/${i}`, intervalSeconds: 86400 } })) }));
  }
  await store.applyServers(servers, { now: Date.now() });
  const scheduled = await store.scheduledServices();
  // A result for each, through the real write path: every tenth fails (its incident opens at the second).
  const now = Date.now();
  for (const at of [now - 120_000, now - 60_000]) {
    const runs = scheduled.map((s): CheckRun => ({
      serviceKey: s.key,
      outcome: s.key % 10 === 0
        ? { ok: false, status: 500, latencyMs: 40, matched: null, errorKind: "status", error: "expected status 200, got 500", checkedAt: at }
        : { ok: true, status: 200, latencyMs: 25 + (s.key % 50), matched: 0, errorKind: null, error: null, checkedAt: at },
    }));
    for (let i = 0; i < runs.length; i += 500) await store.recordResults(runs.slice(i, i + 500), at);
  }
  await store.close();
  console.log(`${scheduled.length} services across 10 servers, a tenth of them failing (${engine})`);

  const child = spawn(process.execPath, [bin, "serve", "--db", target, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  const url = await listening(child);
  try {
    for (const path of ["/console", "/console?state=failing&q=service", "/console/services/server-0/svc-0"]) {
      const { first, times, sent, read } = await timed(url + path, requests);
      console.log(`GET ${path}: first ${fixed(first)} ms, then median ${fixed(percentile(times, 50))} ms, p99 ${fixed(percentile(times, 99))} ms over ${requests}; ${fixed(sent / 1e3, 0)} kB sent, ${fixed(read / 1e3, 0)} kB of HTML`);
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
} finally {
  cleanUp();
}

/** GET `url` once, then `count` more times, each 1.1 s after the last: the first time, the sorted times of the rest, and the last answer's size. */
async function timed(url: string, count: number): Promise<{ first: number; times: number[]; sent: number; read: number }> {
  const times: number[] = [];
  let sent = 0;
  let read = 0;
  for (let i = 0; i <= count; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 1100));
    const t0 = performance.now();
    const answer = await request(url, { headers: { "accept-encoding": "br, gzip", accept: "text/html" } });
    const body = Buffer.from(await answer.body.arrayBuffer());
    times.push(performance.now() - t0);
    if (answer.statusCode !== 200) throw new Error(`${url}: ${answer.statusCode} ${body}`);
    sent = body.length;
    read = answer.headers["content-encoding"] === "br" ? brotliDecompressSync(body).length : body.length;
  }
  const first = times.shift()!;
  return { first, times: times.sort((a, b) => a - b), sent, read };
}
