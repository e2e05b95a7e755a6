/**
 * npm run bench:status — GET /status of the built executable with SERVICES (1,000) services across 10 servers
 * and 90 days of hourly rollups for each (filled in the database as a fixture), on ENGINE (sqlite). Prints the
 * first answer (it loads the closed days into memory) and the median and p99 of REQUESTS (50) after it, end to
 * end on loopback (a request as a browser sends it, brotli accepted, until the last byte), with the page's size
 * as sent and as read; /status.json likewise.
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serverDocument } from "../src/schema.ts";
import { openStore } from "../src/store/open.ts";
import { rawQuery } from "../src/store/raw.ts";
import { request } from "undici";
import { brotliDecompressSync } from "node:zlib";
import { listening } from "./proc.ts";
import { fixed, percentile } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 1000);
const requests = Number(process.env.REQUESTS ?? 50);
const engine = process.env.ENGINE ?? "sqlite";
const bin = fileURLToPath(new URL("../bin/healthd", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "healthd-bench-status-"));
const pg = new URL(process.env.BENCH_PG ?? "postgres://postgres@127.0.0.1:5432/");
const pgArgs = ["-h", pg.hostname, "-p", pg.port || "5432", "-U", pg.username || "postgres"];
let target = join(dir, "status.db");
let drop = () => {};
if (engine === "postgres") {
  const name = `healthd_bench_${randomBytes(4).toString("hex")}`;
  execFileSync("createdb", [...pgArgs, name]);
  const url = new URL(pg);
  url.pathname = `/${name}`;
  target = url.toString();
  drop = () => execFileSync("dropdb", [...pgArgs, "--force", name]);
}

try {
  const store = await openStore(target, { mode: "write" });
  const servers = new Map();
  for (let s = 0; s < 10; s++) {
    const count = Math.ceil(services / 10);
    servers.set(`server-${s}`, serverDocument.parse({ services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400 } })) }));
  }
  await store.applyServers(servers, { now: Date.now() });
  const keys = (await store.scheduledServices()).map((s) => s.key);
  const hourMs = 3_600_000;
  const from = Math.floor(Date.now() / hourMs) * hourMs - 90 * 24 * hourMs;
  // A fixture: 90 days of hourly rollups per service, some hours with failures, made inside the database.
  const hours = 90 * 24 + 1;
  const generate = engine === "postgres" ? `generate_series(0, ${hours - 1}) AS h(n)` : `(WITH RECURSIVE h(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < ${hours - 1}) SELECT n FROM h) AS h`;
  await rawQuery(
    store,
    `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch)
     SELECT s.key, ${from} + h.n * ${hourMs}, 60, CASE WHEN (s.key + h.n) % 97 = 0 THEN 3 ELSE 0 END, 600.0, '{"60":60}'
     FROM services AS s CROSS JOIN ${generate}`,
  );
  await store.close();
  console.log(`${keys.length} services, ${keys.length * hours} hourly rollups (${engine})`);

  const child = spawn(process.execPath, [bin, "serve", "--db", target, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  const url = await listening(child);
  try {
    for (const path of ["/status", "/status.json"]) {
      const times: number[] = [];
      let sent = 0;
      let read = 0;
      for (let i = 0; i <= requests; i++) {
        const t0 = performance.now();
        const answer = await request(url + path, { headers: { "accept-encoding": "br, gzip" } });
        const body = Buffer.from(await answer.body.arrayBuffer());
        times.push(performance.now() - t0);
        if (answer.statusCode !== 200) throw new Error(`${path}: ${answer.statusCode}`);
        sent = body.length;
        read = answer.headers["content-encoding"] === "br" ? brotliDecompressSync(body).length : body.length;
      }
      const first = times.shift()!;
      times.sort((a, b) => a - b);
      console.log(
        `GET ${path}: first ${fixed(first)} ms (loads the closed days), then median ${fixed(percentile(times, 50))} ms, ` +
          `p99 ${fixed(percentile(times, 99))} ms over ${requests}; ${fixed(sent / 1e3, 0)} kB sent, ${fixed(read / 1e6, 2)} MB of HTML`,
      );
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  drop();
}
