/**
 * Acknowledging incidents through the daemon, as people do: the ntfy action button (its POST as ntfy sends it),
 * the signed link of an email (its page, its form; refused with a wrong signature and once the incident is
 * over), the API with its validation and tenancy, and `healthd ack` (the built executable). One daemon per
 * engine, a real SMTP server and the ntfy stand-in.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { SMTPServer } from "smtp-server";
import { channelDocument } from "../src/domain/schema/channel.ts";
import { senderFor } from "../src/notify/senders.ts";
import { ackSignature, validAckSignature } from "../src/notify/ack-link.ts";
import { runHealthd } from "./support/cli.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { notifications, rawQuery } from "./support/raw.ts";
import { switchableTarget } from "./support/targets.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
// Links are made under the public URL people reach; the test sends them to the daemon where it listens.
const publicUrl = "https://healthd.example.org/";
const local = (d: TestDaemon, link: string) => d.url + new URL(link).pathname + new URL(link).search;

async function smtp(t: TestContext): Promise<{ port: number; events: EventEmitter }> {
  const events = new EventEmitter();
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    hideSTARTTLS: true,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => (callback(), events.emit("mail", Buffer.concat(chunks).toString("utf8"))));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.server.address() as { port: number }).port, events };
}

/** The text part of a mail, quoted-printable undone. */
const text = (raw: string) => {
  const start = raw.indexOf("Content-Type: text/plain");
  const body = raw.slice(raw.indexOf("\r\n\r\n", start) + 4).split(/\r\n--/)[0]!;
  return body.replace(/=\r\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
};

async function token(d: TestDaemon, body: object): Promise<string> {
  const made = await d.api("POST", "/tokens", body, admin);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  return made.body.token;
}

const incidentOf = async (d: TestDaemon, service: string) => (await d.api("GET", `/incidents?server=web-01&service=${service}`, undefined, admin)).body.incidents[0];

for (const engine of engines) {
  test(`${engine}: an ntfy action and an email link acknowledge once; the link is refused with a wrong signature and after RECOVERED; the API validates and keeps tenancy; healthd ack`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const mail = await smtp(t);
    const target = await switchableTarget(t);
    const d = await testDaemon(t, { engine, token: adminToken, publicUrl, ntfy: { url: ntfy.url, topic: "alerts" } });
    assert.equal((await d.api("PUT", "/channels/mail", { type: "email", to: ["ops@example.org"], from: "healthd@example.org", host: "127.0.0.1", port: mail.port, secure: "none" }, admin)).status, 201);
    const check = (channels: string[]) => ({ url: target.url, intervalSeconds: 3600, notifyThreshold: 0, channels });
    const pushed = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN: web-01/phone");
    const mailed = nextEvent<[string]>(mail.events, "mail", (raw) => raw.includes("Subject: DOWN: web-01/mailed"));
    const services = [{ id: "phone", check: check(["ntfy"]) }, { id: "mailed", check: check(["mail"]) }, { id: "cli", check: check(["mail"]) }];
    // Its incidents escalate by email after 10 minutes nobody acknowledged them (the server's steps).
    assert.equal((await d.api("PUT", "/services/web-01", { services, escalate: [{ afterMinutes: 10, channels: ["mail"] }] }, admin)).status, 201);
    assert.equal((await d.api("PUT", "/services/other", { services: [{ id: "x", check: check(["mail"]) }] }, admin)).status, 201);

    // ntfy: the DOWN carries an http action; its tap is a POST to healthd, as ntfy sends it.
    const [down] = await pushed;
    const [action] = down.actions ?? [];
    assert.ok(action && action.action === "http" && action.url?.startsWith(`${publicUrl}incidents/`), JSON.stringify(down.actions));
    const told = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "ACK: web-01/phone");
    const tapped = await fetch(local(d, action.url!), { method: action.method, headers: action.headers, body: action.body });
    assert.equal(tapped.status, 200, await tapped.text());
    assert.match((await told)[0].message, /^Acknowledged by ntfy\n/);
    assert.deepEqual({ ...(await incidentOf(d, "phone")).acknowledged, at: undefined }, { by: "ntfy", note: null, at: undefined });

    // Email: a link in the text (and the HTML); its GET only shows a page, its form's POST acknowledges.
    const link = /^Acknowledge \(stops reminders and escalations\): (\S+)$/m.exec(text((await mailed)[0]))?.[1];
    assert.ok(link, "the DOWN email carries the link");
    const page = await fetch(local(d, link));
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<form method="post" action="\/incidents\/\d+\/ack\/[A-Za-z0-9_-]+">/);
    assert.equal((await incidentOf(d, "mailed")).acknowledged, null, "a GET changes nothing: mail scanners fetch links");
    const forged = local(d, link).replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    assert.equal((await fetch(forged)).status, 403);
    assert.equal((await fetch(forged, { method: "POST" })).status, 403);
    const form = { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "note=restarting+it" };
    assert.equal((await fetch(local(d, link), form)).status, 200);
    assert.deepEqual([(await incidentOf(d, "mailed")).acknowledged.by, (await incidentOf(d, "mailed")).acknowledged.note], ["link", "restarting it"]);
    const again = await fetch(local(d, link), form);
    assert.equal(again.status, 409);
    assert.match(await again.text(), /already acknowledged by link/);

    // The API: validated, exactly once, and a token limited to another server does not learn the incident exists.
    const ops = await token(d, { name: "ops-alice", scope: "write", servers: ["web-01"] });
    const stranger = await token(d, { name: "other-team", scope: "write", servers: ["other"] });
    const reader = await token(d, { name: "reader", scope: "read", servers: null });
    const id = (await incidentOf(d, "cli")).id as string;
    const otherId = (await d.api("GET", "/incidents?server=other", undefined, admin)).body.incidents[0].id as string;
    const bad = await d.api("POST", `/incidents/${id}/ack`, { note: 5, extra: true }, as(ops));
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ["/extra", "/note"]);
    assert.equal((await d.api("POST", `/incidents/${id}/ack`, { note: "x".repeat(1001) }, as(ops))).status, 400);
    assert.equal((await d.api("POST", `/incidents/${id}/ack`, {}, as(reader))).status, 403);
    assert.equal((await d.api("POST", `/incidents/${otherId}/ack`, {}, as(ops))).status, 404);
    assert.equal((await d.api("POST", "/incidents/999999/ack", {}, as(ops))).status, 404);
    assert.equal((await d.api("GET", `/incidents/${id}`, undefined, as(stranger))).status, 404);

    // Escalation steps: validated (range, ascending), naming channels that exist; a channel a step names stays.
    const esc = (escalate: unknown) => d.api("PUT", "/services/web-01/esc", { check: { url: target.url, paused: true, escalate } }, admin);
    const paths = async (answer: Promise<{ status: number; body: any }>) => {
      const { status, body } = await answer;
      return [status, body.errors?.map((e: { path: string }) => e.path)];
    };
    assert.deepEqual(await paths(esc([{ afterMinutes: 10, channels: ["mail"] }, { afterMinutes: 10, channels: ["mail"] }])), [400, ["/check/escalate/1/afterMinutes"]]);
    assert.deepEqual(await paths(esc([{ afterMinutes: 0, channels: [] }])), [400, ["/check/escalate/0/afterMinutes", "/check/escalate/0/channels"]]);
    assert.deepEqual(await paths(esc([{ afterMinutes: 5, channels: ["nope"] }])), [400, ["/check/escalate"]]);
    assert.equal((await d.api("PUT", "/channels/pager", { type: "webhook", url: "http://127.0.0.1:9/" }, admin)).status, 201);
    assert.equal((await esc([{ afterMinutes: 5, channels: ["pager"] }])).status, 201);
    assert.deepEqual((await d.api("GET", "/services/web-01/esc", undefined, admin)).body.check.escalate, [{ afterMinutes: 5, channels: ["pager"] }]);
    assert.equal((await d.api("DELETE", "/channels/pager", undefined, admin)).status, 409);
    assert.equal((await d.api("DELETE", "/services/web-01/esc", undefined, admin)).status, 204);

    // The daemon's look for escalations: an incident 10 minutes old that nobody acknowledged goes out once,
    // marked as escalated, with its link. (Opened 10 minutes ago as far as the database says.)
    const escalated = nextEvent<[string]>(mail.events, "mail", (raw) => raw.includes("Subject: DOWN (escalated): web-01/cli"));
    await rawQuery(d.store, `UPDATE incidents SET opened_at = opened_at - 600000 WHERE id = ${Number(id)}`);
    await d.escalator.runOnce();
    await d.escalator.runOnce();
    assert.match(text((await escalated)[0]), /^Not acknowledged 10 min after it was reported: escalation step 1 of 1\r?\n[\s\S]*Acknowledge \(stops reminders and escalations\): https:\/\/healthd\.example\.org\/incidents\//);
    assert.equal((await notifications(d.store)).filter((n) => n.kind === "escalation").length, 1);

    // healthd ack: the open incident of a service; clear errors when there is none.
    const acked = await runHealthd(["ack", "web-01/cli", "on it", "--db", d.db, "--json"]);
    assert.equal(acked.code, 0, acked.stderr);
    assert.deepEqual([JSON.parse(acked.stdout).acknowledged.by.endsWith("(healthd ack)"), JSON.parse(acked.stdout).acknowledged.note], [true, "on it"]);
    const twice = await d.api("POST", `/incidents/${id}/ack`, { note: "me too" }, as(ops));
    assert.equal(twice.status, 409);
    assert.match(twice.body.detail, /already acknowledged by .*\(healthd ack\)/);

    // Once the incident is over, its link does nothing: 410 with a page that says so.
    target.setUp(true);
    const recovered = nextEvent<[string]>(mail.events, "mail", (raw) => raw.includes("Subject: RECOVERED: web-01/mailed"));
    assert.equal((await d.api("PUT", "/services/web-01", { services: services.map((s) => ({ ...s, check: { ...s.check, intervalSeconds: 3599 } })) }, admin)).status, 200);
    await recovered;
    await until(() => incidentOf(d, "mailed"), (i) => i.closedAt !== null, "the incident closed");
    const over = await fetch(local(d, link));
    assert.equal(over.status, 410);
    assert.match(await over.text(), /This incident is over/);
    assert.equal((await fetch(local(d, link), form)).status, 410);
    const closedAck = await runHealthd(["ack", "web-01/mailed", "--db", d.db]);
    assert.equal(closedAck.code, 2);
    assert.match(closedAck.stderr, /web-01\/mailed has no open incident: nothing to acknowledge/);
  });
}

test("the acknowledgement link is in Slack, Mattermost, Discord, Teams and webhook payloads, in each one's link syntax", async (t) => {
  const bodies = new Map<string, string>();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => (bodies.set(req.url!.split("?")[0]!, body), res.end('{"id": "1"}')));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ackUrl = "https://healthd.example.org/incidents/7/ack/abc";
  const out = {
    event: {
      id: "n1", event: "down" as const, server: "web-01", service: "db", serverName: "web-01", serviceName: "db", url: "", error: "boom", since: null, duration: null,
      incidentId: 7, at: "2026-12-06T00:00:00Z", title: "DOWN: web-01/db", message: "boom", statusPage: null, ackUrl,
    },
    body: { title: "DOWN: web-01/db", message: "boom" },
    topic: null,
  };
  const expected: Record<string, string> = {
    slack: `<${ackUrl}|Acknowledge>`,
    mattermost: `[Acknowledge](${ackUrl})`,
    discord: `[Acknowledge](<${ackUrl}>)`,
    teams: `{"type":"Action.OpenUrl","title":"Acknowledge","url":"${ackUrl}"}`,
    webhook: `"ackUrl":"${ackUrl}"`,
  };
  for (const type of Object.keys(expected)) {
    const sender = senderFor(channelDocument.parse({ type, url: `${base}/${type}` }), { now: Date.now });
    const sent = await sender.send(out);
    await sender.close();
    assert.ok(sent.ok, JSON.stringify(sent));
    const body = bodies.get(`/${type}`)!;
    assert.ok(body.includes(JSON.stringify(expected[type]).slice(1, -1)) || body.includes(expected[type]!), `${type}: ${body}`);
  }
});

test("a link signs its incident's service too: SQLite gives a deleted service's last incident id to the next incident, and the old link must not take it", () => {
  const secret = "cluster-secret";
  const old = { id: 3, serverId: "web", serviceId: "home" };
  const signature = ackSignature(secret, old);
  assert.equal(validAckSignature(secret, old, signature), true);
  assert.equal(validAckSignature(secret, { ...old, serverId: "shop", serviceId: "checkout" }, signature), false);
  assert.equal(validAckSignature("another-cluster", old, signature), false);
});
