/**
 * ICMP checks (issue 84): the system's ping to 127.0.0.1 and ::1, what it prints read by a pure function, the
 * controller's judgment of loss and of a ping that is missing or may not open its socket (a stand-in `ping`
 * on PATH prints what the real one would, since loopback loses nothing), then through the daemon on both
 * engines, with the start-up warning when ping cannot run.
 */
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { readPing, runIcmpCheck, type IcmpRequest } from "../src/checks/icmp.ts";
import type { CheckDone } from "../src/daemon.ts";
import { createLogger } from "../src/platform/log.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

const icmp = (host: string, more: Partial<IcmpRequest> = {}): IcmpRequest => ({ host, count: 2, maxLossPercent: 0, maxLatencyMs: null, timeoutMs: 5000, ...more });

/** Put a `ping` printing `stdout` and `stderr` and exiting `code` first on PATH for the rest of the test. */
function standInPing(t: TestContext, stdout: string, stderr = "", code = 0): void {
  const dir = tempDir(t);
  const script = join(dir, "ping");
  writeFileSync(script, `#!/bin/sh\nprintf '%s' '${stdout}'\nprintf '%s' '${stderr}' >&2\nexit ${code}\n`);
  chmodSync(script, 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${dir}:${path}`;
  t.after(() => (process.env.PATH = path));
}

test("icmp: the system's ping to 127.0.0.1 and ::1 passes, carrying its loss and round trips", async () => {
  for (const host of ["127.0.0.1", "::1"]) {
    const outcome = await runIcmpCheck(icmp(host, { maxLatencyMs: 1000 }));
    assert.deepEqual([outcome.ok, outcome.errorKind, outcome.status], [true, null, null], `${host}: ${outcome.error}`);
    assert.equal(outcome.answers![0], "sent 2, received 2, loss 0%");
    assert.match(outcome.answers![1]!, /^rtt min\/avg\/max [\d.]+\/[\d.]+\/[\d.]+ ms$/);
    assert.ok(outcome.latencyMs >= 0 && outcome.latencyMs < 1000, "the latency is the average round trip");
  }
});

test("icmp: readPing reads iputils' summary, with loss, with none back, and nothing else", () => {
  const whole = "PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.\n\n--- 10.0.0.1 ping statistics ---\n3 packets transmitted, 3 received, 0% packet loss, time 402ms\nrtt min/avg/max/mdev = 0.043/0.050/0.058/0.006 ms\n";
  assert.deepEqual(readPing(whole), { sent: 3, received: 3, rtt: { min: 0.043, avg: 0.05, max: 0.058 } });
  const lossy = "--- h ping statistics ---\n4 packets transmitted, 1 received, +3 errors, 75% packet loss, time 3004ms\nrtt min/avg/max/mdev = 12.5/12.5/12.5/0.000 ms\n";
  assert.deepEqual(readPing(lossy), { sent: 4, received: 1, rtt: { min: 12.5, avg: 12.5, max: 12.5 } });
  assert.deepEqual(readPing("--- h ping statistics ---\n2 packets transmitted, 0 received, 100% packet loss, time 1019ms\n"), { sent: 2, received: 0, rtt: null });
  const busybox = "--- h ping statistics ---\n2 packets transmitted, 2 packets received, 0% packet loss\nround-trip min/avg/max = 0.061/0.070/0.080 ms\n";
  assert.deepEqual(readPing(busybox), { sent: 2, received: 2, rtt: { min: 0.061, avg: 0.07, max: 0.08 } });
  assert.equal(readPing("ping: usage error"), null);
});

test("icmp: loss over maxLossPercent is loss, none back is timeout, a slow average is latency; a missing or refused ping says what to grant", async (t) => {
  standInPing(t, "--- h ping statistics ---\n4 packets transmitted, 3 received, 25% packet loss, time 3004ms\nrtt min/avg/max/mdev = 10.1/20.2/30.3/5.0 ms\n");
  const lossy = await runIcmpCheck(icmp("10.0.0.1", { count: 4 }));
  assert.deepEqual([lossy.ok, lossy.errorKind, lossy.error], [false, "loss", "25% of the echoes to 10.0.0.1 were lost, more than the 0% allowed"]);
  assert.deepEqual(lossy.answers, ["sent 4, received 3, loss 25%", "rtt min/avg/max 10.1/20.2/30.3 ms"]);
  assert.equal((await runIcmpCheck(icmp("10.0.0.1", { count: 4, maxLossPercent: 25 }))).ok, true, "25% allowed");
  const slow = await runIcmpCheck(icmp("10.0.0.1", { count: 4, maxLossPercent: 50, maxLatencyMs: 15 }));
  assert.deepEqual([slow.errorKind, slow.error, slow.latencyMs], ["latency", "the echoes took 20.2 ms on average, more than the 15 ms allowed", 20.2]);
});

test("icmp: none back is a timeout; ping refused its socket, or not installed, says what to grant or install", async (t) => {
  standInPing(t, "--- h ping statistics ---\n2 packets transmitted, 0 received, 100% packet loss, time 1019ms\n", "", 1);
  const none = await runIcmpCheck(icmp("10.0.0.1"));
  assert.deepEqual([none.errorKind, none.error], ["timeout", "no echo from 10.0.0.1 came back (2 sent)"]);

  const refused = tempDir(t);
  writeFileSync(join(refused, "ping"), "#!/bin/sh\necho 'ping: socktype: SOCK_RAW' >&2\necho 'ping: socket: Operation not permitted' >&2\nexit 2\n");
  chmodSync(join(refused, "ping"), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${refused}:${path}`;
  const denied = await runIcmpCheck(icmp("10.0.0.1"));
  assert.equal(denied.errorKind, "internal");
  assert.match(denied.error!, /^ping may not open its socket \(socket: Operation not permitted\); ICMP checks run the system's ping .*AmbientCapabilities=CAP_NET_RAW/);

  process.env.PATH = tempDir(t); // no ping at all
  const missing = await runIcmpCheck(icmp("10.0.0.1"));
  process.env.PATH = path;
  assert.equal(missing.errorKind, "internal");
  assert.match(missing.error!, /^ping is not installed; .*apt-get install iputils-ping/);
});

test("the API refuses what an icmp check cannot take, naming the field", async (t) => {
  const d = await testDaemon(t);
  await assertChecksRefused(d, [
    [{ type: "icmp", host: "127.0.0.1", count: 11 }, "/services/0/check/count", /from 1 to 10/],
    [{ type: "icmp", host: "127.0.0.1", maxLossPercent: 101 }, "/services/0/check/maxLossPercent", /from 0 to 100/],
    [{ type: "icmp", host: "router one" }, "/services/0/check/host", /must be a host name/],
    [{ type: "icmp", host: "127.0.0.1", count: 10, timeoutMs: 2000 }, "/services/0/check/timeoutMs", /must be at least 2800 ms for 10 echoes 200 ms apart/],
    [{ type: "icmp", host: "127.0.0.1", port: 22 }, "/services/0/check/port", /is a field of tcp, udp and tls checks, not of icmp ones/],
  ]);
});

for (const engine of engines) {
  test(`${engine}: an icmp service is pinged, stored with its loss and round trips, and exported as written`, async (t) => {
    const d = await testDaemon(t, { engine });
    const done = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "lo").then(([r]) => r);
    const put = await d.api("PUT", "/services/net", { services: [{ id: "lo", check: { type: "icmp", host: "::1", count: 1, intervalSeconds: 60 } }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const r = await done;
    assert.deepEqual([r.entry.ok, r.entry.type, r.entry.answers?.[0]], [true, "icmp", "sent 1, received 1, loss 0%"]);
    const metrics = (await d.api("GET", "/metrics")).body as string;
    assert.match(metrics, /^healthd_service_up\{server="net",service="lo",type="icmp"\} 1$/m);
    const stored = await d.api("GET", "/services/net");
    const written = stored.body.services[0].check;
    assert.deepEqual([written.type, written.host, written.count, written.maxLossPercent, written.maxLatencyMs], ["icmp", "::1", 1, 0, null]);
    assert.equal((await d.api("PUT", "/services/net", { services: [{ id: "lo", check: written }] })).status, 200);
  });
}

test("the daemon says at start, once, when its ICMP checks cannot run and what to grant", async (t) => {
  const lines: string[] = [];
  let warned: (line: string) => void;
  const warning = new Promise<string>((resolve) => (warned = resolve));
  const write = (line: string) => {
    lines.push(line);
    if (line.includes("ICMP checks cannot run here")) warned(line);
  };
  const path = process.env.PATH;
  process.env.PATH = tempDir(t); // no ping
  t.after(() => (process.env.PATH = path));
  const d = await testDaemon(t, { log: createLogger({ write, timestamps: false }) });
  const failed = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "gw");
  await d.api("PUT", "/services/net", { services: [{ id: "gw", check: { type: "icmp", host: "127.0.0.1", intervalSeconds: 60 } }] });
  const [r] = await failed;
  assert.match(r.entry.error!, /^ping is not installed/);
  assert.match(await warning, /apt-get install iputils-ping/);
  // A second icmp service later is not told again: its check fails saying why, the log stays quiet.
  const second = nextEvent<[CheckDone]>(d.events, "check:done", (x) => x.service.serviceId === "gw2");
  const services = [{ id: "gw", check: { type: "icmp", host: "127.0.0.1", intervalSeconds: 60 } }, { id: "gw2", check: { type: "icmp", host: "::1", intervalSeconds: 60 } }];
  await d.api("PUT", "/services/net", { services });
  await second;
  assert.equal(lines.filter((line) => line.includes("ICMP checks cannot run here")).length, 1, lines.join("\n"));
});
