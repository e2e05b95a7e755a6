/**
 * A naive checker, for bench:everyday to compare with: RATE requests per second to TARGET, each on a fresh
 * connection, for SECONDS; MODE `http` (node:http, agent: false) or `undici` (a new undici Client per
 * request), one timer per request; or MODE `floor`: the least a Node process can do for a check on a fresh
 * connection (node:net, a fixed request written, the answer read until the target closes, no HTTP parser),
 * a second's requests started together from one timer. After WARMUP seconds of the same, runs SLICES (1)
 * windows of SECONDS one after the other and reports each one's {requests, cpuMs} of its own process to its
 * parent, as {slices}.
 */
import { request } from "node:http";
import { floorExchange, floorRequest, undiciExchange } from "./exchanges.ts";

const [mode, target, rate, seconds, warmup] = [process.env.MODE!, process.env.TARGET!, Number(process.env.RATE), Number(process.env.SECONDS), Number(process.env.WARMUP)];
const sliceCount = Number(process.env.SLICES ?? 1);
const url = new URL(target);

function viaHttp(): Promise<void> {
  return new Promise((resolve) => {
    const req = request({ host: url.hostname, port: url.port, path: "/naive", agent: false, headers: { "user-agent": "naive" } }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", () => resolve());
    req.end();
  });
}

const viaUndici = () => undiciExchange(url, "/naive");
const raw = floorRequest(url, "/naive");
const viaSocket = () => floorExchange(url, raw);

const once = mode === "undici" ? viaUndici : mode === "floor" ? viaSocket : viaHttp;
// The floor starts a second's requests together; the others one per timer.
const [perTick, tickMs] = mode === "floor" ? [rate, 1000] : [1, 1000 / rate];
let requests = 0;
/** Run for `forSeconds`; answers the requests made and the CPU time they took. */
async function loop(forSeconds: number): Promise<{ requests: number; cpuMs: number }> {
  requests = 0;
  const cpu0 = process.cpuUsage();
  const end = Date.now() + forSeconds * 1000;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (Date.now() >= end) {
        clearInterval(timer);
        resolve();
        return;
      }
      for (let i = 0; i < perTick; i++) void once().then(() => requests++);
    }, tickMs);
  });
  await new Promise((resolve) => setTimeout(resolve, 200)); // the last answers
  const cpu = process.cpuUsage(cpu0);
  return { requests, cpuMs: (cpu.user + cpu.system) / 1000 };
}
// Warmed up first, as healthd is before its window: the JIT's first seconds are not what a loop costs.
await loop(warmup);
const slices = [];
for (let i = 0; i < sliceCount; i++) slices.push(await loop(seconds));
process.send!({ slices });
process.disconnect();
