/**
 * npm run bench:side-by-side — two or more builds of healthd compared at one load, at the same time: COPIES (2)
 * daemons of each build, started interleaved (A, B, A, B), each given SERVICES (1,000) services at INTERVAL
 * (20) s against one local target, and measured over the same window, FROM (60) to TO (240) s after their
 * services were given. The machine's speed moves by up to two and a half times from one hour to the next
 * (docs/benchmarks.md), so builds measured one after the other compare hours as much as code; side by side, an
 * hour slows every daemon alike. CPU per check is all of a daemon's threads' CPU time (from /proc) over the
 * window divided by the checks it made (healthd_checks_total), and the main thread's part of it. Prints each
 * daemon, then each build's median and its ratio to the first build's.
 *
 * BINS: comma-separated builds, each a dist/main.js or bin/healthd (default: this checkout's); e.g. a worktree
 * of the commit before: `git worktree add /tmp/before HEAD~1 && ln -s "$PWD/node_modules" /tmp/before/ &&
 * (cd /tmp/before && npm run build)`, then `BINS=/tmp/before/dist/main.js,dist/main.js`. A build may name node
 * flags to run under, each after a "|": `BINS=dist/main.js,dist/main.js|--min-semi-space-size=8` compares a V8
 * flag that only node's command line can set (docs/benchmarks.md). Load goes to 127.0.0.1 only; it stops by
 * itself.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { cpuSeconds, metricIn, putServices, scrape, serveHealthd, threadCpuMs } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const services = Number(process.env.SERVICES ?? 1000);
const interval = Number(process.env.INTERVAL ?? 20);
const from = Number(process.env.FROM ?? 60);
const to = Number(process.env.TO ?? 240);
const copies = Number(process.env.COPIES ?? 2);
const bins = (process.env.BINS ?? fileURLToPath(new URL("../bin/healthd", import.meta.url))).split(",").map((spec) => {
  const [given, ...flags] = spec.split("|");
  const path = resolve(given!);
  return { name: [path, ...flags].join(" "), path, flags };
});

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

const daemons: { bin: string; pid: number; url: string; stop: () => Promise<void> }[] = [];
try {
  for (let copy = 0; copy < copies; copy++) {
    for (const bin of bins) {
      const { child, url, stop } = await serveHealthd(bin.path, bin.flags);
      daemons.push({ bin: bin.name, pid: child.pid!, url, stop });
    }
  }
  await Promise.all(daemons.map((d) => putServices(d.url, `http://127.0.0.1:${port}`, services, interval)));
  const read = () =>
    Promise.all(
      daemons.map(async (d) => {
        const main = threadCpuMs(d.pid).get(d.pid)!;
        return { allMs: cpuSeconds(d.pid) * 1000, mainMs: main[0] + main[1], checks: metricIn(await scrape(d.url), "healthd_checks_total") };
      }),
    );
  await sleep(from * 1000);
  const start = await read();
  await sleep((to - from) * 1000);
  const end = await read();
  const perBuild = new Map<string, number[]>(bins.map((bin) => [bin.name, []]));
  daemons.forEach((d, i) => {
    const checks = end[i]!.checks - start[i]!.checks;
    const all = (end[i]!.allMs - start[i]!.allMs) / checks;
    perBuild.get(d.bin)!.push(all);
    console.log(`${d.bin}: ${fixed(all, 3)} ms CPU per check (main thread ${fixed((end[i]!.mainMs - start[i]!.mainMs) / checks, 3)}), ${checks} checks`);
  });
  const first = median(perBuild.get(bins[0]!.name)!);
  console.log(`${services} services at ${interval} s, ${from} to ${to} s after they were given, ${copies} daemons of each build side by side:`);
  for (const [bin, values] of perBuild) console.log(`  ${bin}: median ${fixed(median(values), 3)} ms CPU per check (ratio to the first build ${fixed(median(values) / first, 2)})`);
} finally {
  for (const d of daemons) await d.stop();
  target.kill();
}
