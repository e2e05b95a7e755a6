/**
 * npm run bench:put — what one PUT of one service costs when SERVICES (50,000) are stored: the built executable
 * serves a database holding them (checked once a day, so that they stay quiet), and PUTS (100) requests each
 * create a service checked every day against a target in this process. Prints, per engine (ENGINES:
 * sqlite,postgres), the PUT's answer time p50 and p99 end to end on loopback (after WARMUP (5) PUTs that are
 * not counted: the first prepares the statements and compiles the path), and the time from the answer to
 * the new service's first check (the cluster following the change). On PostgreSQL a second node serves the same
 * database, and half the PUTs go to each: the one that did not take the PUT follows through the database.
 * BIN measures another build (a worktree of an older commit).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { serverDocument } from "../src/domain/schema/index.ts";
import { open } from "../test/support/raw.ts";
import { benchDatabase } from "./database.ts";
import { listening } from "./proc.ts";
import { fixed, percentile } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 50_000);
const puts = Number(process.env.PUTS ?? 100);
const warmup = Number(process.env.WARMUP ?? 5);
const engines = (process.env.ENGINES ?? "sqlite,postgres").split(",");
const bin = process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url));

// The target: when each new service was first checked.
const firstHit = new Map<string, number>();
const waiting = new Map<string, () => void>();
const target = createServer((req, res) => {
  const path = req.url ?? "/";
  if (!firstHit.has(path)) firstHit.set(path, performance.now());
  waiting.get(path)?.();
  res.end("ok");
});
await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

for (const engine of engines) {
  const { target: db, cleanUp } = benchDatabase(engine, "put");
  const nodes: ChildProcess[] = [];
  try {
    const store = await open(db, { mode: "write" });
    const perServer = 1000;
    for (let s = 0; s < services / perServer; s++) {
      const list = Array.from({ length: perServer }, (_, i) => ({ id: `s${i}`, check: { url: `${base}/quiet`, intervalSeconds: 86400 } }));
      await store.applyServers(new Map([[`srv-${s}`, serverDocument.parse({ services: list })]]), { now: Date.now() });
    }
    // Each checked once a moment ago: at start none is overdue, so none runs before its time tomorrow.
    const keys = (await store.scheduledServices()).map((s) => s.key);
    const ok = { ok: true as const, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null };
    for (let i = 0; i < keys.length; i += 500) {
      await store.recordResults(keys.slice(i, i + 500).map((serviceKey) => ({ serviceKey, outcome: { ...ok, checkedAt: Date.now() } })), Date.now());
    }
    await store.close();
    const urls: string[] = [];
    for (const name of engine === "postgres" && process.env.NODES !== "1" ? ["n1", "n2"] : ["n1"]) {
      const child = spawn(process.execPath, [bin, "serve", "--db", db, "--port", "0", "--node", name], { env: { ...process.env, HEALTHD_NTFY_URL: "http://127.0.0.1:9" } });
      nodes.push(child);
      urls.push(await listening(child, name));
      child.stderr!.resume();
    }
    const answers: number[] = [];
    const follows: number[] = [];
    for (let i = 0; i < warmup + puts; i++) {
      const path = `/new/${engine}/${i}`;
      const first = new Promise<void>((resolve) => waiting.set(path, resolve));
      const t0 = performance.now();
      const answer = await fetch(`${urls[i % urls.length]}/services/srv-0/new-${i}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ check: { url: base + path, intervalSeconds: 86400 } }),
      });
      await answer.text();
      const answered = performance.now();
      if (answer.status !== 201) throw new Error(`PUT answered ${answer.status}`);
      await first;
      if (i < warmup) continue;
      answers.push(answered - t0);
      follows.push(firstHit.get(path)! - answered);
    }
    answers.sort((a, b) => a - b);
    follows.sort((a, b) => a - b);
    console.log(
      `${engine}: ${services} services stored, ${puts} PUTs of one service: answer p50 ${fixed(percentile(answers, 50))} ms, p99 ${fixed(percentile(answers, 99))} ms; ` +
        `first check after the answer p50 ${fixed(percentile(follows, 50))} ms, max ${fixed(follows.at(-1)!)} ms` +
        (engine === "postgres" ? " (two nodes, PUTs to each in turn)" : ""),
    );
  } finally {
    for (const child of nodes) child.kill("SIGTERM");
    await Promise.all(nodes.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once("exit", resolve)))));
    cleanUp();
  }
}
target.close();
