/**
 * npm run bench:channels — NOTIFICATIONS (10,000) waiting in the outbox for three webhook channels on
 * 127.0.0.1, one of which never answers, when the built daemon starts (2,000 services of 5 notifications each:
 * a flapping outage). Prints, per engine (ENGINES: sqlite; postgres too with ENGINES=sqlite,postgres), medians
 * of RUNS (3):
 * - the time to deliver the two answering channels' 20,000 deliveries, from the daemon's start, against a floor
 *   measured in the same run (the same 20,000 POSTs from this process, 32 at a time, no database);
 * - the daemon's RSS at start, at its peak and at the end (flat: the outbox is read a head at a time);
 * - once the hanging channel answers again, the time until all of its deliveries are in, and how many of
 *   them arrived (each once: counted by Idempotency-Key).
 * BIN measures another build.
 */
import { spawn } from "node:child_process";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { channelDocument } from "../src/domain/schema/channel.ts";
import { open } from "../test/support/raw.ts";
import { benchDatabase } from "./database.ts";
import { listening, rssMb } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const notifications = Number(process.env.NOTIFICATIONS ?? 10_000);
const perService = 5;
const runs = Number(process.env.RUNS ?? 3);
const engines = (process.env.ENGINES ?? "sqlite").split(",");
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

/** A receiver that counts distinct Idempotency-Keys, or holds every request while `hanging`. */
async function receiver() {
  const keys = new Set<string>();
  const held: ServerResponse[] = [];
  let hanging = false;
  let requests = 0;
  let onKey: (() => void) | undefined;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on("end", () => {
      if (hanging) return void held.push(res);
      keys.add(String(req.headers["idempotency-key"]));
      res.end("ok");
      onKey?.();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    keys,
    requests: () => requests,
    hang: (on: boolean) => {
      hanging = on;
      if (!on) for (const res of held.splice(0)) res.destroy();
    },
    /** Resolves once `count` distinct keys have come. */
    until: (count: number) => new Promise<void>((resolve) => (keys.size >= count ? resolve() : (onKey = () => keys.size >= count && resolve()))),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** The floor: the same POSTs, 32 at a time, with nothing in between. */
async function floor(urls: readonly string[], count: number): Promise<number> {
  const agent = new Agent({ connections: 32 });
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const res = await request(urls[i % urls.length]!, { method: "POST", body: "{}", headers: { "idempotency-key": `floor-${i}`, "content-type": "application/json" }, dispatcher: agent });
        await res.body.text();
      }
    }),
  );
  await agent.close();
  return (performance.now() - start) / 1000;
}

async function seed(db: string, urls: { a: string; b: string; hang: string }): Promise<void> {
  const store = await open(db, { mode: "write" });
  for (const [name, url] of Object.entries(urls)) await store.putChannel(name, channelDocument.parse({ type: "webhook", url }), Date.now());
  const now = Date.now();
  const services = notifications / perService;
  const rows = [];
  for (let n = 0; n < notifications; n++) {
    const service = `s${n % services}`;
    const kind = Math.floor(n / services) % 2 === 0 ? "down" : "recovered";
    const event = JSON.stringify({ id: `bench-${n}`, event: kind, server: "bench", service, serverName: "bench", serviceName: service, url: "", error: null, since: null, duration: null, incidentId: null, at: new Date(now).toISOString(), title: `${kind.toUpperCase()}: bench/${service}`, message: "bench" });
    for (const channel of ["a", "b", "hang"]) {
      rows.push({ created_at: now, server_id: "bench", service_id: service, kind: kind as "down", topic: null, message: '{"title":"bench"}', next_attempt_at: now, incident_id: null, channel, event, last_error: null, in_flight_since: null, delivered_at: null, remote_id: null, claimed_by: null });
    }
  }
  for (let i = 0; i < rows.length; i += 1000) await store.backend.db.insertInto("notifications").values(rows.slice(i, i + 1000)).execute();
  await store.close();
}

for (const engine of engines) {
  const results: { deliver: number; floor: number; rss: [number, number, number]; recover: number; delivered: number }[] = [];
  for (let run = 1; run <= runs; run++) {
    const [a, b, hang] = [await receiver(), await receiver(), await receiver()];
    hang.hang(true);
    const { target: db, cleanUp } = benchDatabase(engine, "channels");
    try {
      await seed(db, { a: a.url, b: b.url, hang: hang.url });
      const floorS = await floor([a.url, b.url], 2 * notifications);
      a.keys.clear();
      b.keys.clear();
      const start = performance.now();
      const child = spawn(process.execPath, [bin, "serve", "--db", db, "--port", "0"], { env: { ...process.env, HEALTHD_NTFY_URL: "http://127.0.0.1:9" } });
      await listening(child, "healthd");
      const rss = [rssMb(child.pid!)];
      const sampler = setInterval(() => rss.push(rssMb(child.pid!)), 250);
      await Promise.all([a.until(notifications), b.until(notifications)]);
      const deliver = (performance.now() - start) / 1000;
      const held = hang.requests();
      hang.hang(false);
      const back = performance.now();
      await hang.until(notifications);
      const recover = (performance.now() - back) / 1000;
      clearInterval(sampler);
      rss.push(rssMb(child.pid!));
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
      results.push({ deliver, floor: floorS, rss: [rss[0]!, Math.max(...rss), rss.at(-1)!], recover, delivered: hang.keys.size });
      console.log(
        `${engine} run ${run}: two channels' ${2 * notifications} deliveries in ${fixed(deliver, 2)} s (floor ${fixed(floorS, 2)} s); ` +
          `hanging channel held ${held} requests, then took all ${hang.keys.size} in ${fixed(recover, 2)} s; RSS ${rss.map((r) => fixed(r, 0)).filter((_, i, all) => i === 0 || i === all.length - 1).join(" -> ")} MB (peak ${fixed(Math.max(...rss), 0)})`,
      );
    } finally {
      cleanUp();
      for (const r of [a, b, hang]) await r.close();
    }
  }
  const m = (pick: (r: (typeof results)[number]) => number) => median(results.map(pick));
  console.log(
    `${engine}: median of ${runs}: ${notifications} notifications x 3 webhook channels (one hanging): the other two delivered in ${fixed(m((r) => r.deliver), 2)} s ` +
      `(target < 10 s), floor ${fixed(m((r) => r.floor), 2)} s, ratio ${fixed(m((r) => r.deliver / r.floor), 2)}; ` +
      `RSS start ${fixed(m((r) => r.rss[0]), 0)} MB, peak ${fixed(m((r) => r.rss[1]), 0)} MB, end ${fixed(m((r) => r.rss[2]), 0)} MB; ` +
      `hanging channel answering again: all ${fixed(m((r) => r.delivered), 0)} of ${notifications} delivered in ${fixed(m((r) => r.recover), 2)} s, none lost`,
  );
}
