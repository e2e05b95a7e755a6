/**
 * npm run bench:executable — the single executable beside `node bin/healthd`, measured in the same run,
 * alternating: its size, `--version` (the first run of a build unpacks its files: timed apart), and `serve`
 * from start to listening with SERVICES (1000) services stored. Median of RUNS (7). Builds both first.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { serverDocument, type ServerDocument } from "../src/domain/schema/index.ts";
import { open } from "../test/support/raw.ts";
import { fixed, median } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 1000);
const runs = Number(process.env.RUNS ?? 7);
const root = fileURLToPath(new URL("..", import.meta.url));
execFileSync(process.execPath, [join(root, "scripts/build-executable.mjs")], { stdio: ["ignore", "ignore", "ignore"] });
const exe = join(root, "dist", `healthd-linux-${process.arch}`);
const ways = { executable: [exe], "node bin/healthd": [process.execPath, join(root, "bin/healthd")] } as const;

const dir = mkdtempSync(join(tmpdir(), "healthd-bench-executable-"));
const env = { ...process.env, XDG_CACHE_HOME: join(dir, "cache") };
try {
  console.log(`size: executable ${fixed(statSync(exe).size / 2 ** 20)} MiB (node itself ${fixed(statSync(process.execPath).size / 2 ** 20)} MiB)`);
  const timed = (command: readonly string[], args: string[]) => {
    const started = performance.now();
    execFileSync(command[0]!, [...command.slice(1), ...args], { env, stdio: "ignore" });
    return performance.now() - started;
  };
  console.log(`first run of a build (unpacks ${fixed(statSync(join(root, "dist/executable/healthd.mjs")).size / 2 ** 20)} MiB of modules): ${fixed(timed(ways.executable, ["--version"]), 0)} ms`);

  const db = join(dir, "bench.db");
  const store = await open(db, { mode: "write" });
  const servers = new Map<string, ServerDocument>();
  for (let s = 0; s * 100 < services; s++) {
    const count = Math.min(100, services - s * 100);
    servers.set(`server-${s}`, serverDocument.parse({ services: Array.from({ length: count }, (_, i) => ({ id: `svc-${i}`, check: { url: `http://127.0.0.1:9/${i}`, intervalSeconds: 60 } })) }));
  }
  await store.applyServers(servers, { now: Date.now() });
  await store.close();

  const listening = (command: readonly string[]) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const child = spawn(command[0]!, [...command.slice(1), "serve", "--db", db, "--port", "0", "--ntfy-url", "http://127.0.0.1:9"], { env });
      let log = "";
      child.stderr.on("data", (d: Buffer) => {
        log += d;
        if (/listening url=/.test(log)) {
          const at = performance.now() - started;
          child.kill("SIGTERM");
          child.once("exit", () => resolve(at));
        }
      });
      child.once("exit", (code) => !/listening url=/.test(log) && reject(new Error(`serve exited with ${code}: ${log}`)));
    });

  const version: Record<string, number[]> = { executable: [], "node bin/healthd": [] };
  const serve: Record<string, number[]> = { executable: [], "node bin/healthd": [] };
  for (let r = 0; r < runs; r++) {
    for (const [name, command] of Object.entries(ways)) {
      version[name]!.push(timed(command, ["--version"]));
      serve[name]!.push(await listening(command));
    }
  }
  for (const name of Object.keys(ways)) {
    console.log(`${name.padEnd(17)} --version median ${fixed(median(version[name]!), 0)} ms; serve to listening with ${services} services median ${fixed(median(serve[name]!), 0)} ms`);
  }
  console.log(
    `ratio executable / node bin/healthd: --version ${fixed(median(version.executable!) / median(version["node bin/healthd"]!), 2)}, serve ${fixed(median(serve.executable!) / median(serve["node bin/healthd"]!), 2)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
