/**
 * UDP checks (issue 84): the controller against real datagram servers on 127.0.0.1 and ::1 (an echo, one that
 * answers with the wrong protocol, one that floods, one that stays silent, a closed port), then through the
 * daemon on both engines, the API's validation, Gatus's import and the command line.
 */
import assert from "node:assert/strict";
import { createSocket, type Socket } from "node:dgram";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { runUdpCheck, type UdpRequest } from "../src/checks/udp.ts";
import type { CheckDone } from "../src/daemon.ts";
import { runHealthd } from "./support/cli.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

/** A datagram server on `host` answering each datagram with what `reply` makes of it (nothing: silence). */
async function udpServer(t: TestContext, reply: (message: Buffer) => Buffer[], host = "127.0.0.1"): Promise<{ port: number; socket: Socket; received: Buffer[] }> {
  const socket = createSocket(host.includes(":") ? "udp6" : "udp4");
  const received: Buffer[] = [];
  socket.on("message", (message, from) => {
    received.push(message);
    for (const answer of reply(message)) socket.send(answer, from.port, from.address);
  });
  socket.bind(0, host);
  await once(socket, "listening");
  t.after(() => {
    try {
      socket.close();
    } catch {
      // closed by the test already (a port made to be closed)
    }
  });
  return { port: socket.address().port, socket, received };
}

const echo = (message: Buffer) => [Buffer.concat([Buffer.from("echo: "), message])];
const udp = (port: number, more: Partial<UdpRequest> = {}): UdpRequest => ({
  host: "127.0.0.1", port, send: "ping\\n", sendHex: null, expect: [], timeoutMs: 2000, ...more,
});

test("udp: an answer is enough without expectations; contains, matches, hex and latency judge it, over IPv4 and IPv6", async (t) => {
  const v4 = await udpServer(t, echo);
  const any = await runUdpCheck(udp(v4.port));
  assert.deepEqual([any.ok, any.status, any.errorKind], [true, null, null]);
  assert.deepEqual(v4.received.map(String), ["ping\n"], "send's escapes are read as the characters they name");

  const judged = await runUdpCheck(udp(v4.port, { expect: [{ contains: "pong" }, { matches: "^echo: p.ng\\n$", maxLatencyMs: 1000 }] }));
  assert.deepEqual([judged.ok, judged.matched], [true, 1]);
  const bytes = await runUdpCheck(udp(v4.port, { send: null, sendHex: "deadbeef", expect: [{ hex: "DEADBEEF" }] }));
  assert.deepEqual([bytes.ok, bytes.error], [true, null]);
  assert.deepEqual(v4.received.at(-1), Buffer.from([0xde, 0xad, 0xbe, 0xef]));

  const v6 = await udpServer(t, echo, "::1");
  const six = await runUdpCheck(udp(v6.port, { host: "::1", expect: [{ contains: "echo: ping" }] }));
  assert.deepEqual([six.ok, six.error], [true, null]);
});

test("udp: a wrong answer is an answer failure saying what came; a flood costs one datagram; silence is a timeout; a closed port is connect", async (t) => {
  const wrong = await udpServer(t, () => [Buffer.from("SSH-2.0-nope\r\n")]);
  const said = await runUdpCheck(udp(wrong.port, { expect: [{ matches: "^echo" }] }));
  assert.deepEqual([said.ok, said.errorKind, said.error], [false, "answer", 'the answer "SSH-2.0-nope\\r\\n" does not match /^echo/']);
  const hex = await runUdpCheck(udp(wrong.port, { expect: [{ hex: "00ff" }] }));
  assert.equal(hex.error, `the answer (hex ${Buffer.from("SSH-2.0-nope\r\n").toString("hex")}) does not hold the bytes 00ff`);

  const flood = await udpServer(t, () => Array.from({ length: 500 }, (_, i) => Buffer.from(`burst ${i}`)));
  const first = await runUdpCheck(udp(flood.port, { expect: [{ contains: "burst 0" }] }));
  assert.deepEqual([first.ok, first.error], [true, null], "judged on the first datagram");

  const silent = await udpServer(t, () => []);
  const quiet = await runUdpCheck(udp(silent.port, { timeoutMs: 300 }));
  assert.deepEqual([quiet.ok, quiet.errorKind], [false, "timeout"]);
  assert.equal(quiet.error, `no answer from 127.0.0.1:${silent.port} within 300 ms (timed out waiting for an answer)`);

  // A port nobody listens on: the system's ICMP port unreachable ends the check before its timeout.
  const closed = await udpServer(t, () => []);
  const port = closed.port;
  await new Promise<void>((resolve) => closed.socket.close(resolve));
  const refused = await runUdpCheck(udp(port, { timeoutMs: 60_000 }));
  assert.deepEqual([refused.ok, refused.errorKind, refused.error], [false, "connect", `127.0.0.1:${port} answered that the port is closed (ICMP port unreachable)`]);
});

test("the API refuses a udp check without one thing to send, with two, or with bytes that are not hex, naming each", async (t) => {
  const d = await testDaemon(t);
  await assertChecksRefused(d, [
    [{ type: "udp", host: "127.0.0.1", port: 53 }, "/services/0/check/send", /give send \(text\) or sendHex \(bytes\)/],
    [{ type: "udp", host: "127.0.0.1", port: 53, send: "x", sendHex: "00" }, "/services/0/check/sendHex", /give send or sendHex, not both/],
    [{ type: "udp", host: "127.0.0.1", port: 53, sendHex: "0x00" }, "/services/0/check/sendHex", /pairs of hex digits/],
    [{ type: "udp", host: "127.0.0.1", port: 53, send: "x", expect: [{ hex: "abc" }] }, "/services/0/check/expect/0/hex", /pairs of hex digits/],
    [{ type: "udp", host: "127.0.0.1", port: 53, send: "x", expect: [{}] }, "/services/0/check/expect/0", /needs at least one condition \(contains, matches, hex, maxLatencyMs\)/],
    [{ type: "udp", host: "127.0.0.1", port: 53, send: "x", tls: true }, "/services/0/check/tls", /is a field of tcp and grpc checks, not of udp ones/],
    [{ type: "udp", host: "127.0.0.1", port: 53, send: "x", expect: [{ matches: "(a)\\1" }] }, "/services/0/check/expect/0/matches", /backreference/],
  ]);
});

for (const engine of engines) {
  test(`${engine}: a udp service is checked, stored, shown with its target, exported as written and taken back unchanged`, async (t) => {
    const server = await udpServer(t, echo);
    const silent = await udpServer(t, () => []);
    const d = await testDaemon(t, { engine });
    const done = (id: string, ok: boolean) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id && r.entry.ok === ok).then(([r]) => r);
    const up = done("echo", true);
    const down = done("quiet", false);
    const services = [
      { id: "echo", check: { type: "udp", host: "127.0.0.1", port: server.port, send: "status", intervalSeconds: 60, expect: [{ contains: "echo: status" }] } },
      { id: "quiet", check: { type: "udp", host: "127.0.0.1", port: silent.port, sendHex: "00", intervalSeconds: 60, timeoutMs: 200, notifyThreshold: 1 } },
    ];
    const put = await d.api("PUT", "/services/edge", { services });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const [e, q] = await Promise.all([up, down]);
    assert.deepEqual([e.entry.type, e.entry.status, e.entry.errorKind], ["udp", null, null]);
    assert.deepEqual([q.entry.type, q.entry.errorKind], ["udp", "timeout"]);

    const quiet = await d.api("GET", "/services/edge/quiet");
    assert.equal(quiet.body.state.lastEntry.errorKind, "timeout");
    const metrics = (await d.api("GET", "/metrics")).body as string;
    assert.match(metrics, /^healthd_service_up\{server="edge",service="echo",type="udp"\} 1$/m);

    const stored = await d.api("GET", "/services/edge");
    const written = Object.fromEntries(stored.body.services.map((x: { id: string; check: unknown }) => [x.id, x.check]));
    assert.deepEqual(
      { type: written.echo.type, host: written.echo.host, port: written.echo.port, send: written.echo.send, sendHex: written.echo.sendHex, expect: written.echo.expect },
      { type: "udp", host: "127.0.0.1", port: server.port, send: "status", sendHex: null, expect: [{ contains: "echo: status" }] },
    );
    assert.equal(written.quiet.sendHex, "00");
    const again = await d.api("PUT", "/services/edge", { services: stored.body.services.map((x: { id: string; check: unknown }) => ({ id: x.id, check: x.check })) });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.services.map((x: { check: unknown }) => x.check), stored.body.services.map((x: { check: unknown }) => x.check));
  });
}

test("the command line: Gatus's udp endpoints imported (its body sent, [BODY] the whole answer), applied and checked", async (t) => {
  const server = await udpServer(t, (message) => [Buffer.from(String(message) === "ping" ? "pong" : "what?")]);
  const dir = tempDir(t);
  const db = join(dir, "udp.db");
  const config = join(dir, "gatus.yaml");
  writeFileSync(
    config,
    `endpoints:\n` +
      `  - name: game\n    url: "udp://127.0.0.1:${server.port}"\n    body: ping\n    conditions: ["[CONNECTED] == true", "[BODY] == pong", "[RESPONSE_TIME] < 500"]\n` +
      `  - name: bare\n    url: "udp://127.0.0.1:${server.port}"\n    conditions: ["[CONNECTED] == true"]\n`,
  );
  const imported = await runHealthd(["import", "--from", "gatus", config, "--db", db, "--apply"]);
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stderr, /bare.*it sends no body; a udp check sends a datagram its service answers: give it send, then apply/);
  const exported = await runHealthd(["export", "--db", db]);
  assert.match(exported.stdout, /type: udp/);
  // Gatus trims the answer before comparing: the pattern allows space around it.
  assert.match(exported.stdout, /matches: \^\\s\*pong\\s\*\$/);
  const checked = await runHealthd(["check", "--db", db]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  assert.match(checked.stdout, /^ok {3}\S+\/game {2} *\d+\.\d ms {2}answered\n$/);
});
