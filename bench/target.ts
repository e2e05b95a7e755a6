/**
 * The benchmarks' target: a plain node:http server on 127.0.0.1 in its own process (so it does not share an
 * event loop with what is measured). Answers every request with 200 and a short body, and exits when its
 * parent goes away.
 *
 * Requests to /svc/{serverId}/{serviceId}?i={intervalSeconds} also measure scheduling lag from outside the
 * daemon: arrival time minus the planned time, which the bench knows because the plan is a pure function of
 * the service's identity (src/domain/schedule.ts). A run may start a little early to share a wake-up
 * (src/runtime/scheduler/scheduler.ts): such an arrival has a negative lag. The parent asks for the lags with
 * {lags: true}, and for the number of requests since it last asked with {count: true}.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { nextRun, scheduleOf } from "../src/domain/schedule.ts";
import { earlyWindowMs } from "../src/platform/tick.ts";

const body = Buffer.from('{"status":"up"}');
let lags: number[] = [];
let count = 0;
const server = createServer({ keepAliveTimeout: 1000 }, (req, res) => {
  count++;
  const arrived = performance.timeOrigin + performance.now();
  const m = /^\/svc\/([^/]+)\/([^/?]+)\?i=(\d+)$/.exec(req.url ?? "");
  if (m) {
    const schedule = scheduleOf({ intervalSeconds: Number(m[3]), cron: null }, `${m[1]}/${m[2]}`);
    const periodMs = Number(m[3]) * 1000;
    // The planned run this request belongs to: the last grid point at or before its arrival, or the next one
    // when that is within the early window.
    const planned = nextRun(schedule, arrived + earlyWindowMs(periodMs) - periodMs)!;
    lags.push(arrived - planned);
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
process.on("message", (message: { lags?: boolean; count?: boolean }) => {
  if (message.lags) {
    process.send?.({ lags });
    lags = [];
  }
  if (message.count) {
    process.send?.({ count });
    count = 0;
  }
});
process.on("disconnect", () => process.exit(0));
