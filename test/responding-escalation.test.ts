/**
 * Acknowledgement and escalation where time is the subject: results with chosen check times go through the
 * store's one write path, escalation is looked at with chosen times, and what the outbox holds is what would be
 * published. A second store on the same database stands for another node (and for the node that replaces one
 * killed: all it knows is the database). Both engines. The escalation's pure rules: the DB-less tests at the end.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { initialState, type Outcome } from "../src/domain/model.ts";
import { ackNotice } from "../src/policy/acknowledge.ts";
import { parseServersFile, renderServersFile } from "../src/cli/servers-file.ts";
import { transition } from "../src/policy/incident.ts";
import { serverDocument } from "../src/domain/schema/index.ts";
import { channelDocument } from "../src/domain/schema/channel.ts";
import { alsoTo, dueEscalations, nextEscalationAt, type Unanswered } from "../src/policy/escalation.ts";
import { noRoutes } from "../src/policy/route.ts";
import type { Store } from "../src/store/store.ts";
import { serveHealthd } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { notifications, open, rawQuery } from "./support/raw.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

const minute = 60_000;
const T = Date.parse("2026-12-01T10:00:00Z");
const fail = (checkedAt: number): Outcome => ({ ok: false, status: 503, latencyMs: 1, matched: null, errorKind: "status", error: "status 503", checkedAt });
const pass = (checkedAt: number): Outcome => ({ ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt });

async function node(t: TestContext, db: string): Promise<Store> {
  const store = await open(db, { mode: "write" });
  t.after(() => store.close());
  return store;
}

/** What the outbox holds, as "kind service channel@minutes after T", in order. */
const outbox = async (store: Store) =>
  (await notifications(store)).map((n) => `${n.kind} ${n.serviceId} ${n.channel}@${Math.round((n.createdAt - T) / minute)}`);

for (const engine of engines) {
  test(`${engine}: escalation steps go once each after their delay, across a node killed and another taking over; never after an acknowledgement, which also stops reminders`, async (t) => {
    const db = await testDatabase(t, engine);
    const a = await node(t, db);
    const check = { url: "http://127.0.0.1:9/", intervalSeconds: 60, notifyThreshold: 0, remindEveryMinutes: 5 };
    await a.applyServers(
      new Map([
        [
          "web-01",
          serverDocument.parse({
            // The server's steps; "app" has its own, which override them.
            escalate: [{ afterMinutes: 10, channels: ["pager"] }, { afterMinutes: 30, channels: ["pager", "ntfy"] }],
            services: [{ id: "db", check }, { id: "app", check: { ...check, escalate: [{ afterMinutes: 10, channels: ["pager"] }] } }],
          }),
        ],
      ]),
      { now: T, channels: new Map([["pager", channelDocument.parse({ type: "webhook", url: "http://127.0.0.1:9/" })]]) },
    );
    const keys = Object.fromEntries(await Promise.all(["db", "app"].map(async (id) => [id, (await a.findService("web-01", id)).key!] as const)));
    const record = async (store: Store, id: string, outcome: Outcome) => void (await store.recordResults([{ serviceKey: keys[id]!, outcome }], outcome.checkedAt));

    await record(a, "db", fail(T));
    await record(a, "app", fail(T));
    assert.equal((await a.escalate(T + 9 * minute)).sent, 0, "nothing before the first step's delay");
    // Someone takes app on: its channels hear who, and it is reminded of no more.
    const appIncident = await a.openIncident("web-01", "app");
    const acked = await a.acknowledge(appIncident!.id, { by: "alice", note: "on it", at: T + 5 * minute });
    assert.equal(acked.outcome, "acknowledged");
    assert.deepEqual((await a.acknowledge(appIncident!.id, { by: "bob", note: null, at: T + 6 * minute })).outcome, "already acknowledged");
    await record(a, "db", fail(T + 6 * minute));
    await record(a, "app", fail(T + 6 * minute));

    // The node goes (nothing of it but the database is left: the kill -9 of a real daemon is the test below);
    // others look after the first step is due.
    await a.close();
    const b = await node(t, db);
    const c = await node(t, db);
    assert.deepEqual(await b.escalate(T + 10 * minute), { sent: 1, nextAt: T + 30 * minute });
    assert.equal((await b.escalate(T + 11 * minute)).sent, 0, "a step goes once");
    assert.equal((await c.escalate(T + 12 * minute)).sent, 0, "and once across nodes");
    // Two nodes looking at the same moment (a handover): one sends the step. (SQLite has one daemon: one after the other.)
    const both = engine === "postgres" ? await Promise.all([b.escalate(T + 31 * minute), c.escalate(T + 31 * minute)]) : [await b.escalate(T + 31 * minute), await c.escalate(T + 31 * minute)];
    assert.equal(both[0]!.sent + both[1]!.sent, 1);
    // RECOVERED still goes out for the acknowledged incident; nothing escalates after it.
    await record(b, "db", pass(T + 32 * minute));
    await record(b, "app", pass(T + 32 * minute));
    assert.equal((await b.escalate(T + 100 * minute)).sent, 0);
    assert.deepEqual(await outbox(b), [
      "down db ntfy@0",
      "down app ntfy@0",
      "ack app ntfy@5",
      "reminder db ntfy@6",
      "escalation db pager@10",
      "escalation db pager@31",
      "escalation db ntfy@31",
      // Whoever was paged hears it is over: RECOVERED goes to the channels the steps went to as well.
      "recovered db ntfy@32",
      "recovered db pager@32",
      "recovered app ntfy@32",
    ]);
    const [incident] = (await b.incidents({ serviceId: "app", limit: 1 })).incidents;
    assert.deepEqual(incident!.acknowledged, { by: "alice", at: T + 5 * minute, note: "on it" });
    const ack = (await notifications(b)).find((n) => n.kind === "ack")!;
    assert.deepEqual([ack.event!.event, ack.event!.ackedBy, ack.event!.ackNote, ack.message.title], ["ack", "alice", "on it", "ACK: web-01/app"]);
    const escalation = (await notifications(b)).find((n) => n.kind === "escalation")!;
    assert.equal(escalation.message.title, "DOWN (escalated): web-01/db");
    assert.match(escalation.message.message!, /^Not acknowledged 10 min after it was reported: escalation step 1 of 2\nstatus 503/);
    // export writes the steps (the server's, and app's own) as apply reads them back.
    const [server] = await b.servers("web-01");
    const file = renderServersFile([{ ...server!, services: await b.services({ serverId: "web-01" }) }], [], "yaml");
    const parsed = parseServersFile(file, "servers.yaml", {});
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const doc = parsed.servers.get("web-01")!;
    assert.deepEqual([doc.escalate?.length, doc.services.find((s) => s.id === "app")!.check.escalate], [2, [{ afterMinutes: 10, channels: ["pager"] }]]);
    // A closed incident cannot be acknowledged (again, or at all).
    assert.equal((await b.acknowledge(appIncident!.id, { by: "carol", note: null, at: T + 40 * minute })).outcome, "closed");
    const dbIncident = (await b.incidents({ serviceId: "db", limit: 1 })).incidents[0]!;
    assert.equal((await b.acknowledge(dbIncident.id, { by: "carol", note: null, at: T + 40 * minute })).outcome, "closed");
  });
}

test("kill -9 of the daemon between a DOWN and its escalation: the daemon started in its place sends the step, once", async (t) => {
  const ntfy = await ntfyStandIn(t);
  const target = await switchableTarget(t);
  const db = tempDbPath(t);
  const env = { HEALTHD_DB: db, HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };
  const first = await serveHealthd(t, [], env);
  const down = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN: web-01/db");
  const put = await fetch(first.url + "/services/web-01", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ escalate: [{ afterMinutes: 10, channels: ["ntfy"] }], services: [{ id: "db", check: { url: target.url, intervalSeconds: 3600, notifyThreshold: 0 } }] }),
  });
  assert.equal(put.status, 201);
  await down;
  assert.equal(await first.stop("SIGKILL"), null);
  // Ten minutes pass while no daemon runs (as far as the database says: the incident opened ten minutes ago).
  const store = await open(db, { mode: "write" });
  t.after(() => store.close());
  await rawQuery(store, "UPDATE incidents SET opened_at = opened_at - 600000");
  const escalated = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN (escalated): web-01/db");
  const second = await serveHealthd(t, [], env);
  const [message] = await escalated;
  assert.equal(message.priority, 5);
  // Once: another look (this store, as another node would) finds the step sent.
  assert.equal((await store.escalate(Date.now())).sent, 0);
  assert.equal(await second.stop(), 0);
  assert.equal(ntfy.messages("ops").filter((m) => m.title === "DOWN (escalated): web-01/db").length, 1);
});

const subject = { serverId: "s", serviceId: "x", serverName: "s", serviceName: "x", url: "http://x/", type: "http" as const, channels: null, notifyTopic: null };
const incident = (over: Partial<Unanswered> = {}): Unanswered => ({
  id: 1, subject, openedAt: 0, startedAt: 0, closedAt: null, ackedAt: null, notified: true, firstError: "boom",
  steps: [{ afterMinutes: 10, channels: ["pager"] }, { afterMinutes: 20, channels: ["phone"] }], sent: [], ...over,
});

test("escalation's rules: a step is due after its delay, once; never for an incident closed, acknowledged or not yet told; channels' events filter it", () => {
  const due = (i: Unanswered, at: number, routes = noRoutes) => dueEscalations([i], at * minute, routes).map((d) => [d.step, d.notification.channels]);
  assert.deepEqual(due(incident(), 9), []);
  assert.deepEqual(due(incident(), 10), [[0, ["pager"]]]);
  assert.deepEqual(due(incident(), 25), [[0, ["pager"]], [1, ["phone"]]], "a look after a long pause sends every step due");
  assert.deepEqual(due(incident({ sent: [0] }), 25), [[1, ["phone"]]]);
  assert.deepEqual(due(incident({ closedAt: 1 }), 25), []);
  assert.deepEqual(due(incident({ ackedAt: 1 }), 25), []);
  assert.deepEqual(due(incident({ notified: false }), 25), [], "an incident held by a silence has told nobody: nothing to escalate");
  assert.deepEqual(due(incident(), 25, { events: new Map([["phone", ["down", "recovered"]]]), defaults: null }), [[0, ["pager"]], [1, []]]);
  const routes = { events: new Map([["quiet", ["down" as const]]]), defaults: null };
  assert.deepEqual(alsoTo(["ntfy"], ["pager", "ntfy", "quiet"], "recovered", routes), ["ntfy", "pager"], "RECOVERED also to where steps went, as their events admit");
  assert.equal(nextEscalationAt([incident({ sent: [0] })]), 20 * minute);
  assert.equal(nextEscalationAt([incident({ ackedAt: 1 })]), undefined);
});

test("an acknowledged incident is reminded of no more, and still closes with RECOVERED; the ack notice says who to the service's channels", () => {
  const settings = { notify: true, notifyThreshold: 0, remindEveryMinutes: 5 };
  const opened = transition(initialState, { ok: false, checkedAt: 0 }, settings).state;
  assert.deepEqual(transition(opened, { ok: false, checkedAt: 6 * minute }, settings).notices, ["reminder"]);
  assert.deepEqual(transition(opened, { ok: false, checkedAt: 6 * minute }, settings, { acknowledged: true }).notices, []);
  assert.deepEqual(transition(opened, { ok: true, checkedAt: 7 * minute }, settings, { acknowledged: true }).notices, ["recovered"]);
  const routes = { events: new Map([["quiet", ["down" as const]]]), defaults: null };
  const notice = ackNotice({ ...subject, channels: ["ntfy", "quiet"] }, { id: 3, startedAt: 0 }, { by: "alice", note: "on it", at: 12 * minute }, routes);
  assert.deepEqual([notice.kind, notice.channels, notice.body.title, notice.body.message?.split("\n")[0]], ["ack", ["ntfy"], "ACK: s/x", "Acknowledged by alice: on it"]);
  assert.deepEqual([notice.event.event, notice.event.ackedBy, notice.event.ackNote, notice.incidentId], ["ack", "alice", "on it", 3]);
});
