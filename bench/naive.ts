/**
 * A naive checker, for bench:everyday to compare with: RATE requests per second to TARGET, each on a fresh
 * connection, one timer per request, for SECONDS; MODE `http` (node:http, agent: false) or `undici` (a new
 * undici Client per request). Reports {requests, cpuMs} of its own process over the window to its parent.
 */
import { request } from "node:http";
import { Client } from "undici";

const [mode, target, rate, seconds] = [process.env.MODE!, process.env.TARGET!, Number(process.env.RATE), Number(process.env.SECONDS)];
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

async function viaUndici(): Promise<void> {
  const client = new Client(url.origin);
  try {
    const response = await client.request({ path: "/naive", method: "GET", headers: { "user-agent": "naive" } });
    await response.body.text();
  } finally {
    await client.close();
  }
}

const once = mode === "undici" ? viaUndici : viaHttp;
let requests = 0;
const cpu0 = process.cpuUsage();
const end = Date.now() + seconds * 1000;
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    if (Date.now() >= end) {
      clearInterval(timer);
      resolve();
      return;
    }
    void once().then(() => requests++);
  }, 1000 / rate);
});
await new Promise((resolve) => setTimeout(resolve, 200)); // the last answers
const cpu = process.cpuUsage(cpu0);
process.send!({ requests, cpuMs: (cpu.user + cpu.system) / 1000 });
process.disconnect();
