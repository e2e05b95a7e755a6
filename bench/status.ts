/**
 * npm run bench:status — GET /status of the built executable with SERVICES (1,000) services across 10 servers
 * and 90 days of hourly rollups for each (filled in the database as a fixture, with announcements and past
 * incidents), on ENGINE (sqlite). Prints the first answer (it loads the closed days into memory) and the median
 * and p99 of REQUESTS (20) after it, end to end on loopback (a request as a browser sends it, brotli accepted,
 * until the last byte), with the page's size as sent and as read; /status.json and a service's page (90 days,
 * 24 hours) likewise; then REPORTS (5) of last month's report for every service (JSON). Each of these requests waits until the page the previous one
 * built is over a second old, so that it builds the page again (the daemon shares a page built less than a
 * second ago with every reader, src/http/status.ts): they time a build, not a copy.
 *
 * Then READERS (16; 0 skips this) clients read /status at once, over and over, for SECONDS (30) while every service is checked
 * every 10 s against a target in a process of its own: pages per second, and the checks meanwhile, as the target
 * saw them (lag p50, p99 and max against the plan; runs due against runs made) and as the daemon counted them
 * (skipped runs), with the worst lag and how many runs were over 100 ms late (the promise: none). BIN measures another
 * build (a worktree of an older commit) for before/after figures.
 */
import { fork, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { nextRun, scheduleOf } from "../src/domain/schedule.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open, rawQuery } from "../test/support/raw.ts";
import { request } from "undici";
import { brotliDecompressSync } from "node:zlib";
import { benchDatabase } from "./database.ts";
import { listening } from "./proc.ts";
import { fixed, percentile } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 1000);
const requests = Number(process.env.REQUESTS ?? 20);
const reports = Number(process.env.REPORTS ?? 5);
const engine = process.env.ENGINE ?? "sqlite";
const readers = Number(process.env.READERS ?? 16);
const seconds = Number(process.env.SECONDS ?? 30);
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));
const { target, cleanUp } = benchDatabase(engine, "status");

try {
  const store = await open(target, { mode: "write" });
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
  const generate = engine === "postgres" ? `generate_series(0::bigint, ${hours - 1}) AS h(n)` : `(WITH RECURSIVE h(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < ${hours - 1}) SELECT n FROM h) AS h`;
  await rawQuery(
    store,
    `INSERT INTO service_rollups (service_key, hour, checks, failures, latency_sum, sketch)
     SELECT s.key, ${from} + h.n * ${hourMs}, 60, CASE WHEN (s.key + h.n) % 97 = 0 THEN 3 ELSE 0 END, 600.0, '{"60":60}'
     FROM services AS s CROSS JOIN ${generate}`,
  );
  // What a page tells people besides: two announcements with updates, one ended, and 50 closed incidents.
  const now = Date.now();
  for (let i = 0; i < 3; i++) {
    const a = await store.addAnnouncement({ title: `Announcement ${i}`, message: "Some *Markdown*, [a link](https://example.com/x) and\n\n- a\n- list", severity: "degraded", servers: null, startsAt: now - 3_600_000, endsAt: i === 2 ? now - 60_000 : null }, now);
    if ("id" in a) for (let u = 0; u < 3; u++) await store.addAnnouncementUpdate(a.id, { message: `Update ${u}: **more** news.` }, now);
  }
  const bool = engine === "postgres" ? "true" : "1";
  // Each began at its first of three failed checks, a minute before it opened (started_at, issue 78).
  await rawQuery(store, `INSERT INTO incidents (service_key, server_id, service_id, started_at, opened_at, closed_at, failures, notified)
    SELECT key, server_id, id, ${now} - key * 3600000 - 60000, ${now} - key * 3600000, ${now} - key * 3600000 + 600000, 3, ${bool} FROM services WHERE key <= 50`);
  await store.close();
  console.log(`${keys.length} services, ${keys.length * hours} hourly rollups, 3 announcements, 50 past incidents (${engine})`);

  const child = spawn(process.execPath, [bin, "serve", "--db", target, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
  const url = await listening(child);
  try {
    for (const path of ["/status", "/status.json", "/status/server-0/svc-0?range=90d", "/status/server-0/svc-0?range=24h"]) {
      const { first, times, sent, read } = await timed(url + path, requests);
      console.log(
        `GET ${path}: first ${fixed(first)} ms (loads the closed days), then median ${fixed(percentile(times, 50))} ms, ` +
          `p99 ${fixed(percentile(times, 99))} ms over ${requests}; ${fixed(sent / 1e3, 0)} kB sent, ${fixed(read / 1e6, 2)} MB of HTML`,
      );
    }
    // A report reads the month's rollups anew every time: no wait between requests.
    const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const report = await timed(`${url}/reports?month=${month}`, reports, 0);
    console.log(`GET /reports?month=${month} (${keys.length} services): first ${fixed(report.first)} ms, then median ${fixed(percentile(report.times, 50))} ms over ${reports}; ${fixed(report.read / 1e3, 0)} kB of JSON`);
    if (readers > 0) await readersWhileChecking(url);
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
} finally {
  cleanUp();
}

/**
 * GET `url` once, then `count` more times, each after `waitMs` (by default long enough for the daemon's shared
 * view to be built again): the first time, the sorted times of the rest, and the last answer's size.
 */
async function timed(url: string, count: number, waitMs = 1100): Promise<{ first: number; times: number[]; sent: number; read: number }> {
  const times: number[] = [];
  let sent = 0;
  let read = 0;
  for (let i = 0; i <= count; i++) {
    if (i > 0 && waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    const t0 = performance.now();
    const answer = await request(url, { headers: { "accept-encoding": "br, gzip" } });
    const body = Buffer.from(await answer.body.arrayBuffer());
    times.push(performance.now() - t0);
    if (answer.statusCode !== 200) throw new Error(`${url}: ${answer.statusCode} ${body}`);
    sent = body.length;
    read = answer.headers["content-encoding"] === "br" ? brotliDecompressSync(body).length : body.length;
  }
  const first = times.shift()!;
  return { first, times: times.sort((a, b) => a - b), sent, read };
}

/** READERS clients read /status without pause for SECONDS while every service is checked every 10 s. */
async function readersWhileChecking(url: string): Promise<void> {
  const target = fork(fileURLToPath(new URL("./target.ts", import.meta.url)), { execArgv: ["--import", "tsx"] });
  const ask = <T>(question: object) =>
    new Promise<T>((resolve) => {
      target.once("message", (m) => resolve(m as T));
      target.send(question);
    });
  try {
    const { port } = await new Promise<{ port: number }>((resolve) => target.once("message", (m) => resolve(m as { port: number })));
    const docs = new Map<string, unknown>();
    for (let s = 0; s < 10; s++) {
      const count = Math.ceil(services / 10);
      docs.set(`server-${s}`, {
        services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url: `http://127.0.0.1:${port}/svc/server-${s}/svc-${i}?i=10`, intervalSeconds: 10 } })),
      });
    }
    for (const [id, doc] of docs) {
      const answer = await request(`${url}/services/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(doc) });
      await answer.body.dump();
      if (answer.statusCode >= 300) throw new Error(`PUT ${id}: ${answer.statusCode}`);
    }
    // Two intervals for the first runs (within a second of the PUT) to settle onto the plan.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const skipped = async () => Number(/^healthd_scheduler_skipped_runs_total (\d+)/m.exec(await (await request(`${url}/metrics`)).body.text())?.[1]);
    await ask({ lags: true });
    const skippedBefore = await skipped();
    const started = Date.now();
    const until = performance.now() + seconds * 1000;
    let pages = 0;
    await Promise.all(
      Array.from({ length: readers }, async () => {
        while (performance.now() < until) {
          const answer = await request(`${url}/status`, { headers: { "accept-encoding": "br, gzip" } });
          await answer.body.dump();
          if (answer.statusCode !== 200) throw new Error(`/status: ${answer.statusCode}`);
          pages++;
        }
      }),
    );
    const ended = Date.now();
    const { lags } = await ask<{ lags: number[] }>({ lags: true });
    const skippedRuns = (await skipped()) - skippedBefore;
    // Runs planned in the window, from the plan (a pure function of each service's identity).
    let due = 0;
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < Math.ceil(services / 10); i++) {
        const schedule = scheduleOf({ intervalSeconds: 10, cron: null }, `server-${s}/svc-${i}`);
        for (let at = nextRun(schedule, started)!; at < ended; at = nextRun(schedule, at)!) due++;
      }
    }
    lags.sort((a, b) => a - b);
    console.log(
      `${readers} readers of /status for ${seconds} s while ${services} services are checked every 10 s: ${fixed(pages / seconds)} pages/s; ` +
        `checks lag p50 ${fixed(percentile(lags, 50))} ms, p99 ${fixed(percentile(lags, 99))} ms, max ${fixed(lags.at(-1)!)} ms, ` +
        `${lags.filter((lag) => lag > 100).length} over 100 ms; ` +
        `${lags.length} runs made of ${due} due, ${skippedRuns} skipped`,
    );
  } finally {
    target.kill();
  }
}
