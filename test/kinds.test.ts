/**
 * TCP and DNS checks: each controller against real servers on 127.0.0.1 (a banner, a send/expect exchange,
 * TLS with a certificate made here, a DNS server over UDP and TCP answering from a table), then through the
 * daemon on both engines: stored, answered, notified and exported like http checks.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { createServer as createTlsServer } from "node:tls";
import { runDnsCheck, type DnsRequest } from "../src/checks/dns.ts";
import { runTcpCheck, type TcpRequest } from "../src/checks/tcp.ts";
import type { CheckDone } from "../src/daemon.ts";
import type { Notification } from "../src/store/store.ts";
import { selfSigned } from "./support/certs.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { dnsServer } from "./support/dns-server.ts";
import { nextEvent } from "./support/events.ts";
import { runHealthd } from "./support/cli.ts";
import { ntfyStandIn } from "./support/ntfy.ts";
import { refusedUrl } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

/** A TCP server on 127.0.0.1 that greets with `banner` (if any) and answers each line with `reply(line)`. */
async function tcpServer(t: TestContext, banner: string | null, reply: (line: string) => string | null = () => null): Promise<{ port: number; server: Server }> {
  const server = createServer((socket) => {
    if (banner !== null) socket.write(banner);
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString();
      for (let end = text.indexOf("\r\n"); end >= 0; end = text.indexOf("\r\n")) {
        const answer = reply(text.slice(0, end));
        text = text.slice(end + 2);
        if (answer !== null) socket.write(answer);
      }
    });
    socket.on("error", () => {});
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  return { port: (server.address() as { port: number }).port, server };
}

const tcp = (port: number, more: Partial<TcpRequest> = {}): TcpRequest => ({
  host: "127.0.0.1", port, tls: false, verifyTls: true, send: null, expect: [], timeoutMs: 2000, ...more,
});
const dns = (server: string, name: string, more: Partial<DnsRequest> = {}): DnsRequest => ({
  name, recordType: "A", server, expect: [{ rcode: "NOERROR", minAnswers: 1 }], timeoutMs: 2000, ...more,
});

test("tcp: a connection is enough without expectations; a banner is read and judged; a refused port is connect", async (t) => {
  const { port } = await tcpServer(t, "SSH-2.0-OpenSSH_9.6 test\r\n");
  const connected = await runTcpCheck(tcp(port));
  assert.deepEqual([connected.ok, connected.status, connected.errorKind], [true, null, null]);
  assert.ok(connected.latencyMs >= 0);

  const banner = await runTcpCheck(tcp(port, { expect: [{ banner: { matches: "^SMTP" } }, { banner: { contains: "SSH-2.0" }, maxLatencyMs: 1000 }] }));
  assert.deepEqual([banner.ok, banner.matched], [true, 1]);

  // A banner that never matches is read until the timeout (the server may send more), then judged.
  const wrong = await runTcpCheck(tcp(port, { timeoutMs: 300, expect: [{ banner: { matches: "^220 " } }] }));
  assert.equal(wrong.ok, false);
  assert.equal(wrong.errorKind, "banner");
  assert.equal(wrong.error, 'banner "SSH-2.0-OpenSSH_9.6 test\\r\\n" was expected to match /^220 /');

  const refused = await runTcpCheck(tcp(Number(new URL(await refusedUrl()).port)));
  assert.equal(refused.errorKind, "connect");
  assert.match(refused.error!, /^connection refused by 127\.0\.0\.1:\d+$/);
});

test("tcp: send writes its text (escapes read as such) and the answer is the banner; silence ends at the timeout as banner", async (t) => {
  const { port } = await tcpServer(t, null, (line) => (line === "PING" ? "+PONG\r\n" : "-ERR unknown\r\n"));
  const pong = await runTcpCheck(tcp(port, { send: "PING\\r\\n", expect: [{ banner: { contains: "+PONG" } }] }));
  assert.deepEqual([pong.ok, pong.error], [true, null]);
  const asJson = await runTcpCheck(tcp(port, { send: "PING\r\n", expect: [{ banner: { contains: "+PONG" } }] }));
  assert.equal(asJson.ok, true, "a real CR LF (as JSON decodes \\r\\n) works the same");

  const quiet = await tcpServer(t, null);
  const started = Date.now();
  const silent = await runTcpCheck(tcp(quiet.port, { timeoutMs: 300, expect: [{ banner: { contains: "220" } }] }));
  assert.equal(silent.errorKind, "banner");
  assert.equal(silent.error, 'no banner within the timeout, expected one to contain "220"');
  assert.ok(Date.now() - started < 2000, "it ended at its timeout");
});

test("tcp: a banner in several reads is read whole, a character split between two of them too", async (t) => {
  // "café" ends in two bytes (C3 A9): the server sends the first with the greeting and the rest once the
  // check has written, so that they come as two reads.
  const greeting = Buffer.from("220 café ready\r\n");
  const split = greeting.indexOf(0xa9);
  const server = createServer((socket) => {
    socket.write(greeting.subarray(0, split));
    socket.once("data", () => socket.write(greeting.subarray(split)));
    socket.on("error", () => {});
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const read = await runTcpCheck(tcp(port, { send: "GO\\r\\n", expect: [{ banner: { contains: "café ready" } }] }));
  assert.deepEqual([read.ok, read.error], [true, null]);
  const wrong = await runTcpCheck(tcp(port, { send: "GO\\r\\n", timeoutMs: 300, expect: [{ banner: { contains: "cafe" } }] }));
  assert.equal(wrong.error, 'banner "220 café ready\\r\\n" was expected to contain "cafe"');
});

test("tcp over TLS: the handshake, the certificate's days and verification", async (t) => {
  const cert = selfSigned(tempDir(t), 30);
  const server = createTlsServer(cert, (socket) => socket.end("hello over tls\n"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;

  const ok = await runTcpCheck(tcp(port, { tls: true, verifyTls: false, expect: [{ certValidDays: 20, banner: { contains: "hello" } }] }));
  assert.deepEqual([ok.ok, ok.error], [true, null]);
  const days = (ok.certExpiresAt! - ok.checkedAt) / 86_400_000;
  assert.ok(days > 29 && days <= 30, `the certificate's expiry is reported (${days} days)`);

  const soon = await runTcpCheck(tcp(port, { tls: true, verifyTls: false, expect: [{ certValidDays: 60 }] }));
  assert.equal(soon.errorKind, "cert");
  assert.match(soon.error!, /^TLS certificate expires in 29 days \(\d{4}-\d{2}-\d{2}\), less than the 60 required$/);

  const verified = await runTcpCheck(tcp(port, { tls: true }));
  assert.equal(verified.errorKind, "tls");
  assert.match(verified.error!, /self-signed certificate/);

  const plain = await tcpServer(t, "not tls\r\n");
  const notTls = await runTcpCheck(tcp(plain.port, { tls: true, verifyTls: false, timeoutMs: 1000 }));
  assert.equal(notTls.ok, false);
  assert.ok(notTls.errorKind === "tls" || notTls.errorKind === "connect", `a server that does not speak TLS fails the handshake (${notTls.errorKind}: ${notTls.error})`);
});

test("dns: answers judged by rcode, includes, equals as a set, matches and minAnswers; the answers are reported", async (t) => {
  const server = await dnsServer(t, {
    "www.example.test": { answers: [{ type: "A", name: "www.example.test", data: "192.0.2.10" }, { type: "A", name: "www.example.test", data: "192.0.2.11" }] },
    "example.test": {
      answers: [
        { type: "MX", name: "example.test", data: { preference: 10, exchange: "mail.example.test" } },
        { type: "TXT", name: "example.test", data: ["v=spf1 ", "-all"] },
      ],
    },
    "broken.example.test": { rcode: "SERVFAIL" },
  });
  const a = await runDnsCheck(dns(server.address, "www.example.test", { expect: [{ answers: { equals: ["192.0.2.11", "192.0.2.10"] }, maxLatencyMs: 1000 }] }));
  assert.deepEqual([a.ok, a.answers, a.status, a.errorKind], [true, ["192.0.2.10", "192.0.2.11"], null, null]);

  const includes = await runDnsCheck(dns(server.address, "www.example.test", { expect: [{ answers: { includes: "192.0.2.99" } }, { answers: { matches: "^192\\.0\\.2\\." }, minAnswers: 2 }] }));
  assert.deepEqual([includes.ok, includes.matched], [true, 1]);

  const missing = await runDnsCheck(dns(server.address, "www.example.test", { expect: [{ answers: { includes: "192.0.2.99" } }] }));
  assert.equal(missing.errorKind, "answer");
  assert.equal(missing.error, 'answers "192.0.2.10", "192.0.2.11"; expected one to be "192.0.2.99"');

  const mx = await runDnsCheck(dns(server.address, "example.test", { recordType: "MX", expect: [{ answers: { includes: "10 MAIL.example.test." } }] }));
  assert.deepEqual([mx.ok, mx.answers], [true, ["10 mail.example.test"]], "names compare without case and the root's dot");
  const txt = await runDnsCheck(dns(server.address, "example.test", { recordType: "TXT", expect: [{ answers: { includes: "v=spf1 -all" } }] }));
  assert.deepEqual([txt.ok, txt.answers], [true, ["v=spf1 -all"]]);

  const nx = await runDnsCheck(dns(server.address, "gone.example.test"));
  assert.equal(nx.errorKind, "answer");
  assert.equal(nx.error, "answer code NXDOMAIN, expected NOERROR");
  const expectedGone = await runDnsCheck(dns(server.address, "gone.example.test", { expect: [{ rcode: "NXDOMAIN" }] }));
  assert.equal(expectedGone.ok, true, "an NXDOMAIN can be what is expected");
  const servfail = await runDnsCheck(dns(server.address, "broken.example.test"));
  assert.equal(servfail.error, "answer code SERVFAIL, expected NOERROR");
});

test("dns: a truncated answer is asked again over TCP; silence and garbage end at the timeout, classified", async (t) => {
  const many = Array.from({ length: 40 }, (_, i) => ({ type: "A" as const, name: "big.example.test", data: `198.51.100.${i + 1}` }));
  const server = await dnsServer(t, {
    "big.example.test": { answers: many, truncate: true },
    "quiet.example.test": { silent: true },
    "noise.example.test": { garbage: true },
  });
  const big = await runDnsCheck(dns(server.address, "big.example.test", { expect: [{ minAnswers: 40 }] }));
  assert.deepEqual([big.ok, big.answers!.length], [true, 40]);
  assert.deepEqual(server.asked.filter((q) => q.endsWith("big.example.test")), ["udp A big.example.test", "tcp A big.example.test"]);

  const started = Date.now();
  const quiet = await runDnsCheck(dns(server.address, "quiet.example.test", { timeoutMs: 300 }));
  assert.equal(quiet.errorKind, "timeout");
  assert.equal(quiet.error, `no answer from ${server.address} within 300 ms (timed out asking over UDP)`);
  const noise = await runDnsCheck(dns(server.address, "noise.example.test", { timeoutMs: 300 }));
  assert.equal(noise.errorKind, "timeout");
  assert.match(noise.error!, /\(timed out asking over UDP; a reply could not be read as DNS|a reply answered another question/);
  assert.ok(Date.now() - started < 3000, "both ended at their timeout");
});

test("the API refuses what does not belong to a kind, naming the field and the fix", async (t) => {
  const d = await testDaemon(t);
  await assertChecksRefused(d, [
    [{ type: "tcp", host: "db.internal", port: 5432, url: "http://x/" }, "/services/0/check/url", /is a field of http, websocket, postgres, mysql and redis checks, not of tcp ones/],
    [{ type: "tcp", host: "db.internal", port: 70000 }, "/services/0/check/port", /from 1 to 65535/],
    [{ type: "tcp", host: "db internal", port: 22 }, "/services/0/check/host", /must be a host name/],
    [{ type: "tcp", host: "db.internal", port: 22, certWarnDays: 14 }, "/services/0/check/certWarnDays", /needs tls: true/],
    [{ type: "dns", name: "example.org", recordType: "ANY" }, "/services/0/check/recordType", /must be one of A, AAAA/],
    [{ type: "dns", name: "example.org", server: "127.0.0.1:99999" }, "/services/0/check/server", /host, host:port or \[IPv6\]:port/],
    [{ type: "dns", name: "example.org", expect: [{ rcode: "NOPE" }] }, "/services/0/check/expect/0/rcode", /must be one of NOERROR/],
    [{ type: "dns", name: "example.org", expect: [{}] }, "/services/0/check/expect/0", /needs at least one condition/],
    [{ url: "http://127.0.0.1:9/", notifySlow: true }, "/services/0/check/notifySlow", /needs slowMs/],
    [{ url: "http://127.0.0.1:9/", slowMs: 5000, timeoutMs: 2000 }, "/services/0/check/slowMs", /must be less than timeoutMs \(2000\)/],
    [{ type: "heartbeat", periodSeconds: 60, slowMs: 100 }, "/services/0/check/slowMs", /is a field of http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql and redis checks, not of heartbeat ones/],
  ]);
});

for (const engine of engines) {
  test(`${engine}: tcp and dns services are checked, stored with their answers, notified with their target and exported as written`, async (t) => {
    const { port } = await tcpServer(t, "220 mail.example.test ESMTP\r\n");
    const zone = await dnsServer(t, { "www.example.test": { answers: [{ type: "A", name: "www.example.test", data: "192.0.2.10" }] } });
    const refused = Number(new URL(await refusedUrl()).port);
    const ntfy = await ntfyStandIn(t);
    const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 500 } });
    const published = nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.kind === "down" && n.serviceId === "gone");
    const done = (id: string) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id).then(([r]) => r);
    const smtp = done("smtp");
    const web = done("web-dns");
    const downNotice = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "gone" && r.notices.includes("down"));
    const services = [
      { id: "smtp", check: { type: "tcp", host: "127.0.0.1", port, intervalSeconds: 60, expect: [{ banner: { matches: "^220 " } }] } },
      { id: "web-dns", check: { type: "dns", name: "www.example.test", server: zone.address, intervalSeconds: 60, expect: [{ answers: { includes: "192.0.2.10" } }] } },
      { id: "gone", check: { type: "tcp", host: "127.0.0.1", port: refused, intervalSeconds: 1, notifyThreshold: 1 } },
    ];
    assert.equal((await d.api("PUT", "/services/mail", { services })).status, 201);
    const [s, w] = await Promise.all([smtp, web]);
    assert.deepEqual([s.entry.ok, s.entry.type, s.entry.status, s.entry.answers], [true, "tcp", null, null]);
    assert.deepEqual([w.entry.ok, w.entry.type, w.entry.answers], [true, "dns", ["192.0.2.10"]]);
    await downNotice;

    const entries = await d.api("GET", "/services/mail/web-dns/data");
    assert.deepEqual(entries.body.entries[0].answers, ["192.0.2.10"]);
    assert.equal(entries.body.entries[0].type, "dns");
    const gone = await d.api("GET", "/services/mail/gone");
    assert.equal(gone.body.state.status, "down");
    assert.equal(gone.body.state.lastEntry.errorKind, "connect");

    const [down] = await published;
    const [message] = ntfy.messages("ops").filter((m) => m.title?.startsWith("DOWN: mail/gone"));
    assert.ok(message, `the DOWN reached ntfy (${down.kind})`);
    assert.match(message.message, new RegExp(`^Target: tcp://127\\.0\\.0\\.1:${refused}$`, "m"));
    assert.equal(message.click, undefined, "a tcp target is not a link");

    const metrics = (await d.api("GET", "/metrics")).body as string;
    assert.match(metrics, /^healthd_service_up\{server="mail",service="smtp",type="tcp"\} 1$/m);
    assert.match(metrics, /^healthd_service_up\{server="mail",service="web-dns",type="dns"\} 1$/m);
    assert.match(metrics, /^healthd_checks_total\{type="tcp",result="failed",error_kind="connect"\} \d+$/m);

    const server = await d.api("GET", "/services/mail");
    const written = Object.fromEntries(server.body.services.map((x: { id: string; check: unknown }) => [x.id, x.check]));
    assert.deepEqual(
      { ...written.smtp, notify: undefined, notifyThreshold: undefined },
      {
        type: "tcp", host: "127.0.0.1", port, tls: false, verifyTls: true, send: null, expect: [{ banner: { matches: "^220 " } }], certWarnDays: null,
        intervalSeconds: 60, cron: null, timeoutMs: 10000, notify: undefined, notifyThreshold: undefined, notifyTopic: null, paused: false,
        recoverThreshold: 1, remindEveryMinutes: null, dependsOn: [], channels: null, locations: null, quorum: null, slowMs: null, notifySlow: false, domainWarnDays: null, slaTarget: null,
      },
    );
    assert.equal(written["web-dns"].server, zone.address);
    assert.equal(written["web-dns"].recordType, "A");
    // What is exported goes back in unchanged.
    const again = await d.api("PUT", "/services/mail", { services: server.body.services.map((x: { id: string; check: unknown }) => ({ id: x.id, check: x.check })) });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.services.map((x: { check: unknown }) => x.check), server.body.services.map((x: { check: unknown }) => x.check));
  });
}

for (const engine of engines) {
  test(`${engine}: a check passing slower than slowMs is degraded (amber, up for uptime), says SLOW once and NORMAL when it ends`, async (t) => {
    let delayMs = 400;
    const server = createServer((socket) => {
      setTimeout(() => socket.write("220 ready\r\n"), delayMs);
      socket.on("error", () => {});
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    t.after(() => server.close());
    const port = (server.address() as { port: number }).port;
    const ntfy = await ntfyStandIn(t);
    const d = await testDaemon(t, { engine, ntfy: { url: ntfy.url, topic: "ops", timeoutMs: 500 } });
    const sent = (kind: string) => nextEvent<[Notification]>(d.events, "notify:sent", (n) => n.kind === kind, 20_000);
    const slowSent = sent("slow");
    const check = { type: "tcp", host: "127.0.0.1", port, intervalSeconds: 1, slowMs: 200, notifySlow: true, notifyThreshold: 2, expect: [{ banner: { contains: "220" } }] };
    assert.equal((await d.api("PUT", "/services/mail", { services: [{ id: "smtp", check }] })).status, 201);
    await slowSent;
    const service = await d.api("GET", "/services/mail/smtp");
    assert.equal(service.body.state.status, "degraded");
    assert.equal(service.body.state.lastEntry.ok, true);
    const page = (await d.api("GET", "/status.json")).body;
    assert.match(page.overall.summary, /^All 1 service up, 1 slow$/);
    const stats = (await d.api("GET", "/services/mail/smtp/stats?window=24h")).body;
    assert.ok(stats.degraded >= 2 && stats.uptime === 1, JSON.stringify(stats));
    assert.match((await d.api("GET", "/badges/mail/smtp/status.svg")).body, />degraded</, "the badge says so");

    const normalSent = sent("normal");
    delayMs = 0;
    await normalSent;
    assert.equal((await d.api("GET", "/services/mail/smtp")).body.state.status, "up");
    const titles = ntfy.messages("ops").map((m) => m.title);
    assert.equal(titles.filter((title) => title?.startsWith("SLOW: mail/smtp took ")).length, 1, JSON.stringify(titles));
    assert.equal(titles.filter((title) => title?.startsWith("NORMAL: mail/smtp took ")).length, 1, JSON.stringify(titles));
  });
}

test("the command line: apply a file of tcp and dns checks, check them, export and apply again unchanged", async (t) => {
  const { port } = await tcpServer(t, "SSH-2.0-OpenSSH_9.6\r\n");
  const zone = await dnsServer(t, { "www.example.test": { answers: [{ type: "AAAA", name: "www.example.test", data: "2001:db8::10" }] } });
  const dir = tempDir(t);
  const db = join(dir, "kinds.db");
  const file = join(dir, "servers.yaml");
  writeFileSync(
    file,
    `edge:\n  services:\n` +
      `    - id: ssh\n      check: {type: tcp, host: 127.0.0.1, port: ${port}, expect: [{banner: {matches: "^SSH-2\\\\.0-"}}]}\n` +
      `    - id: www\n      check: {type: dns, name: www.example.test, recordType: AAAA, server: "${zone.address}", expect: [{answers: {equals: ["2001:db8::10"]}}]}\n`,
  );
  const applied = await runHealthd(["apply", file, "--db", db]);
  assert.equal(applied.code, 0, applied.stderr);
  const checked = await runHealthd(["check", "--db", db, "--json"]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  // Checks run at once: their lines come as they finish.
  const lines = checked.stdout.trim().split("\n").map((line) => JSON.parse(line)).sort((a, b) => a.service.localeCompare(b.service));
  assert.deepEqual(
    lines.map((l: { service: string; type: string; url: string; ok: boolean; answers?: string[] }) => [l.service, l.type, l.url, l.ok, l.answers]),
    [["ssh", "tcp", `tcp://127.0.0.1:${port}`, true, undefined], ["www", "dns", `www.example.test AAAA @${zone.address}`, true, ["2001:db8::10"]]],
  );
  const text = await runHealthd(["check", "edge/www", "--db", db]);
  assert.match(text.stdout, /^ok {3}edge\/www {2} *\d+\.\d ms {2}2001:db8::10\n$/);
  const exported = await runHealthd(["export", "--db", db]);
  assert.match(exported.stdout, /type: tcp/);
  writeFileSync(join(dir, "exported.yaml"), exported.stdout);
  const again = await runHealthd(["apply", join(dir, "exported.yaml"), "--db", db, "--json"]);
  assert.deepEqual(JSON.parse(again.stdout).unchanged, ["edge"]);
});
