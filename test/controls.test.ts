/**
 * The alerting controls end to end: the daemon with real targets and the ntfy stand-in, on both engines.
 * "Nothing was published" is asserted once the outbox is drained and the service has been checked again.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn, type NtfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { selfSigned } from "./support/certs.ts";
import { httpsTarget, switchableTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

const titles = (ntfy: NtfyStandIn) => ntfy.messages("ops").map((m) => m.title);
const nextMessage = (ntfy: NtfyStandIn, title: string) => nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === title);
const doneFor = (d: TestDaemon, serviceId: string, accept: (r: CheckDone) => boolean = () => true) =>
  nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === serviceId && accept(r)).then(([r]) => r);

/** Wait for `count` more checks of a service. */
async function checks(d: TestDaemon, serviceId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await doneFor(d, serviceId);
}

/** The outbox has nothing left to send (every notification delivered, failed or unsent). */
async function drained(d: TestDaemon): Promise<void> {
  while ((await d.store.notificationCounts()).pending > 0) await nextEvent(d.events, "notify:sent");
}

async function setup(t: TestContext, engine: (typeof engines)[number]) {
  const ntfy = await ntfyStandIn(t);
  const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 500 }, notifyRetryBaseMs: 20 });
  return { ntfy, d };
}

for (const engine of engines) {
  test(`${engine}: paused: the check does not run, its status is paused, nothing is published; unpaused it runs`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const paused = await switchableTarget(t);
    const other = await switchableTarget(t);
    other.setUp(true);
    const services = (pause: boolean) => [
      { id: "home", check: { url: paused.url, intervalSeconds: 1, notifyThreshold: 0, paused: pause } },
      { id: "other", check: { url: other.url, intervalSeconds: 1 } },
    ];
    assert.equal((await d.api("PUT", "/services/web-01", { services: services(true) })).status, 201);
    await checks(d, "other", 3);
    assert.equal(paused.hits(), 0, "a paused check is never run");
    const server = (await d.api("GET", "/services/web-01")).body;
    assert.equal(server.services[0].state.status, "paused");
    assert.deepEqual((await d.api("GET", "/services")).body.servers[0], { id: "web-01", name: "web-01", serviceCount: 2, up: 1, down: 0, unknown: 0, paused: 1, blocked: 0, late: 0, degraded: 0 });

    const down = nextMessage(ntfy, "DOWN: web-01/home");
    assert.equal((await d.api("PUT", "/services/web-01", { services: services(false) })).status, 200);
    await down;
    assert.equal((await d.api("GET", "/services/web-01/home")).body.state.status, "down");
    // Paused again with its incident open: not checked, nothing more published.
    assert.equal((await d.api("PUT", "/services/web-01", { services: services(true) })).status, 200);
    const hits = paused.hits();
    await checks(d, "other", 3);
    await drained(d);
    assert.equal(paused.hits(), hits);
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/home"]);
  });

  test(`${engine}: recoverThreshold 2: RECOVERED only after two passes in a row`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const target = await switchableTarget(t);
    const down = nextMessage(ntfy, "DOWN: web-01/home");
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0, recoverThreshold: 2 } }] });
    await down;
    target.setUp(true);
    const first = await doneFor(d, "home", (r) => r.entry.ok);
    assert.deepEqual([first.notices, first.incident, first.state.status], [[], null, "up"], "one pass is not enough");
    assert.equal((await d.api("GET", "/incidents?open=true")).body.incidents.length, 1);
    const second = await doneFor(d, "home");
    assert.deepEqual(second.notices, ["recovered"]);
    assert.equal(second.incident?.closed, true);
    await nextMessage(ntfy, "RECOVERED: web-01/home");
    const [incident] = (await d.api("GET", "/incidents")).body.incidents;
    assert.equal(incident.notified, true);
    assert.ok(incident.closedAt !== null && incident.durationMs > 0);
  });

  test(`${engine}: a silence over a fail-and-recover publishes nothing; the incident is on record; stats leave it out of uptime`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const target = await switchableTarget(t);
    target.setUp(true);
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0 } }] });
    await doneFor(d, "home");
    const created = await d.api("POST", "/silences", { server: "web-01", durationSeconds: 3600, reason: "backups" });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get("location"), `/silences/${created.body.id}`);
    assert.deepEqual([created.body.server, created.body.service, created.body.reason], ["web-01", null, "backups"]);
    assert.equal(Date.parse(created.body.endsAt) - Date.parse(created.body.startsAt), 3_600_000);
    assert.deepEqual((await d.api("GET", "/silences")).body.silences, [created.body]);

    target.setUp(false);
    const opened = await doneFor(d, "home", (r) => r.incident?.opened === true);
    assert.equal(opened.silenced, true);
    await doneFor(d, "home", (r) => !r.entry.ok);
    target.setUp(true);
    const closed = await doneFor(d, "home", (r) => r.incident?.closed === true);
    assert.deepEqual(closed.notices, []);
    assert.equal((await d.api("DELETE", `/silences/${created.body.id}`)).status, 204);
    assert.equal((await d.api("DELETE", `/silences/${created.body.id}`)).status, 404, "it is over");
    assert.deepEqual((await d.api("GET", "/silences")).body.silences, []);
    await checks(d, "home", 2);
    await drained(d);
    assert.deepEqual(titles(ntfy), [], "nothing was published");

    const { incidents, next } = (await d.api("GET", "/incidents?server=web-01&service=home")).body;
    assert.equal(next, null);
    assert.equal(incidents.length, 1);
    assert.deepEqual([incidents[0].server, incidents[0].service, incidents[0].notified], ["web-01", "home", false]);
    assert.ok(incidents[0].failures >= 2, `failures ${incidents[0].failures}`);
    assert.match(incidents[0].firstError, /status 500/);
    assert.deepEqual((await d.api("GET", "/services/web-01/home/incidents")).body.incidents, incidents);

    const stats = (await d.api("GET", "/services/web-01/home/stats")).body;
    assert.ok(stats.silencedChecks >= 3, `silencedChecks ${stats.silencedChecks}`);
    assert.ok(stats.failures >= 2 && stats.checks > stats.silencedChecks);
    assert.equal(stats.uptime, 1, "the failures were all silenced");
  });

  test(`${engine}: a silence ended early with the service still down publishes one DOWN then`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const target = await switchableTarget(t);
    target.setUp(true);
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0 } }] });
    await doneFor(d, "home");
    const silence = (await d.api("POST", "/silences", { server: "web-01", service: "home", durationSeconds: 3600 })).body;
    target.setUp(false);
    await doneFor(d, "home", (r) => r.incident?.opened === true);
    await checks(d, "home", 1);
    await drained(d);
    assert.deepEqual(titles(ntfy), []);
    assert.equal((await d.api("GET", "/incidents?open=true")).body.incidents[0].notified, false);

    const down = nextMessage(ntfy, "DOWN: web-01/home");
    assert.equal((await d.api("DELETE", `/silences/${silence.id}`)).status, 204);
    await down;
    await checks(d, "home", 2);
    await drained(d);
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/home"], "once");
    assert.equal((await d.api("GET", "/incidents?open=true")).body.incidents[0].notified, true);
  });

  test(`${engine}: a dependency chain of three: the root publishes, the others are blocked by it; counting starts when it recovers`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const dbTarget = await switchableTarget(t);
    const appTarget = await switchableTarget(t);
    const down = nextMessage(ntfy, "DOWN: web-01/db");
    // Thresholds rising down the chain, as one would set them: each dependency's incident opens before its
    // dependents' could (checks of the same second may be stored in either order).
    await d.api("PUT", "/services/web-01", {
      services: [
        { id: "web", check: { url: appTarget.url, intervalSeconds: 1, notifyThreshold: 4, dependsOn: ["app"] } },
        { id: "app", check: { url: appTarget.url, intervalSeconds: 1, notifyThreshold: 2, dependsOn: ["web-01/db"] } },
        { id: "db", check: { url: dbTarget.url, intervalSeconds: 1, notifyThreshold: 0 } },
      ],
    });
    await down;
    await checks(d, "web", 4);
    const blocked = (await d.api("GET", "/services/web-01")).body.services;
    assert.deepEqual(
      blocked.map((s: { id: string; state: { status: string; blockedBy?: string[] } }) => [s.id, s.state.status, s.state.blockedBy]),
      [["web", "blocked", ["web-01/db"]], ["app", "blocked", ["web-01/db"]], ["db", "down", undefined]],
    );
    const page = (await d.api("GET", "/status.json")).body.servers[0].services;
    assert.deepEqual(page.map((s: { id: string; status: string }) => [s.id, s.status]), [["db", "down"], ["web", "blocked"], ["app", "blocked"]]);
    // The server list counts them as their states show them: blocked apart from down.
    assert.deepEqual((await d.api("GET", "/services")).body.servers[0], { id: "web-01", name: "web-01", serviceCount: 3, up: 0, down: 1, unknown: 0, paused: 0, blocked: 2, late: 0, degraded: 0 });
    await drained(d);
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/db"]);

    // db recovers, app and web still fail: app counts from then and opens its own incident; web is blocked by app.
    const appDown = nextMessage(ntfy, "DOWN: web-01/app");
    dbTarget.setUp(true);
    await appDown;
    await checks(d, "web", 4);
    const after = (await d.api("GET", "/services/web-01/web")).body.state;
    assert.deepEqual([after.status, after.blockedBy], ["blocked", ["web-01/app"]]);
    await drained(d);
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/db", "RECOVERED: web-01/db", "DOWN: web-01/app"]);
  });

  test(`${engine}: dependsOn: unknown reference and cycle are 400 naming them; leaving one dangling is 409 naming the dependents`, async (t) => {
    const { d } = await setup(t, engine);
    const check = (more: object = {}) => ({ url: "http://127.0.0.1:9/", intervalSeconds: 3600, ...more });
    const web01 = { services: [{ id: "db", check: check() }, { id: "app", check: check({ dependsOn: ["db"] }) }] };
    assert.equal((await d.api("PUT", "/services/web-01", web01)).status, 201);
    assert.equal((await d.api("PUT", "/services/web-02", { services: [{ id: "api", check: check({ dependsOn: ["web-01/app"] }) }] })).status, 201);
    const before = (await d.api("GET", "/services/web-01")).body;

    const unknown = await d.api("PUT", "/services/web-01", { services: [{ id: "db", check: check() }, { id: "app", check: check({ dependsOn: ["db", "cache"] }) }] });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.body.errors, [{ path: "/services/1/check/dependsOn/1", message: "names cache, which does not exist; create it, or remove it from dependsOn" }]);

    const cycle = await d.api("PUT", "/services/web-01/db", { check: check({ dependsOn: ["web-02/api"] }) });
    assert.equal(cycle.status, 400);
    assert.match(cycle.body.detail, /cycle: web-01\/db -> web-02\/api -> web-01\/app -> web-01\/db/);

    const dangling = await d.api("DELETE", "/services/web-01/app");
    assert.equal(dangling.status, 409);
    assert.match(dangling.body.detail, /web-02\/api depends on web-01\/app: remove it from their dependsOn first/);
    assert.equal((await d.api("DELETE", "/services/web-01")).status, 409);
    assert.equal((await d.api("PUT", "/services/web-01", { services: [{ id: "db", check: check() }] })).status, 409);
    assert.deepEqual((await d.api("GET", "/services/web-01")).body, before, "nothing changed");

    // Remove the dependent first, and then the delete goes through.
    assert.equal((await d.api("DELETE", "/services/web-02")).status, 204);
    assert.equal((await d.api("DELETE", "/services/web-01/app")).status, 204);
  });

  test(`${engine}: silences: 404 for an unknown server or service, 400 naming the field for bad bodies`, async (t) => {
    const { d } = await setup(t, engine);
    await d.api("PUT", "/services/web-01", { services: [{ id: "db", check: { url: "http://127.0.0.1:9/", intervalSeconds: 3600 } }] });
    assert.equal((await d.api("POST", "/silences", { server: "nope", durationSeconds: 60 })).status, 404);
    const noService = await d.api("POST", "/silences", { server: "web-01", service: "nope", durationSeconds: 60 });
    assert.equal(noService.status, 404);
    assert.match(noService.body.detail, /no service "nope"/);
    const both = await d.api("POST", "/silences", { server: "web-01", durationSeconds: 60, until: "2099-01-01T00:00:00Z" });
    assert.deepEqual(both.body.errors, [{ path: "/durationSeconds", message: "give either durationSeconds (for example 3600) or until, not both or neither" }]);
    const past = await d.api("POST", "/silences", { server: "web-01", until: "2020-01-01T00:00:00Z" });
    assert.deepEqual(past.body.errors, [{ path: "/until", message: "must be later than now and than startsAt" }]);
    const zero = await d.api("POST", "/silences", { server: "web-01", durationSeconds: 0 });
    assert.equal(zero.body.errors[0].path, "/durationSeconds");
    assert.equal((await d.api("POST", "/silences", { server: "web-01", durationSeconds: 60, extra: 1 })).status, 400);
    assert.equal((await d.api("DELETE", "/silences/abc")).status, 404);
    assert.deepEqual((await d.api("GET", "/silences")).body.silences, [], "nothing was added");
    // A future silence is listed, and ending it removes it.
    const future = await d.api("POST", "/silences", { server: "web-01", startsAt: "2099-01-01T00:00:00Z", until: "2099-01-02T00:00:00Z" });
    assert.equal(future.status, 201);
    assert.equal((await d.api("GET", "/silences")).body.silences.length, 1);
    assert.equal((await d.api("DELETE", `/silences/${future.body.id}`)).status, 204);
    assert.deepEqual((await d.api("GET", "/silences")).body.silences, []);
    assert.equal((await d.api("GET", "/incidents?limit=0")).status, 400);
    assert.equal((await d.api("GET", "/incidents?before=xyz")).status, 400);
    assert.equal((await d.api("GET", "/services/web-01/nope/incidents")).status, 404);
  });

  test(`${engine}: CERT: one warning when the certificate has fewer than certWarnDays left, without failing the check`, async (t) => {
    const { ntfy, d } = await setup(t, engine);
    const target = await httpsTarget(t, selfSigned(tempDir(t), 30));
    const warned = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title?.startsWith("CERT: web-01/tls") === true);
    const check = { url: `${target.url}/ok`, intervalSeconds: 1, verifyTls: false, certWarnDays: 45 };
    await d.api("PUT", "/services/web-01", { services: [{ id: "tls", check }] });
    const [message] = await warned;
    // 30 days less the moments between making the certificate and checking it.
    assert.match(message.title!, /^CERT: web-01\/tls expires in (29d 23h|30d 0h)$/);
    assert.equal(message.priority, 3);
    assert.deepEqual(message.tags, ["healthd", "certificate"]);
    assert.match(message.message, /^The TLS certificate expires at \S+Z, fewer than 45 days from now \(certWarnDays\)\.\nURL: https:/);
    const passed = await doneFor(d, "tls");
    assert.equal(passed.entry.ok, true, "a CERT warning does not fail the check");
    await checks(d, "tls", 2);
    await drained(d);
    assert.equal(ntfy.messages("ops").length, 1, "once per certificate");
  });

  test(`${engine}: a DOWN kept unsent is sent once its service is given a notifyTopic, while its incident is open`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, timeoutMs: 500 }, notifyRetryBaseMs: 20 });
    const target = await switchableTarget(t);
    const check = { url: target.url, intervalSeconds: 1, notifyThreshold: 0 };
    const unsent = nextEvent(d.events, "notify:failed", (row: { kind: string }) => row.kind === "down");
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", check }] });
    await unsent;
    assert.equal((await d.store.notificationCounts()).unsent, 1);
    const sent = nextMessage(ntfy, "DOWN: web-01/home");
    assert.equal((await d.api("PUT", "/services/web-01/home", { check: { ...check, notifyTopic: "oncall" } })).status, 200);
    const [message] = await sent;
    assert.equal(message.topic, "oncall");
    await checks(d, "home", 2);
    await drained(d);
    assert.deepEqual(await d.store.notificationCounts(), { pending: 0, delivered: 1, failed: 0, unsent: 0 });
  });
}
