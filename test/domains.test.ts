/**
 * Domain expiry: the registered domain of each kind of check, IANA's bootstrap file, RDAP answers, and through
 * the daemon on both engines an RDAP stand-in on 127.0.0.1 that says a registration runs out: one DOMAIN
 * warning, the lookup kept across a restart, a registry without RDAP said once in the log and never a failure.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { expiryOf, rdapUrl, readBootstrap, shippedBootstrap, type Bootstrap } from "../src/runtime/domain-expiry/rdap.ts";
import { registeredDomain } from "../src/domain/model.ts";
import type { CheckDone } from "../src/daemon.ts";
import { createLogger } from "../src/platform/log.ts";
import { checkInput } from "../src/domain/schema/index.ts";
import type { Notification } from "../src/store/store.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { dnsServer } from "./support/dns-server.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn } from "./support/ntfy.ts";
import { tempDir } from "./support/temp.ts";

const day = 86_400_000;

test("the registered domain of each kind of check; none for an address or a heartbeat", () => {
  const domain = (check: unknown) => registeredDomain(checkInput.parse(check));
  assert.equal(domain({ url: "https://www.shop.example.co.uk/health" }), "example.co.uk");
  assert.equal(domain({ type: "tcp", host: "Mail.Example.ORG", port: 25 }), "example.org");
  assert.equal(domain({ type: "dns", name: "www.example.test." }), "example.test");
  assert.equal(domain({ type: "tcp", host: "192.0.2.10", port: 22 }), null);
  assert.equal(domain({ url: "http://[2001:db8::1]:8080/" }), null);
  assert.equal(domain({ url: "http://localhost:3000/" }), null);
  assert.equal(domain({ type: "heartbeat", periodSeconds: 60 }), null);
});

test("the bootstrap file: IANA's ships with healthd; the longest known suffix answers; a bad file is named", () => {
  assert.equal(rdapUrl(shippedBootstrap, "example.com"), "https://rdap.verisign.com/com/v1/domain/example.com");
  const own = readBootstrap({ services: [[["uk"], ["http://rdap.uk.test/", "https://rdap.uk.test/"]], [["co.uk"], ["https://co.rdap.test"]]] });
  assert.ok(own.ok);
  assert.equal(rdapUrl(own.bootstrap, "example.co.uk"), "https://co.rdap.test/domain/example.co.uk", "the longer suffix, https first, a / added");
  assert.equal(rdapUrl(own.bootstrap, "example.org"), null, "a registry the file does not name has no RDAP");
  const bad = readBootstrap({ services: [[["com"], ["not a url"]]] });
  assert.deepEqual(bad.ok ? null : bad.problem.split(" ")[0], "/services/0/1/0");
  assert.equal(readBootstrap({ version: "1.0" }).ok, false);
});

test("an RDAP answer's expiration event, or what is wrong with it", () => {
  const events = (...e: { eventAction: string; eventDate: string }[]) => ({ objectClassName: "domain", ldhName: "example.test", events: e });
  assert.deepEqual(expiryOf(events({ eventAction: "registration", eventDate: "2001-01-01T00:00:00Z" }, { eventAction: "expiration", eventDate: "2027-03-01T12:00:00Z" })), {
    ok: true,
    expiresAt: Date.parse("2027-03-01T12:00:00Z"),
  });
  assert.deepEqual(expiryOf(events({ eventAction: "registration", eventDate: "2001-01-01T00:00:00Z" })), { ok: false, problem: "the answer has no expiration event" });
  assert.match((expiryOf(events({ eventAction: "expiration", eventDate: "soon" })) as { problem: string }).problem, /"soon" is not a date/);
  assert.equal(expiryOf({ events: "none" }).ok, false);
  assert.equal(expiryOf(null).ok, false);
});

/** An RDAP server for the .test registry: example.test expires in `days`; other names are not known (404). */
async function rdapStandIn(t: TestContext, days: number) {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url!);
    if (req.url !== "/domain/example.test") return res.writeHead(404, { "content-type": "application/rdap+json" }).end('{"errorCode":404}');
    res.writeHead(200, { "content-type": "application/rdap+json" });
    res.end(JSON.stringify({ objectClassName: "domain", ldhName: "EXAMPLE.TEST", events: [{ eventAction: "expiration", eventDate: new Date(Date.now() + days * day).toISOString() }] }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  const file = join(tempDir(t), "dns.json");
  writeFileSync(file, JSON.stringify({ description: "test", services: [[["test"], [url]]], version: "1.0" }));
  const read = readBootstrap({ services: [[["test"], [url]]] });
  assert.ok(read.ok);
  return { asked, file, bootstrap: read.bootstrap as Bootstrap };
}

for (const engine of engines) {
  test(`${engine}: a registration running out warns once (DOMAIN); the lookup is kept across a restart; no RDAP is said once, never a failure`, async (t) => {
    const rdap = await rdapStandIn(t, 10);
    const zone = await dnsServer(t, { "www.example.test": { answers: [{ type: "A", name: "www.example.test", data: "192.0.2.10" }] } });
    const ntfy = await ntfyStandIn(t);
    const db = await testDatabase(t, engine);
    const lines: string[] = [];
    const log = createLogger({ level: "warn", write: (line) => lines.push(line) });
    const options = { db, log, rdapBootstrap: rdap.bootstrap, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 500 } };
    const d = await testDaemon(t, options);
    const warned = nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.kind === "domain");
    const services = [
      { id: "www", check: { type: "dns", name: "www.example.test", server: zone.address, intervalSeconds: 1, domainWarnDays: 30 } },
      { id: "intranet", check: { type: "dns", name: "www.example.test", server: zone.address, intervalSeconds: 1, domainWarnDays: 30, notify: false } },
      { id: "db", check: { type: "tcp", host: "db.internal", port: 5432, intervalSeconds: 60, domainWarnDays: 30, timeoutMs: 500 } },
    ];
    assert.equal((await d.api("PUT", "/services/web", { services })).status, 201);
    await warned;
    // Two more checks of each after the warning: it is not repeated.
    for (let i = 0; i < 2; i++) await nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "www");
    await d.domains.settled();
    const domainMessages = ntfy.messages("ops").filter((m) => m.title?.startsWith("DOMAIN: "));
    assert.equal(domainMessages.length, 1, JSON.stringify(ntfy.messages("ops").map((m) => m.title)));
    assert.match(domainMessages[0]!.title!, /^DOMAIN: example\.test expires in (9d 23h|10d 0h) \(web\/www\)$/);
    assert.match(domainMessages[0]!.message, /^The registration of example\.test expires at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, fewer than 30 days from now \(domainWarnDays\); renew it with its registrar\.\nTarget: www\.example\.test A @127\.0\.0\.1:\d+\n/);
    assert.deepEqual(rdap.asked, ["/domain/example.test"], "one lookup for the two services of the domain; none for .internal, which has no RDAP");
    const noRdap = lines.filter((line) => line.includes("cannot tell when a domain's registration expires"));
    assert.equal(noRdap.length, 1, lines.join("\n"));
    assert.match(noRdap[0]!, /domain=db\.internal problem="its registry has no RDAP service in the bootstrap file \(--rdap-bootstrap\)"/);
    assert.notEqual((await d.api("GET", "/services/web/db")).body.state.lastEntry?.errorKind, "internal", "the check itself is not failed by it");
    await d.stop();

    // Restarted within the day: nothing is asked again.
    const again = await testDaemon(t, options);
    await nextEvent<[CheckDone]>(again.events, "check:done", (r) => r.service.serviceId === "www");
    await again.domains.settled();
    assert.deepEqual(rdap.asked, ["/domain/example.test"]);
  });
}

test("--rdap-bootstrap that cannot be read, or is not IANA's format, is exit 2 naming the file and the fix", async (t) => {
  const dir = tempDir(t);
  const missing = await runHealthd(["serve", "--db", join(dir, "x.db"), "--port", "0", "--rdap-bootstrap", join(dir, "nope.json")]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read --rdap-bootstrap .*nope\.json: ENOENT; give IANA's dns\.json \(https:\/\/data\.iana\.org\/rdap\/dns\.json\)/);
  const wrong = join(dir, "wrong.json");
  writeFileSync(wrong, JSON.stringify({ services: [["com", "https://rdap.example/"]] }));
  const bad = await runHealthd(["serve", "--db", join(dir, "x.db"), "--port", "0", "--rdap-bootstrap", wrong]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--rdap-bootstrap .*wrong\.json: \/services\/0\/0 .*; give IANA's dns\.json/);
});
