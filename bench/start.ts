/**
 * npm run bench:start — time from starting `healthd serve` (the built executable, as systemd would) to every
 * check scheduled, with 50,000 services stored. Median of RUNS. Environment: SERVICES (50000), RUNS (3).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { serverDocument, type ServerDocument } from "../src/domain/schema/index.ts";
import { fixed, median } from "./stats.ts";
import { open } from "../test/support/raw.ts";

const services = Number(process.env.SERVICES ?? 50_000);
const runs = Number(process.env.RUNS ?? 3);
const bin = fileURLToPath(new URL("../bin/healthd", import.meta.url));

const dir = mkdtempSync(join(tmpdir(), "healthd-bench-start-"));
const db = join(dir, "start.db");
try {
  const store = await open(db, { mode: "write" });
  const servers = new Map<string, ServerDocument>();
  for (let s = 0; s * 1000 < services; s++) {
    const count = Math.min(1000, services - s * 1000);
    servers.set(
      `server-${s}`,
      serverDocument.parse({
        services: Array.from({ length: count }, (_, i) => ({
          id: `svc-${i}`,
          // A realistic mix: most on intervals, some on cron patterns, some with several alternatives.
          check:
            i % 10 === 0
              ? { url: `http://127.0.0.1:9/${i}`, cron: "*/5 * * * *" }
              : { url: `http://127.0.0.1:9/${i}`, intervalSeconds: 60 + (i % 5) * 60, expect: [{ status: 200 }, { status: 503, bodyContains: "maintenance" }] },
        })),
      }),
    );
  }
  await store.applyServers(servers, { now: Date.now() });
  await store.close();

  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const started = performance.now();
    const child = spawn(process.execPath, [bin, "serve", "--db", db, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"]);
    const scheduledAt = await new Promise<number>((resolve, reject) => {
      let log = "";
      child.stderr.on("data", (d: Buffer) => {
        log += d;
        const m = /scheduled services=(\d+)/.exec(log);
        if (m) {
          if (Number(m[1]) !== services) reject(new Error(`scheduled ${m[1]} of ${services}`));
          resolve(performance.now());
        }
      });
      child.on("exit", (code) => reject(new Error(`healthd exited with ${code}: ${log}`)));
    });
    times.push(scheduledAt - started);
    console.log(`run ${r + 1}/${runs}: ${fixed(times.at(-1)!, 0)} ms from start to ${services} checks scheduled`);
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
  console.log(`start to all scheduled with ${services} services: median ${fixed(median(times), 0)} ms (process start included)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
