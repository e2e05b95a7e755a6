/**
 * The daemon's own resources: API clients cannot take the file descriptors the checks need, and a check that
 * cannot be made for want of them is not blamed on its target.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { serveHealthd } from "./support/cli.ts";
import { until } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

const put = (url: string, server: string, services: object[]) =>
  fetch(`${url}/services/${server}`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ services }) }).then(
    async (answer) => (await answer.arrayBuffer(), answer.status),
  );

test("silent API clients cannot take the file descriptors the checks need", async (t) => {
  const target = await httpTarget(t);
  const served = await serveHealthd(t, ["--db", tempDbPath(t), "--max-connections", "16"]);
  served.limitFiles(128);
  const services = Array.from({ length: 20 }, (_, i) => ({ id: `s${i}`, check: { url: `${target.url}/ok?${i}`, intervalSeconds: 1 } }));
  assert.equal(await put(served.url, "web", services), 201);
  const hits = () => target.hits.get("/ok") ?? 0;
  await until(async () => hits(), (n) => n >= 20, "a first round of checks");

  // 400 sockets that connect and say nothing: more than the daemon has descriptors.
  const sockets: Socket[] = [];
  t.after(() => sockets.forEach((s) => s.destroy()));
  const { port } = new URL(served.url);
  for (let i = 0; i < 400; i++) sockets.push(connect(Number(port), "127.0.0.1").on("error", () => {}));
  const before = hits();
  await until(async () => hits(), (n) => n >= before + 3 * 20, "three more rounds of checks while the sockets hang");
  for (const socket of sockets) socket.destroy();

  const health: any = await (await fetch(`${served.url}/healthz`)).json();
  assert.equal(health.status, "ok", JSON.stringify(health));
  const server: any = await (await fetch(`${served.url}/services/web`)).json();
  assert.deepEqual(new Set(server.services.map((s: { state: { status: string } }) => s.state.status)), new Set(["up"]));
  assert.doesNotMatch(await (await fetch(`${served.url}/metrics`)).text(), /error_kind="internal"/);
  assert.equal(await served.stop(), 0);
});

test("a check the daemon cannot make for want of descriptors is not counted against its service", async (t) => {
  const target = await httpTarget(t);
  // About ten descriptors to spare, and thirty checks of a slow site at once: some find none.
  const served = await serveHealthd(t, ["--db", tempDbPath(t)]);
  served.limitFiles(40);
  const services = Array.from({ length: 30 }, (_, i) => ({ id: `s${i}`, check: { url: `${target.url}/slow-ok?${i}`, intervalSeconds: 1, notifyThreshold: 0 } }));
  assert.equal(await put(served.url, "web", services), 201);
  await served.waitForLog(/checks cannot be made: the daemon is short of resources/);
  // Descriptors enough again, so that the API can answer what happened.
  served.limitFiles(1024);
  const metrics = await until(() => fetch(`${served.url}/metrics`).then((r) => r.text()), (m) => /^healthd_check_shortages_total\{reason="EMFILE"\} [1-9]/m.test(m), "the shortage metric");
  assert.doesNotMatch(metrics, /error_kind="internal"/, "no entry was stored as an internal failure");
  const health: any = await (await fetch(`${served.url}/healthz`)).json();
  assert.equal(health.status, "degraded");
  assert.ok(health.problems.some((p: string) => /could not be made for want of the daemon's own resources \(EMFILE/.test(p)), JSON.stringify(health));
  const server: any = await (await fetch(`${served.url}/services/web`)).json();
  assert.deepEqual(server.services.filter((s: { state: { status: string } }) => s.state.status === "down"), []);
  assert.equal(await served.stop(), 0);
});

test("slowloris: sockets that send a header line a second cannot keep /healthz from answering", async (t) => {
  const served = await serveHealthd(t, ["--db", tempDbPath(t), "--max-connections", "16"]);
  const { port } = new URL(served.url);
  const sockets = new Set<Socket>();
  let flooding = true;
  const timers = new Set<NodeJS.Timeout>();
  t.after(() => {
    flooding = false;
    timers.forEach(clearInterval);
    sockets.forEach((s) => s.destroy());
  });
  // Twice the bound, each sending its head one line a second; one closed is opened again 200 ms later.
  const slow = () => {
    const socket = connect(Number(port), "127.0.0.1").on("error", () => {});
    connected.push(new Promise((resolve) => socket.once("connect", resolve).once("close", resolve)));
    sockets.add(socket);
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    let line = 0;
    const timer = setInterval(() => socket.write(`X-Slow-${line++}: 1\r\n`), 1000);
    timers.add(timer);
    socket.on("close", () => {
      clearInterval(timer);
      sockets.delete(socket);
      if (flooding) setTimeout(slow, 200);
    });
  };
  const connected: Promise<unknown>[] = [];
  for (let i = 0; i < 32; i++) slow();
  await Promise.all(connected.slice(0, 32));
  // Before: the bound was full of slow heads and a new connection was closed at once, for 10 s.
  for (let i = 0; i < 10; i++) {
    const answer = await fetch(`${served.url}/healthz`, { signal: AbortSignal.timeout(2000) });
    assert.equal(answer.status, 200);
  }
  flooding = false;
  sockets.forEach((s) => s.destroy());
  assert.equal(await served.stop(), 0);
});

test("a connection that has not sent its request's head in 10 s is closed, and one that has is answered", async (t) => {
  const served = await serveHealthd(t, ["--db", tempDbPath(t)]);
  const { port } = new URL(served.url);
  const open = (head: string) => {
    const socket = connect(Number(port), "127.0.0.1").on("error", () => {});
    t.after(() => socket.destroy());
    socket.write(head);
    const connectedAt = performance.now();
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk));
    return new Promise<{ afterMs: number; answer: string }>((resolve) => socket.once("close", () => resolve({ afterMs: performance.now() - connectedAt, answer })));
  };
  const [partial, whole] = await Promise.all([open("GET /healthz HTTP/1.1\r\nHost: x\r\n"), open("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")]);
  assert.match(whole.answer, /^HTTP\/1\.1 200 /);
  assert.equal(partial.answer, "");
  // Cut at the daemon's tick once 10 s have passed (Node's own check, every 30 s, is only the backstop).
  assert.ok(partial.afterMs >= 10_000 && partial.afterMs < 20_000, `closed after ${Math.round(partial.afterMs)} ms`);
  assert.equal(await served.stop(), 0);
});
