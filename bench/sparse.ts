/**
 * npm run bench:sparse — what a daemon of a few long-interval checks costs between them: COUNT (10) HTTP
 * services at INTERVAL (300) s against a local target, CPU as a share of one core and wake-ups (voluntary
 * context switches of all its threads) per second over SECONDS (90) after WARMUP (15) s. A daemon whose next
 * check is minutes away should sleep until shortly before it, not tick every second (src/platform/tick.ts's Alarm).
 * BIN names one or more builds, comma-separated (default this checkout's), measured alternating, ROUNDS (3)
 * times each; each prints its median. Load goes to 127.0.0.1 only.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { cpuSeconds, putServices, serveHealthd, wakeUps } from "./proc.ts";
import { fixed, median } from "./stats.ts";

const count = Number(process.env.COUNT ?? 10);
const interval = Number(process.env.INTERVAL ?? 300);
const seconds = Number(process.env.SECONDS ?? 90);
const warmup = Number(process.env.WARMUP ?? 15);
const rounds = Number(process.env.ROUNDS ?? 3);
const bins = (process.env.BIN ?? fileURLToPath(new URL("../bin/healthd", import.meta.url))).split(",");

const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
const [{ port }] = (await once(target, "message")) as [{ port: number }];
const origin = `http://127.0.0.1:${port}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const measured = new Map(bins.map((bin) => [bin, { shares: [] as number[], wakeUps: [] as number[] }]));
try {
  for (let round = 1; round <= rounds; round++) {
    for (const bin of bins) {
      const daemon = await serveHealthd(bin);
      try {
        await putServices(daemon.url, origin, count, interval);
        await sleep(warmup * 1000);
        const pid = daemon.child.pid!;
        const [cpu, woken] = [cpuSeconds(pid), wakeUps(pid)];
        await sleep(seconds * 1000);
        const share = (100 * (cpuSeconds(pid) - cpu)) / seconds;
        const perSecond = (wakeUps(pid) - woken) / seconds;
        measured.get(bin)!.shares.push(share);
        measured.get(bin)!.wakeUps.push(perSecond);
        console.log(`round ${round}/${rounds}, ${bin}: ${fixed(share, 3)} % of a core, ${fixed(perSecond, 2)} wake-ups/s`);
      } finally {
        await daemon.stop();
      }
    }
  }
  for (const [bin, { shares, wakeUps: woken }] of measured) {
    console.log(`median ${count} services at ${interval} s, ${bin}: ${fixed(median(shares), 3)} % of a core, ${fixed(median(woken), 2)} wake-ups/s`);
  }
} finally {
  target.kill();
}
