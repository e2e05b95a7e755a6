/**
 * Exactly once per channel, for real: kill -9 of the daemon while a webhook holds its deliveries, and two
 * PostgreSQL nodes sharing one outbox. The receivers stand in for endpoints that honour Idempotency-Key (as
 * Stripe-style APIs do): what they take is counted per key.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { serveHealthd, type Served } from "./support/cli.ts";
import { testDatabase } from "./support/databases.ts";
import { until } from "./support/events.ts";
import { receiver, type Receiver } from "./support/receiver.ts";
import { recordingTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

async function api(node: Served, method: string, path: string, body?: unknown) {
  const response = await fetch(node.url + path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) });
  const text = await response.text();
  return { status: response.status, body: text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text };
}

/** The outbox is empty: every delivery delivered, failed or unsent. */
const drained = (node: Served) =>
  until(async () => (await api(node, "GET", "/metrics")).body as string, (text) => /^healthd_notifications\{status="pending"\} 0$/m.test(text), "the outbox to drain", 30_000);

/** The keys a receiver answered with 200, each with how many times. */
function taken(r: Receiver, answered: Set<unknown>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const req of r.received) {
    if (!answered.has(req)) continue;
    const key = String(req.headers["idempotency-key"]);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

const services = (target: string, count: number) => ({
  groupThreshold: 0, // one delivery per service is what these count, not one for the storm
  services: Array.from({ length: count }, (_, i) => ({ id: `s${i}`, check: { url: `${target}/s${i}`, intervalSeconds: 1, notifyThreshold: 0, channels: ["hook", "other"] } })),
});

test("kill -9 while a webhook holds every delivery: after a restart each is sent again with its key, and the other channel's are not repeated", async (t) => {
  const hook = await receiver(t);
  const other = await receiver(t);
  const target = await recordingTarget(t);
  target.fails = () => true;
  const answered = new Set<unknown>();
  let hang = true;
  hook.answer((req) => (hang ? "hang" : (answered.add(req), { status: 200, body: "ok" })));
  other.answer((req) => (answered.add(req), { status: 200, body: "ok" }));
  const env = { HEALTHD_DB: tempDbPath(t) };
  const first = await serveHealthd(t, [], env);
  await api(first, "PUT", "/channels/hook", { type: "webhook", url: hook.url });
  await api(first, "PUT", "/channels/other", { type: "webhook", url: other.url });
  await api(first, "PUT", "/services/web", services(target.url, 5));
  await until(async () => hook.received.length, (n) => n >= 5, "five DOWNs held by hook");
  // other's are on record as delivered: what is cut off is hook's sends alone.
  await until(async () => (await api(first, "GET", "/metrics")).body as string, (text) => /^healthd_notifications\{status="delivered"\} 5$/m.test(text), "other's five DOWNs delivered");
  assert.equal(await first.stop("SIGKILL"), null);

  hang = false;
  const second = await serveHealthd(t, [], env);
  await until(async () => taken(hook, answered).size, (n) => n === 5, "hook to take the five DOWNs");
  await drained(second);
  const hookKeys = taken(hook, answered);
  assert.deepEqual([...hookKeys.values()], [1, 1, 1, 1, 1], "each DOWN taken once by hook");
  const held = new Set(hook.received.filter((r) => !answered.has(r)).map((r) => String(r.headers["idempotency-key"])));
  assert.deepEqual([...held].sort(), [...hookKeys.keys()].sort(), "the resend after the crash carries the key of the send it cut off");
  const otherKeys = taken(other, answered);
  assert.deepEqual([...otherKeys.values()], [1, 1, 1, 1, 1], "other took each DOWN once, before the crash, and was not sent it again");
  assert.deepEqual([...otherKeys.keys()].sort(), [...hookKeys.keys()].sort(), "one notification, one key on every channel");
  assert.equal(await second.stop(), 0);
});

test("two PostgreSQL nodes share the outbox: every DOWN and RECOVERED reaches each channel once, with a node killed between", async (t) => {
  const db = await testDatabase(t, "postgres");
  const hook = await receiver(t);
  const other = await receiver(t);
  const answered = new Set<unknown>();
  for (const r of [hook, other]) r.answer((req) => (answered.add(req), { status: 200, body: "ok" }));
  const target = await recordingTarget(t);
  let failing = true;
  target.fails = () => failing;
  const start = (name: string) => serveHealthd(t, ["--db", db, "--node", name, "--lease-seconds", "3"]);
  const n1 = await start("n1");
  const n2 = await start("n2");
  await api(n1, "PUT", "/channels/hook", { type: "webhook", url: hook.url });
  await api(n1, "PUT", "/channels/other", { type: "webhook", url: other.url });
  await api(n1, "PUT", "/services/web", services(target.url, 6));
  const events = (r: Receiver) => r.received.filter((q) => answered.has(q)).map((q) => `${q.json.event} ${q.json.service}`);
  await until(async () => events(hook).length + events(other).length, (n) => n >= 12, "six DOWNs on both channels");
  // Killed with nothing in flight (a send cut off is the test above's): its checks and deliveries move to n1.
  await drained(n1);
  await n2.stop("SIGKILL");
  failing = false;
  await until(async () => events(hook).filter((e) => e.startsWith("recovered")).length, (n) => n >= 6, "six RECOVEREDs on hook", 30_000);
  await drained(n1);
  const expected = Array.from({ length: 6 }, (_, i) => [`down s${i}`, `recovered s${i}`]).flat().sort();
  assert.deepEqual(events(hook).sort(), expected);
  assert.deepEqual(events(other).sort(), expected);
  for (const r of [hook, other]) assert.deepEqual([...new Set(taken(r, answered).values())], [1], "no key taken twice");
  assert.equal(await n1.stop(), 0);
});
