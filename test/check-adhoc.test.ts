/**
 * `healthd check` ad hoc for the kinds of issue 84 (--icmp, --udp, --tcp, --tls HOST:PORT, --dns), through the
 * built executable against real servers made here on 127.0.0.1 (a UDP echo, a TLS server, an SMTP server that
 * offers STARTTLS, a DNS server, ping to 127.0.0.1); the flags refused with what they go with; then Gatus's
 * icmp://, starttls:// and tls:// endpoints and Kuma's smtp monitors imported, applied and checked.
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { createServer as createTcpServer } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import Database from "better-sqlite3";
import { SMTPServer } from "smtp-server";
import { parse } from "yaml";
import { selfSigned, type Cert } from "./support/certs.ts";
import { runHealthd } from "./support/cli.ts";
import { dnsServer } from "./support/dns-server.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { adHocKind } from "../src/cli/check-kinds.ts";
import { chosenKind } from "../src/cli/check-flags.ts";
import { UsageError } from "../src/platform/config.ts";
import { tempDir } from "./support/temp.ts";

/** A datagram server on 127.0.0.1 answering "ping" with "pong" and anything else with "what?". */
async function udpEcho(t: TestContext): Promise<number> {
  const socket = createSocket("udp4");
  socket.on("message", (message, from) => socket.send(String(message) === "ping" ? "pong" : "what?", from.port, from.address));
  socket.bind(0, "127.0.0.1");
  await once(socket, "listening");
  t.after(() => socket.close());
  return socket.address().port;
}

/** A TLS server on 127.0.0.1 with `cert` that echoes (below). */
async function tlsServer(t: TestContext, cert: Cert): Promise<number> {
  const server = createTlsServer({ key: cert.key, cert: cert.cert }, echo);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  return (server.address() as { port: number }).port;
}

/** Answers what it is sent ("echo: ", the text, CRLF), else nothing: a client that closes is let go. */
function echo(s: import("node:net").Socket): void {
  s.on("error", () => {});
  s.once("data", (data) => s.end(`echo: ${data}\r\n`));
  s.once("end", () => s.end());
}

/** The same echo over plain TCP. */
async function tcpEcho(t: TestContext): Promise<number> {
  const server = createTcpServer(echo);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  return (server.address() as { port: number }).port;
}

/** A real SMTP server (smtp-server) on 127.0.0.1 that offers STARTTLS with `cert`. */
async function smtpStarttls(t: TestContext, cert: Cert): Promise<number> {
  const server = new SMTPServer({ logger: false, authOptional: true, key: cert.key, cert: cert.cert });
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.server.address() as { port: number }).port;
}

const check = (args: string[]) => runHealthd(["check", ...args]);
const json = (run: { stdout: string }) => JSON.parse(run.stdout) as Record<string, unknown> & { answers?: string[] };

test("check --udp, --tcp, --tls HOST:PORT (with --starttls), --dns and --icmp run one check of their kind against real servers", async (t) => {
  const cert = selfSigned(tempDir(t), 20);
  const [udp, tls, smtp, dns] = await Promise.all([
    udpEcho(t),
    tlsServer(t, cert),
    smtpStarttls(t, cert),
    dnsServer(t, { "www.example.test": { answers: [{ type: "A", name: "www.example.test", data: "192.0.2.10" }] } }),
  ]);
  // Each run is a process of its own: they go at once.
  const [answered, connected, insecure, starttls, resolved, pinged] = await Promise.all([
    check(["--udp", `127.0.0.1:${udp}`, "--send", "ping", "--expect", '{"contains": "pong"}']),
    check(["--tcp", `127.0.0.1:${tls}`]),
    check(["--tls", `127.0.0.1:${tls}`, "--insecure", "--expect", '{"certValidDays": 14}']),
    check(["--tls", `127.0.0.1:${smtp}`, "--starttls", "smtp", "--servername", "localhost", "--insecure", "--json"]),
    check(["--dns", "www.example.test", "--server", dns.address, "--type", "a", "--expect", '{"answers": {"includes": "192.0.2.10"}}']),
    check(["--icmp", "127.0.0.1", "--count", "1", "--json"]),
  ]);
  assert.equal(answered.code, 0, answered.stdout + answered.stderr);
  assert.match(answered.stdout, new RegExp(`^ok {3}udp://127\\.0\\.0\\.1:${udp} +\\d+\\.\\d ms {2}answered\\n$`));
  assert.equal(connected.code, 0, connected.stdout + connected.stderr);
  assert.match(connected.stdout, /connected\n$/);
  // Self-signed: --insecure takes it, and --expect judges its days (20 left).
  assert.equal(insecure.code, 0, insecure.stdout + insecure.stderr);
  assert.match(insecure.stdout, /subject: CN=localhost, issuer: CN=localhost\n$/);
  assert.equal(starttls.code, 0, starttls.stdout + starttls.stderr);
  assert.deepEqual([json(starttls).url, json(starttls).answers?.[0]], [`smtp+starttls://127.0.0.1:${smtp}`, "subject: CN=localhost"]);
  assert.equal(resolved.code, 0, resolved.stdout + resolved.stderr);
  assert.match(resolved.stdout, /192\.0\.2\.10\n$/);
  assert.equal(pinged.code, 0, pinged.stdout + pinged.stderr);
  assert.deepEqual([json(pinged).type, json(pinged).url], ["icmp", "icmp://127.0.0.1"]);
});

test("ad-hoc flags become the document a PUT takes: --send-hex, --type in any case, --tls alone with --grpc", () => {
  const shared = { headers: {}, expect: undefined, timeoutMs: undefined, insecure: undefined };
  const made = (flags: Record<string, unknown>) => {
    const kind = chosenKind(flags);
    assert.ok(kind !== undefined && kind !== "url" && kind !== "postgres" && kind !== "mysql" && kind !== "redis", String(kind));
    return adHocKind(kind, flags, shared).check as unknown as Record<string, unknown>;
  };
  const udp = made({ udp: "[::1]:5060", sendHex: "0d0a" });
  assert.deepEqual([udp.type, udp.host, udp.port, udp.send, udp.sendHex], ["udp", "::1", 5060, null, "0d0a"]);
  const dns = made({ dns: "example.org", type: "mx" });
  assert.deepEqual([dns.recordType, dns.server, dns.expect], ["MX", null, [{ rcode: "NOERROR", minAnswers: 1 }]]);
  const grpc = made({ grpc: "127.0.0.1:50051", tls: true });
  assert.deepEqual([grpc.type, grpc.tls], ["grpc", true]);
  const tls = made({ tls: "example.org:465" });
  assert.deepEqual([tls.type, tls.host, tls.port, tls.starttls, tls.verifyTls], ["tls", "example.org", 465, null, true]);
});

test("check refuses two kinds, a flag of another kind, --tls alone without --grpc and a bad HOST:PORT, naming the flags", async () => {
  const shared = { headers: {}, expect: undefined, timeoutMs: undefined, insecure: undefined };
  const refusal = (flags: Record<string, unknown>) => {
    try {
      const kind = chosenKind(flags);
      if (kind !== undefined && kind !== "url" && kind !== "postgres" && kind !== "mysql" && kind !== "redis") adHocKind(kind, flags, { ...shared, timeoutMs: flags.timeout as number | undefined, insecure: flags.insecure as boolean | undefined });
    } catch (error) {
      assert.ok(error instanceof UsageError, String(error));
      return error.message;
    }
    assert.fail(`${JSON.stringify(flags)} was taken`);
  };
  for (const [flags, message] of [
    [{ icmp: "127.0.0.1", tcp: "127.0.0.1:22" }, /^give one kind of ad-hoc check at a time, not --icmp and --tcp$/],
    [{ url: "http://127.0.0.1/", dns: "example.org" }, /not --url and --dns/],
    [{ postgres: "postgres://u@127.0.0.1/db", udp: "127.0.0.1:53" }, /not --udp and --postgres/],
    [{ grpc: "127.0.0.1:50051", tls: "127.0.0.1:443" }, /--tls 127\.0\.0\.1:443 is a tls check of its own; for gRPC over TLS give --tls alone/],
    [{ icmp: "127.0.0.1", expect: "{}" }, /--expect does not go with --icmp: an icmp check passes when every echo comes back/],
    [{ grpc: "127.0.0.1:50051", expect: "{}" }, /--expect does not go with --grpc: a health check passes on SERVING/],
    [{ tcp: "127.0.0.1:22", starttls: "smtp" }, /^--starttls does not go with --tcp \(it goes with --tls\)$/],
    [{ tls: "127.0.0.1:443", send: "x" }, /--send does not go with --tls \(it goes with --websocket, --udp, --tcp\)/],
    [{ udp: "127.0.0.1:53", header: ["a:b"], send: "x" }, /--header does not go with --udp/],
    [{ url: "http://127.0.0.1/", count: 3 }, /--count does not go with --url \(it goes with --icmp\)/],
    [{ redis: "redis://127.0.0.1", follow: false }, /--no-follow does not go with --redis/],
    [{ count: 3 }, /--count goes with an ad-hoc check \(--icmp\), not with stored checks/],
    [{ server: "127.0.0.1" }, /--server goes with an ad-hoc check \(--dns\)/],
    [{ timeout: 500 }, /^--timeout goes with an ad-hoc check, not with stored checks$/],
    [{ tcp: "127.0.0.1:70000" }, /--tcp \(its port\): must be/],
    [{ tcp: "[::1]" }, /--tcp must be HOST:PORT/],
    [{ icmp: "not a host!" }, /^--icmp: must be a host name/],
    [{ udp: "127.0.0.1:53" }, /--send \(or --send-hex\): a UDP check sends a datagram to be answered/],
    [{ udp: "127.0.0.1:53", send: "x", sendHex: "00" }, /--send-hex: give send or sendHex, not both/],
    [{ tls: "127.0.0.1:443", starttls: "xmpp" }, /--starttls: must be one of/],
    [{ tls: "127.0.0.1:443", servername: "192.0.2.1" }, /--servername: must be a DNS name/],
    [{ dns: "example.org", type: "QQ" }, /--type: must be one of A, AAAA/],
    [{ dns: "example.org", server: "a b" }, /--server: must be a DNS server/],
    [{ icmp: "127.0.0.1", count: 5, timeout: 1000 }, /--timeout: must be at least 1800 ms for 5 echoes/],
    [{ grpc: "127.0.0.1:50051", insecure: true }, /--insecure \(with --tls\): needs tls: true/],
  ] as const) {
    assert.match(refusal(flags) ?? "", message, JSON.stringify(flags));
  }
  // Through the executable: exit 2 and the message, for a flag commander reads two ways and for the rest.
  const runs = await Promise.all([check(["--tls"]), check(["--icmp", "127.0.0.1", "web-01"]), check(["--tcp", "127.0.0.1:22", "--record"])]);
  for (const [run, message] of [
    [runs[0], /--tls alone goes with --grpc \(gRPC over TLS\); to check a TLS port, name it: --tls HOST:PORT/],
    [runs[1], /give either a stored SERVER\[\/SERVICE\] or --icmp, not both/],
    [runs[2], /--record stores results of stored checks; an ad-hoc --tcp check has nowhere to go/],
  ] as const) {
    assert.equal(run!.code, 2, run!.stdout + run!.stderr);
    assert.match(run!.stderr, message);
  }
});

test("import: Gatus's icmp://, starttls:// and tls:// endpoints and Kuma's smtp monitors over TLS, applied and checked", async (t) => {
  const dir = tempDir(t);
  const cert = selfSigned(dir, 20);
  const [tls, smtp, plain] = await Promise.all([tlsServer(t, cert), smtpStarttls(t, cert), tcpEcho(t)]);
  const gatus = join(dir, "gatus.yaml");
  writeFileSync(
    gatus,
    `endpoints:\n` +
      `  - name: router\n    url: "icmp://127.0.0.1"\n    client: {timeout: 500ms}\n    conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 800", "[IP] == 127.0.0.1"]\n    alerts: [{type: slack}]\n` +
      `  - name: mail\n    url: "starttls://127.0.0.1:${smtp}"\n    client: {insecure: true}\n    conditions: ["[CONNECTED] == true", "[CERTIFICATE_EXPIRATION] > 240h"]\n    alerts: [{type: slack}]\n` +
      `  - name: edge\n    url: "tls://127.0.0.1:${tls}"\n    client: {insecure: true}\n    conditions: ["[CONNECTED] == true", "[CERTIFICATE_EXPIRATION] > 48h", "[RESPONSE_TIME] < 5000"]\n    alerts: [{type: slack}]\n` +
      `  - name: speaks\n    url: "tls://127.0.0.1:${tls}"\n    body: "HELLO"\n    client: {insecure: true}\n    conditions: ["[CONNECTED] == true", "[BODY] == pat(*echo: HELLO*)"]\n    alerts: [{type: slack}]\n` +
      // Single-quoted YAML: the body's backslash is a backslash, sent as one.
      `  - name: quoted\n    url: "tcp://127.0.0.1:${plain}"\n    body: 'a\\b'\n    conditions: ["[BODY] == echo: a\\\\b", "[BODY] == pat(*echo*)"]\n    alerts: [{type: slack}]\n`,
  );
  const kuma = join(dir, "kuma.db");
  kumaDatabase(kuma, []);
  // smtp_security came with Kuma 2.0 (db/knex_migrations/2025-01-01-0000-add-smtp.js).
  const db = new Database(kuma);
  db.exec("ALTER TABLE monitor ADD COLUMN smtp_security VARCHAR(255) DEFAULT NULL");
  const insert = db.prepare("INSERT INTO monitor (name, type, hostname, port, smtp_security, interval, user_id) VALUES (?, 'smtp', '127.0.0.1', ?, ?, 60, 1)");
  insert.run("Mail in", smtp, "starttls");
  insert.run("Mail out", 465, "secure");
  insert.run("Relay", 25, "nostarttls");
  db.close();
  const store = join(dir, "healthd.db");
  const [printed, fromKuma, applied] = await Promise.all([
    runHealthd(["import", "--from", "gatus", gatus]),
    runHealthd(["import", "--from", "uptime-kuma", kuma]),
    runHealthd(["import", "--from", "gatus", gatus, "--apply", "--db", store]),
  ]);
  assert.equal(printed.code, 0, printed.stderr);
  const services = Object.fromEntries((parse(printed.stdout).gatus.services as { id: string; check: unknown }[]).map((s) => [s.id, s.check]));
  const base = { intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2 };
  assert.deepEqual(services.router, { type: "icmp", host: "127.0.0.1", count: 1, maxLatencyMs: 800, ...base, timeoutMs: 1000 });
  assert.deepEqual(services.mail, { type: "tls", host: "127.0.0.1", port: smtp, starttls: "smtp", verifyTls: false, expect: [{ certValidDays: 10 }], ...base });
  assert.deepEqual(services.edge, { type: "tls", host: "127.0.0.1", port: tls, verifyTls: false, expect: [{ certValidDays: 2, maxLatencyMs: 5000 }], ...base });
  assert.deepEqual(services.speaks, { type: "tcp", host: "127.0.0.1", port: tls, send: "HELLO", tls: true, verifyTls: false, expect: [{ banner: { contains: "echo: HELLO" } }], ...base });
  for (const line of [
    /endpoint "router": condition "\[IP\] == 127\.0\.0\.1" has no healthd equivalent; left out/,
    /endpoint "router": its client timeout is under the 1 s an icmp check waits at least; it waits 1 s/,
  ]) {
    assert.match(printed.stderr, line);
  }
  assert.deepEqual(services.quoted, { type: "tcp", host: "127.0.0.1", port: plain, send: "a\\\\b", expect: [{ banner: { matches: "^\\s*echo: a\\\\b\\s*$" } }], ...base });
  // Gatus trims the answer before comparing: the pattern allows the echo's CRLF. A second [BODY] condition is said.
  assert.match(printed.stderr, /endpoint "quoted": condition "\[BODY\] == pat\(\*echo\*\)" is a second condition on \[BODY\]; the check keeps the first; left out/);
  assert.doesNotMatch(printed.stderr, /endpoint "speaks"/);

  assert.equal(fromKuma.code, 0, fromKuma.stderr);
  const kumaServices = parse(fromKuma.stdout)["uptime-kuma"].services as { id: string; check: Record<string, unknown> }[];
  const pick = (c: Record<string, unknown>) => [c.type, c.host, c.port, c.starttls];
  assert.deepEqual(kumaServices.map((s) => pick(s.check)), [["tls", "127.0.0.1", smtp, "smtp"], ["tls", "127.0.0.1", 465, undefined]]);
  assert.match(fromKuma.stderr, /monitor "Relay" \(smtp\): its SMTP is plain: healthd's tls check wants TLS; a tcp check of port 25 with a banner of 220 is the nearest; not carried over/);

  // Applied, Gatus's checks run and pass (Kuma's verify the chain, which no test can make trusted).
  assert.equal(applied.code, 0, applied.stderr);
  const checked = await runHealthd(["check", "--db", store]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  const lines = checked.stdout.trim().split("\n");
  assert.equal(lines.length, 5, checked.stdout);
  assert.ok(lines.every((l) => l.startsWith("ok ")), checked.stdout);
  assert.ok(lines.some((l) => /\/mail +\d+\.\d ms {2}subject: CN=localhost/.test(l)), checked.stdout);
});
