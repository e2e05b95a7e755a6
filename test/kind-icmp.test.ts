/**
 * ICMP checks (issue 84). Through the process's shared ICMP datagram socket: echoes to 127.0.0.1 and ::1, fifty
 * checks at once each with its own answers beside checks to an address that never answers (TEST-NET-3, which
 * no one is given: a timeout, or no route where the machine has none), a stopped check freeing its sequence
 * numbers, and the pure parts (the echo on the wire, the sequence table, the judgment, what the daemon says
 * at start). Through the system's ping, the other way: what it prints read by a pure function, the
 * controller's judgment of loss and of a ping that is missing or may not open its socket (a stand-in `ping`
 * on PATH prints what the real one would, since loopback loses nothing). Then through the daemon on both
 * engines, with its start-up line.
 */
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { readPing, runIcmpCheck, type IcmpOptions, type IcmpRequest } from "../src/checks/icmp.ts";
import { echoRequest, judgeEchoes, readEchoReply, reportOf, Sequences } from "../src/checks/icmp-echo.ts";
import { icmpHelp, startLine } from "../src/checks/icmp-grant.ts";
import { echoSocket, EchoSocket } from "../src/checks/icmp-socket.ts";
import type { CheckDone } from "../src/daemon.ts";
import { createLogger } from "../src/platform/log.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

const icmp = (host: string, more: Partial<IcmpRequest> = {}): IcmpRequest => ({ host, count: 2, maxLossPercent: 0, maxLatencyMs: null, timeoutMs: 5000, ...more });
/** The system's ping, the way a machine without the socket takes. */
const viaPing: IcmpOptions = { way: "process" };
const viaSocket: IcmpOptions = { way: "socket" };
/** TEST-NET-3 (RFC 5737): given to no one, so nothing answers; where the machine has no route there, the send fails at once. */
const nowhere = "203.0.113.7";

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

function assertPassed(host: string, outcome: Awaited<ReturnType<typeof runIcmpCheck>>, count = 2): void {
  assert.deepEqual([outcome.ok, outcome.errorKind, outcome.status], [true, null, null], `${host}: ${outcome.error}`);
  assert.equal(outcome.answers![0], `sent ${count}, received ${count}, loss 0%`, host);
  assert.match(outcome.answers![1]!, /^rtt min\/avg\/max [\d.]+\/[\d.]+\/[\d.]+ ms$/);
  assert.ok(outcome.latencyMs >= 0 && outcome.latencyMs < 1000, "the latency is the average round trip");
}

/** Not answered: a timeout with every echo lost, or (no route at all) connect. Never a pass. */
function assertUnanswered(outcome: Awaited<ReturnType<typeof runIcmpCheck>>, count = 2): void {
  if (outcome.errorKind === "connect") return assert.match(outcome.error!, new RegExp(`^${nowhere} is unreachable \\(E(NET|HOST)UNREACH\\)$`));
  assert.deepEqual([outcome.ok, outcome.errorKind, outcome.error], [false, "timeout", `no echo from ${nowhere} came back (${count} sent)`]);
  assert.deepEqual(outcome.answers, [`sent ${count}, received 0, loss 100%`]);
}

test("icmp: echoes to 127.0.0.1, ::1 and localhost go on the shared socket, carrying their loss and round trips", async () => {
  for (const host of ["127.0.0.1", "::1", "localhost"]) assertPassed(host, await runIcmpCheck(icmp(host, { maxLatencyMs: 1000 }), viaSocket));
  const unknown = await runIcmpCheck(icmp("no-such-host.invalid"), viaSocket);
  assert.deepEqual([unknown.errorKind, unknown.error], ["dns", "could not resolve no-such-host.invalid (ENOTFOUND)"]);
});

test("icmp: fifty checks at once on the shared socket each see their own echoes, beside checks nothing answers", async () => {
  const hosts = [...Array.from({ length: 40 }, (_, i) => `127.0.0.${i + 1}`), ...Array.from({ length: 5 }, () => "::1"), ...Array.from({ length: 5 }, () => nowhere)];
  const outcomes = await Promise.all(hosts.map((host) => runIcmpCheck(icmp(host, { count: 3, timeoutMs: 1500 }), viaSocket)));
  outcomes.forEach((outcome, i) => (hosts[i] === nowhere ? assertUnanswered(outcome, 3) : assertPassed(hosts[i]!, outcome, 3)));
  for (const family of [4, 6] as const) assert.equal(((await echoSocket(family)) as EchoSocket).inFlight, 0, "every sequence number is free again");
});

test("icmp: a check stopped, or past its deadline, frees its sequence numbers at once", async () => {
  const stop = new AbortController();
  const stopped = runIcmpCheck(icmp(nowhere, { count: 3, timeoutMs: 60_000 }), { ...viaSocket, signal: stop.signal });
  const socket = (await echoSocket(4)) as EchoSocket;
  stop.abort();
  const outcome = await stopped;
  assert.equal(outcome.ok, false);
  assert.equal(socket.inFlight, 0);
  assertUnanswered(await runIcmpCheck(icmp(nowhere, { count: 1, timeoutMs: 300 }), viaSocket), 1);
  assert.equal(socket.inFlight, 0);
});

test("icmp: an echo request and its reply on the wire; anything else a target sends is not a reply", () => {
  const request = echoRequest(4, 0xbeef, [0x01020304, 0xa0b0c0d0]);
  assert.deepEqual([request.length, request[0], request.readUInt16BE(6), request.readUInt32BE(8), request.readUInt32BE(12)], [64, 8, 0xbeef, 0x01020304, 0xa0b0c0d0]);
  assert.equal(echoRequest(6, 1, [0, 0])[0], 128);
  const reply = Buffer.from(request);
  reply[0] = 0; // what the target sends back, with the kernel's identifier and checksum
  reply.writeUInt16BE(0x4242, 4);
  assert.deepEqual(readEchoReply(4, reply), { seq: 0xbeef, token: [0x01020304, 0xa0b0c0d0] });
  assert.equal(readEchoReply(6, reply), null, "an ICMPv6 socket's reply is type 129");
  assert.equal(readEchoReply(4, reply.subarray(0, 15)), null, "too short for the token");
  assert.equal(readEchoReply(4, request), null, "a request is not a reply");
  const v6 = echoRequest(6, 7, [1, 2]);
  v6[0] = 129;
  assert.deepEqual(readEchoReply(6, v6), { seq: 7, token: [1, 2] });
});

test("icmp: sequence numbers wrap at 65,536, never two in flight share one, and a full table says so", () => {
  const table = new Sequences<string>();
  assert.deepEqual([table.add("a"), table.add("b")], [0, 1]);
  table.delete(0);
  for (let i = 2; i < 0x10000; i++) table.add(`n${i}`);
  assert.equal(table.add("wrapped"), 0, "after 65,535 the next free is 0 again");
  assert.equal(table.add("full"), null, "all 65,536 in flight");
  table.delete(1);
  assert.deepEqual([table.add("again"), table.get(1), table.size], [1, "again", 0x10000]);
});

test("icmp: the judgment of echoes: their report, loss, none back, a slow average", () => {
  assert.deepEqual(reportOf(3, [0.0421, 0.05, 0.0579]), { sent: 3, received: 3, rtt: { min: 0.042, avg: 0.05, max: 0.058 } });
  assert.deepEqual(reportOf(2, []), { sent: 2, received: 0, rtt: null });
  const ok = judgeEchoes(icmp("h"), reportOf(2, [1, 3]), 250, 7);
  assert.deepEqual([ok.ok, ok.latencyMs, ok.checkedAt, ok.answers], [true, 2, 7, ["sent 2, received 2, loss 0%", "rtt min/avg/max 1/2/3 ms"]]);
  const none = judgeEchoes(icmp("h"), reportOf(2, []), 5000.04, 7);
  assert.deepEqual([none.errorKind, none.error, none.latencyMs], ["timeout", "no echo from h came back (2 sent)", 5000]);
  const lossy = judgeEchoes(icmp("h", { count: 3 }), reportOf(3, [1, 1]), 600, 7);
  assert.deepEqual([lossy.errorKind, lossy.error], ["loss", "33.3% of the echoes to h were lost, more than the 0% allowed"]);
  assert.equal(judgeEchoes(icmp("h", { maxLossPercent: 50 }), reportOf(2, [1]), 600, 7).ok, true);
  const slow = judgeEchoes(icmp("h", { maxLatencyMs: 15 }), reportOf(2, [20, 20.4]), 600, 7);
  assert.deepEqual([slow.errorKind, slow.error], ["latency", "the echoes took 20.2 ms on average, more than the 15 ms allowed"]);
});

test("icmp: what the daemon says at start: the socket, or ping and the line that grants the socket, or what to grant for either", () => {
  assert.deepEqual(startLine(null, null), { level: "info", message: "ICMP checks send their echoes on one ICMP datagram socket per address family", fields: {} });
  const denied = startLine({ reason: "denied", range: "1 0", gid: 998 }, null);
  assert.deepEqual([denied.level, denied.message], ["warn", "ICMP checks run the system's ping, one process a check"]);
  assert.equal(denied.fields.why, "no ICMP datagram socket: net.ipv4.ping_group_range (1 0) leaves out healthd's group (998)");
  assert.match(denied.fields.grant!, /sysctl -w net\.ipv4\.ping_group_range="0 2147483647"/);
  const unloadable = startLine({ reason: "unloadable", detail: "Cannot find package 'koffi'" }, null);
  assert.equal(unloadable.fields.why, "no ICMP datagram socket: this build cannot open one itself (koffi did not load: Cannot find package 'koffi')");
  const neither = startLine({ reason: "denied", range: "1 0", gid: 998 }, "ping is not installed; ...");
  assert.deepEqual([neither.level, neither.message, neither.fields.problem], ["warn", "ICMP checks cannot run here; each will fail saying so", "ping is not installed; ..."]);
  assert.match(icmpHelp, /ping_group_range="0 2147483647".*apt-get install iputils-ping.*AmbientCapabilities=CAP_NET_RAW.*setcap cap_net_raw\+ep/);
});

test("icmp: the system's ping to 127.0.0.1 and ::1 passes the same way", async () => {
  for (const host of ["127.0.0.1", "::1"]) assertPassed(host, await runIcmpCheck(icmp(host, { maxLatencyMs: 1000 }), viaPing));
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
  const lossy = await runIcmpCheck(icmp("10.0.0.1", { count: 4 }), viaPing);
  assert.deepEqual([lossy.ok, lossy.errorKind, lossy.error], [false, "loss", "25% of the echoes to 10.0.0.1 were lost, more than the 0% allowed"]);
  assert.deepEqual(lossy.answers, ["sent 4, received 3, loss 25%", "rtt min/avg/max 10.1/20.2/30.3 ms"]);
  assert.equal((await runIcmpCheck(icmp("10.0.0.1", { count: 4, maxLossPercent: 25 }), viaPing)).ok, true, "25% allowed");
  const slow = await runIcmpCheck(icmp("10.0.0.1", { count: 4, maxLossPercent: 50, maxLatencyMs: 15 }), viaPing);
  assert.deepEqual([slow.errorKind, slow.error, slow.latencyMs], ["latency", "the echoes took 20.2 ms on average, more than the 15 ms allowed", 20.2]);
});

test("icmp: none back is a timeout; ping refused its socket, or not installed, says what to grant or install", async (t) => {
  standInPing(t, "--- h ping statistics ---\n2 packets transmitted, 0 received, 100% packet loss, time 1019ms\n", "", 1);
  const none = await runIcmpCheck(icmp("10.0.0.1"), viaPing);
  assert.deepEqual([none.errorKind, none.error], ["timeout", "no echo from 10.0.0.1 came back (2 sent)"]);

  const refused = tempDir(t);
  writeFileSync(join(refused, "ping"), "#!/bin/sh\necho 'ping: socktype: SOCK_RAW' >&2\necho 'ping: socket: Operation not permitted' >&2\nexit 2\n");
  chmodSync(join(refused, "ping"), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${refused}:${path}`;
  const denied = await runIcmpCheck(icmp("10.0.0.1"), viaPing);
  assert.equal(denied.errorKind, "internal");
  assert.match(denied.error!, /^ping may not open its socket \(socket: Operation not permitted\); let healthd open an ICMP datagram socket .*AmbientCapabilities=CAP_NET_RAW/);

  process.env.PATH = tempDir(t); // no ping at all
  const missing = await runIcmpCheck(icmp("10.0.0.1"), viaPing);
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

test("the daemon says at start, once, which way its ICMP checks run: the shared socket, with no ping at all on PATH", async (t) => {
  const lines: string[] = [];
  let said: (line: string) => void;
  const saying = new Promise<string>((resolve) => (said = resolve));
  const write = (line: string) => {
    lines.push(line);
    if (line.includes("ICMP checks")) said(line);
  };
  const path = process.env.PATH;
  process.env.PATH = tempDir(t); // no ping: the socket needs none
  t.after(() => (process.env.PATH = path));
  const d = await testDaemon(t, { log: createLogger({ write, timestamps: false }) });
  const passed = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "gw");
  await d.api("PUT", "/services/net", { services: [{ id: "gw", check: { type: "icmp", host: "127.0.0.1", intervalSeconds: 60 } }] });
  const [r] = await passed;
  assert.deepEqual([r.entry.ok, r.entry.answers?.[0]], [true, "sent 3, received 3, loss 0%"], r.entry.error ?? "");
  assert.match(await saying, /ICMP checks send their echoes on one ICMP datagram socket per address family/);
  // A second icmp service later is not told again.
  const second = nextEvent<[CheckDone]>(d.events, "check:done", (x) => x.service.serviceId === "gw2");
  const services = [{ id: "gw", check: { type: "icmp", host: "127.0.0.1", intervalSeconds: 60 } }, { id: "gw2", check: { type: "icmp", host: "::1", intervalSeconds: 60 } }];
  await d.api("PUT", "/services/net", { services });
  assert.equal((await second)[0].entry.ok, true);
  assert.equal(lines.filter((line) => line.includes("ICMP checks")).length, 1, lines.join("\n"));
});
