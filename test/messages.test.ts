/**
 * What notifications say, through the real daemon on both engines: a failed run's DOWN carries the last lines
 * of its output on every type of channel (real receivers on 127.0.0.1, the ntfy stand-in, a real SMTP
 * server), its DOWN and RECOVERED emails share a thread, and a DOWN names the services it holds through
 * dependsOn while their own state says which service holds them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type NtfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { receiver, type Received } from "./support/receiver.ts";
import { mimePart, smtpServer, type Mail } from "./support/smtp.ts";
import { switchableTarget } from "./support/targets.ts";

/** Where each HTTP type of channel carries the text of a notification. */
const textOf: Record<string, (req: Received) => string> = {
  webhook: (r) => r.json.message,
  slack: (r) => r.json.text,
  discord: (r) => r.json.content,
  teams: (r) => r.json.attachments[0].content.body[1].text,
  mattermost: (r) => r.json.text,
  gotify: (r) => r.json.message,
  matrix: (r) => r.json.body,
  telegram: (r) => r.json.text,
  pagerduty: (r) => r.json.payload.custom_details.message,
};

for (const engine of engines) {
  test(`${engine}: a heartbeat's failed run: its DOWN carries the last lines of its output on every channel; its DOWN and RECOVERED emails share a thread`, async (t) => {
    const stand = await receiver(t);
    stand.answer((req) => (req.path.startsWith("/pagerduty") ? { status: 202, body: '{"status":"success","dedup_key":"k"}' } : { status: 200, body: "ok" }));
    const ntfy = await ntfyStandIn(t);
    const smtp = await smtpServer(t);
    const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 1000 } });
    const presets: Record<string, object> = {
      webhook: { type: "webhook", url: `${stand.url}/webhook` },
      slack: { type: "slack", url: `${stand.url}/slack` },
      discord: { type: "discord", url: `${stand.url}/discord` },
      teams: { type: "teams", url: `${stand.url}/teams` },
      mattermost: { type: "mattermost", url: `${stand.url}/mattermost` },
      gotify: { type: "gotify", url: `${stand.url}/gotify`, token: "AppToken" },
      matrix: { type: "matrix", url: `${stand.url}/matrix`, room: "!room:example.org", token: "syt_x" },
      telegram: { type: "telegram", url: `${stand.url}/telegram`, token: "123:ABC", chatId: "-100" },
      pagerduty: { type: "pagerduty", url: `${stand.url}/pagerduty`, routingKey: "R" },
      mail: { type: "email", to: ["ops@example.org"], from: "healthd <alerts@example.org>", host: "127.0.0.1", port: smtp.port, secure: "none" },
    };
    for (const [name, doc] of Object.entries(presets)) assert.equal((await d.api("PUT", `/channels/${name}`, doc)).status, 201, name);
    const put = await d.api("PUT", "/services/db1", { services: [{ id: "backup", check: { type: "heartbeat", periodSeconds: 3600, channels: [...Object.keys(presets), "ntfy"] } }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const key = put.body.services[0].check.pingKey;

    // What `healthd run` sends with the exit code: its output's last 10,000 bytes, more than a DOWN carries.
    const output = Array.from({ length: 300 }, (_, i) => `step ${i}: copying table ${i}`).join("\n") + "\npg_dump: error: connection to server failed\n";
    const requests = until(async () => stand.received.length, (n) => n >= 9, "a request to each HTTP channel");
    const mailed = nextEvent<[Mail]>(smtp.events, "mail");
    const published = nextEvent<[StoredMessage]>(ntfy.events, "message");
    assert.equal((await d.api("POST", `/ping/${key}/3`, output, { "content-type": "text/plain" })).status, 200);
    await requests;
    const [mail] = await mailed;
    const [message] = await published;

    const texts: [string, string][] = [
      ...stand.received.map((r): [string, string] => { const type = r.path.split("/")[1]!.split("?")[0]!; return [type, textOf[type]!(r)]; }),
      ["email", mimePart(mail.raw, "text/plain").replace(/\r\n/g, "\n").trimEnd()],
      ["ntfy", message.message],
    ];
    assert.deepEqual(texts.map(([type]) => type).sort(), [...Object.keys(textOf), "email", "ntfy"].sort());
    for (const [type, text] of texts) {
      assert.match(text, /^exit: the job exited with code 3$/m, type);
      assert.match(text, /\nLast lines of its output:\n(step \d+: copying table \d+\n)+pg_dump: error: connection to server failed$/, type);
      const quoted = text.slice(text.indexOf("Last lines of its output:\n") + 26);
      assert.ok(quoted.length <= 1000 && quoted.length > 950, `${type}: ${quoted.length} characters, whole lines`);
    }
    const webhook = stand.received.find((r) => r.path === "/webhook")!;
    assert.equal(webhook.json.output, texts.find(([type]) => type === "webhook")![1].split("Last lines of its output:\n")[1], "the webhook's event has the output as a field");

    // A success closes the incident: its RECOVERED email answers the DOWN's.
    const recoveredMail = nextEvent<[Mail]>(smtp.events, "mail");
    assert.equal((await d.api("POST", `/ping/${key}`)).status, 200);
    const [recovered] = await recoveredMail;
    const down = mail.header("message-id")!;
    assert.match(down, /^<incident-\d+\.[0-9a-f]{10}\.down@example\.org>$/);
    assert.match(mail.header("subject")!, /^DOWN: db1\/backup$/);
    assert.equal(mail.header("in-reply-to"), undefined);
    assert.match(recovered.header("subject")!, /^RECOVERED: db1\/backup$/);
    assert.equal(recovered.header("message-id"), down.replace(".down@", ".recovered@"));
    assert.equal(recovered.header("in-reply-to"), down);
    assert.equal(recovered.header("references"), down);
  });

  test(`${engine}: a DOWN names the services that depend on it, which are held; their state says which service holds them`, async (t) => {
    const target = await switchableTarget(t);
    target.setUp(true);
    const ntfy = await ntfyStandIn(t);
    const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 1000 } });
    const check = (more: object = {}) => ({ url: target.url, intervalSeconds: 1, ...more });
    assert.equal((await d.api("PUT", "/services/db1", { services: [{ id: "postgres", check: check({ notifyThreshold: 0 }) }] })).status, 201);
    // Dependents count three failures before an incident: the database's opens first, and holds them.
    const dependent = (id: string, dependsOn: string[]) => ({ id, check: check({ notifyThreshold: 2, dependsOn }) });
    const shop = await d.api("PUT", "/services/shop", {
      services: [dependent("checkout", ["db1/postgres"]), dependent("cart", ["db1/postgres"]), dependent("front", ["checkout"]), dependent("about", [])],
    });
    assert.equal(shop.status, 201, JSON.stringify(shop.body));
    const down = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN: db1/postgres");
    target.setUp(false);
    const [message] = await down;
    assert.equal(message.message.split("\n")[1], "3 services that depend on db1/postgres are held: shop/cart, shop/checkout, shop/front");
    const held = await until(
      async () => (await d.api("GET", "/services/shop")).body.services as { id: string; state: { status: string; blockedBy?: string[] } }[],
      (services) => services.filter((s) => s.state.status === "blocked").length === 3,
      "the dependents to be blocked",
    );
    for (const s of held.filter((s) => s.id !== "about")) assert.deepEqual([s.id, s.state.status, s.state.blockedBy], [s.id, "blocked", ["db1/postgres"]]);
    assert.deepEqual(ntfy.messages("ops").filter((m) => /^DOWN: shop\/(checkout|cart|front)$/.test(m.title ?? "")), [], "held: no DOWN of their own");
  });
}

/** What the ntfy stand-in was sent, by title: DOWN and RECOVERED of the server's services, grouped or not. */
const said = (ntfy: NtfyStandIn) => ntfy.messages("ops").map((m) => m.title ?? "").filter((title) => /^(DOWN|RECOVERED): /.test(title));

for (const engine of engines) {
  test(`${engine}: ten services of a server failing together send one grouped DOWN naming them all, and one grouped RECOVERED when all pass${engine === "postgres" ? ", with two nodes deciding" : ""}`, async (t) => {
    const target = await switchableTarget(t);
    target.setUp(true);
    const ntfy = await ntfyStandIn(t);
    const options = { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 1000 } } as const;
    const d = await testDaemon(t, { ...options, node: "n1" });
    // On PostgreSQL a second node shares the database: the services' checks, and the deciding, spread over both.
    if (engine === "postgres") await testDaemon(t, { ...options, db: d.db, node: "n2" });
    const bad = await d.api("PUT", "/services/web", { groupThreshold: 1001, services: [] });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors, [{ path: "/groupThreshold", message: "must be an integer from 0 to 1000 (for example 5)" }]);
    // A webhook and PagerDuty beside ntfy, for the storm's fields and its one alert.
    const stand = await receiver(t);
    stand.answer(() => ({ status: 202, body: '{"status":"success"}' }));
    assert.equal((await d.api("PUT", "/channels/hook", { type: "webhook", url: `${stand.url}/hook` })).status, 201);
    assert.equal((await d.api("PUT", "/channels/pd", { type: "pagerduty", url: `${stand.url}/pd`, routingKey: "R" })).status, 201);
    const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
    const put = await d.api("PUT", "/services/web", {
      channels: ["ntfy", "hook", "pd"], services: ids.map((id) => ({ id, check: { url: `${target.url}?${id}`, intervalSeconds: 1 } })),
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.equal(put.body.groupThreshold, 5, "the default");
    const open = async () => (await d.api("GET", "/incidents?server=web&open=true&limit=100")).body.incidents as unknown[];

    const down = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title?.startsWith("DOWN: ") ?? false);
    target.setUp(false);
    const [grouped] = await down;
    assert.equal(grouped.title, "DOWN: 10 services of web");
    assert.deepEqual(grouped.message.split("\n").slice(1, 11), ids.map((id) => `web/${id}`));
    // Each has its incident, and none sends its own DOWN.
    await until(open, (incidents) => incidents.length === 10, "ten open incidents");
    const recovered = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title?.startsWith("RECOVERED: ") ?? false);
    target.setUp(true);
    assert.equal((await recovered)[0].title, "RECOVERED: 10 services of web");
    await until(open, (incidents) => incidents.length === 0, "every incident closed");
    await until(async () => (await d.api("GET", "/services/web")).body.services.every((s: { state: { status: string } }) => s.state.status === "up"), Boolean, "all up");
    assert.deepEqual(said(ntfy), ["DOWN: 10 services of web", "RECOVERED: 10 services of web"]);
    const sent = await until(async () => stand.received, (r) => r.length >= 4, "the webhook's and PagerDuty's two each");
    const hook = sent.filter((r) => r.path === "/hook").map((r) => r.json);
    assert.deepEqual(hook.map((e) => [e.event, e.service, e.incidentId, e.services]), [["down", "*", null, ids.map((id) => `web/${id}`)], ["recovered", "*", null, ids.map((id) => `web/${id}`)]]);
    assert.equal(hook[0].group, hook[1].group);
    const pd = sent.filter((r) => r.path === "/pd").map((r) => [r.json.event_action, r.json.dedup_key]);
    assert.deepEqual(pd, [["trigger", `healthd-group-${hook[0].group}`], ["resolve", `healthd-group-${hook[0].group}`]], "the RECOVERED resolves the alert the DOWN opened");
    assert.equal(sent.length, 4);
  });
}
