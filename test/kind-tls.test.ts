/**
 * TLS checks (issue 84): the handshake and its certificate against servers made here on 127.0.0.1, STARTTLS as
 * SMTP, IMAP, POP3, FTP, PostgreSQL and LDAP servers speak it, and servers that refuse, stall or speak another
 * protocol; then through the daemon on both engines.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import { test, type TestContext } from "node:test";
import { createServer as createTlsServer, TLSSocket } from "node:tls";
import { runTlsCheck, type TlsRequest } from "../src/checks/tls.ts";
import type { CheckDone } from "../src/daemon.ts";
import { selfSigned, type Cert } from "./support/certs.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { refusedUrl, serveOnLoopback } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

const tls = (port: number, more: Partial<TlsRequest> = {}): TlsRequest => ({
  host: "127.0.0.1", port, starttls: null, servername: null, verifyTls: false, minVersion: null, expect: [], timeoutMs: 3000, ...more,
});

/** A TLS server on 127.0.0.1 with `cert` that closes each connection once made. */
async function tlsServer(t: TestContext, cert: Cert, more: { maxVersion?: "TLSv1.2" } = {}): Promise<number> {
  const server = createTlsServer({ key: cert.key, cert: cert.cert, ...more }, (s) => s.end());
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  return (server.address() as { port: number }).port;
}

/** A plain TCP server whose connections `talk` handles; `upgrade` turns one into TLS with `cert`. */
async function tcpServer(t: TestContext, talk: (socket: Socket, upgrade: () => void) => void, cert: Cert): Promise<number> {
  const server = createServer((socket) => {
    socket.on("error", () => {});
    talk(socket, () => {
      socket.removeAllListeners("data");
      const secure = new TLSSocket(socket, { isServer: true, key: cert.key, cert: cert.cert });
      secure.on("error", () => {});
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  return (server.address() as { port: number }).port;
}

/** A line server: greets with `greeting`, answers each line with `reply(line)`; a reply of "upgrade" upgrades after sending `then`. */
function lineTalk(greeting: string, reply: (line: string) => { say: string; upgrade?: boolean }) {
  return (socket: Socket, upgrade: () => void) => {
    socket.write(greeting);
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      for (let end = text.indexOf("\r\n"); end >= 0; end = text.indexOf("\r\n")) {
        const answer = reply(text.slice(0, end));
        text = text.slice(end + 2);
        socket.write(answer.say);
        if (answer.upgrade) return upgrade();
      }
    });
  };
}

test("tls: the handshake, the certificate's subject and issuer, its days, verification and the lowest version", async (t) => {
  const cert = selfSigned(tempDir(t), 10);
  const port = await tlsServer(t, cert, { maxVersion: "TLSv1.2" });
  const insecure = await runTlsCheck(tls(port));
  assert.deepEqual([insecure.ok, insecure.error], [true, null]);
  assert.deepEqual(insecure.answers, ["subject: CN=localhost", "issuer: CN=localhost"]);
  assert.ok(insecure.certExpiresAt! > Date.now() + 9 * 86_400_000);

  const verified = await runTlsCheck(tls(port, { verifyTls: true, servername: "localhost" }));
  assert.deepEqual([verified.ok, verified.errorKind], [false, "tls"]);
  assert.match(verified.error!, /self-signed|self signed|DEPTH_ZERO_SELF_SIGNED_CERT/i);

  const days = await runTlsCheck(tls(port, { expect: [{ certValidDays: 30 }] }));
  assert.deepEqual([days.ok, days.errorKind], [false, "cert"]);
  assert.match(days.error!, /^TLS certificate expires in 9 days \(\d{4}-\d\d-\d\d\), less than the 30 required$/);

  const version = await runTlsCheck(tls(port, { minVersion: "TLSv1.3" }));
  assert.deepEqual([version.ok, version.errorKind], [false, "tls"]);
});

// Connections share a secure context per lowest version (connect.ts): what must stay each check's own is its
// lowest version, its verification and its certificate (no session carried from one check to the next). Each
// pair runs in both orders: whichever context was made first must not decide for the other.
test("tls: checks in one process keep their own lowest version and verification, and each shows the certificate", async (t) => {
  const cert = selfSigned(tempDir(t), 10);
  const old = await tlsServer(t, cert, { maxVersion: "TLSv1.2" });
  const current = await tlsServer(t, cert);
  for (const minVersion of ["TLSv1.3", null, "TLSv1.3", null] as const) {
    const outcome = await runTlsCheck(tls(old, { minVersion }));
    assert.deepEqual([outcome.ok, outcome.errorKind], minVersion ? [false, "tls"] : [true, null], `${minVersion}: ${outcome.error}`);
    assert.equal((await runTlsCheck(tls(current, { minVersion }))).ok, true, String(minVersion));
  }
  for (const verifyTls of [true, false, true, false]) {
    const outcome = await runTlsCheck(tls(current, { verifyTls, servername: "localhost" }));
    assert.deepEqual([outcome.ok, outcome.errorKind], verifyTls ? [false, "tls"] : [true, null], `${verifyTls}: ${outcome.error}`);
  }
  // A server that issues TLS 1.3 tickets and waits for the client, as an HTTPS server does: a check offered a
  // session would resume it and be given no certificate.
  const ticketing = createTlsServer({ key: cert.key, cert: cert.cert }, (s) => (s.on("error", () => {}), s.resume()));
  ticketing.on("tlsClientError", () => {});
  const resumed: boolean[] = [];
  ticketing.on("secureConnection", (s) => resumed.push(s.isSessionReused()));
  ticketing.listen(0, "127.0.0.1");
  await once(ticketing, "listening");
  t.after(() => ticketing.close());
  const port = (ticketing.address() as { port: number }).port;
  for (let i = 0; i < 3; i++) {
    const outcome = await runTlsCheck(tls(port));
    assert.deepEqual([outcome.ok, outcome.answers], [true, ["subject: CN=localhost", "issuer: CN=localhost"]], `check ${i}`);
    assert.ok(outcome.certExpiresAt! > Date.now() + 9 * 86_400_000);
  }
  assert.ok(!resumed.includes(true), "no check resumed a session");
});

// Without STARTTLS the TLS socket makes the TCP connection itself: its stage still moves on once connected.
test("tls without STARTTLS: a refused connection, a server that hangs up in the handshake and one that stalls in it", async (t) => {
  const cert = selfSigned(tempDir(t), 90);
  const nobody = Number(new URL(await refusedUrl()).port);
  const refused = await runTlsCheck(tls(nobody));
  assert.deepEqual([refused.errorKind, refused.error], ["connect", `connection refused by 127.0.0.1:${nobody}`]);
  const hangingUp = await tcpServer(t, (socket) => socket.destroy(), cert);
  const gone = await runTlsCheck(tls(hangingUp, { timeoutMs: 60_000 }));
  assert.deepEqual([gone.ok, gone.errorKind], [false, "tls"], gone.error ?? "");
  assert.match(gone.error!, /disconnected before secure TLS connection was established/);
  const stalling = await tcpServer(t, () => {}, cert);
  const stalled = await runTlsCheck(tls(stalling, { timeoutMs: 300 }));
  assert.deepEqual([stalled.errorKind, stalled.error], ["timeout", `no TLS connection to 127.0.0.1:${stalling} within 300 ms (timed out in the TLS handshake)`]);
});

test("tls with STARTTLS: SMTP, IMAP, POP3, FTP, PostgreSQL and LDAP servers agree, then the handshake is made", async (t) => {
  const cert = selfSigned(tempDir(t), 90);
  const smtp = await tcpServer(t, lineTalk("220-mail.test ESMTP\r\n220 ready\r\n", (line) =>
    line.startsWith("EHLO") ? { say: "250-mail.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n" } : line === "STARTTLS" ? { say: "220 go ahead\r\n", upgrade: true } : { say: "500 what\r\n" }), cert);
  const imap = await tcpServer(t, lineTalk("* OK IMAP4rev1 ready\r\n", (line) => (line === "a1 STARTTLS" ? { say: "a1 OK begin TLS\r\n", upgrade: true } : { say: "a1 BAD\r\n" })), cert);
  const pop3 = await tcpServer(t, lineTalk("+OK POP3 ready\r\n", (line) => (line === "STLS" ? { say: "+OK begin TLS\r\n", upgrade: true } : { say: "-ERR\r\n" })), cert);
  const ftp = await tcpServer(t, lineTalk("220 FTP ready\r\n", (line) => (line === "AUTH TLS" ? { say: "234 AUTH TLS ok\r\n", upgrade: true } : { say: "500 what\r\n" })), cert);
  const postgres = await tcpServer(t, (socket, upgrade) => {
    socket.once("data", (request: Buffer) => {
      assert.deepEqual([...request], [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f], "an SSLRequest");
      socket.write("S");
      upgrade();
    });
  }, cert);
  const ldap = await tcpServer(t, (socket, upgrade) => {
    socket.once("data", (request: Buffer) => {
      assert.ok(request.includes(Buffer.from("1.3.6.1.4.1.1466.20037")), "the StartTLS OID");
      // ExtendedResponse, message 1: success, no matched DN, no message.
      socket.write(Buffer.from([0x30, 0x0c, 0x02, 0x01, 0x01, 0x78, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00]));
      upgrade();
    });
  }, cert);
  for (const [starttls, port] of [["smtp", smtp], ["imap", imap], ["pop3", pop3], ["ftp", ftp], ["postgres", postgres], ["ldap", ldap]] as const) {
    const outcome = await runTlsCheck(tls(port, { starttls, expect: [{ certValidDays: 30 }] }));
    assert.deepEqual([outcome.ok, outcome.error, outcome.answers?.[0]], [true, null, "subject: CN=localhost"], starttls);
  }
});

test("tls with STARTTLS: a refusal names what the server said; silence is a timeout at its stage; another protocol fails the handshake", async (t) => {
  const cert = selfSigned(tempDir(t), 90);
  const refusing = await tcpServer(t, lineTalk("220 ready\r\n", (line) => (line.startsWith("EHLO") ? { say: "250 mail.test\r\n" } : { say: "454 TLS not available due to temporary reason\r\n" })), cert);
  const refused = await runTlsCheck(tls(refusing, { starttls: "smtp" }));
  assert.deepEqual([refused.ok, refused.errorKind, refused.error], [false, "tls", `127.0.0.1:${refusing} did not agree to STARTTLS: it answered "454 TLS not available due to temporary reason"`]);

  const noSsl = await tcpServer(t, (socket) => socket.once("data", () => socket.write("N")), cert);
  const plain = await runTlsCheck(tls(noSsl, { starttls: "postgres" }));
  assert.equal(plain.error, `127.0.0.1:${noSsl} did not agree to STARTTLS: it answered N (it does not offer TLS: ssl = off)`);

  // BER's indefinite length, which LDAP never sends: judged not LDAP's (it threw in the socket's reader).
  const indefinite = await tcpServer(t, (socket) => socket.once("data", () => socket.write(Buffer.from([0x30, 0x80, 0x02, 0x01, 0x01, 0x78, 0x80]))), cert);
  const ber = await runTlsCheck(tls(indefinite, { starttls: "ldap" }));
  assert.equal(ber.error, `127.0.0.1:${indefinite} did not agree to STARTTLS: it answered an answer that is not an LDAP extended response`);

  // A server that hangs up is said at once, not when the deadline passes.
  const hangingUp = await tcpServer(t, (socket) => socket.destroy(), cert);
  const gone = await runTlsCheck(tls(hangingUp, { starttls: "smtp", timeoutMs: 60_000 }));
  assert.deepEqual([gone.ok, gone.errorKind], [false, "tls"], gone.error ?? "");

  const stalling = await tcpServer(t, () => {}, cert);
  const stalled = await runTlsCheck(tls(stalling, { starttls: "smtp", timeoutMs: 300 }));
  assert.deepEqual([stalled.errorKind, stalled.error], ["timeout", `no TLS connection to 127.0.0.1:${stalling} within 300 ms (timed out asking for STARTTLS (smtp))`]);

  const http = await serveOnLoopback(t, createHttpServer((_, res) => res.end("not TLS")));
  const wrong = await runTlsCheck(tls(http));
  assert.deepEqual([wrong.ok, wrong.errorKind], [false, "tls"]);
});

test("the API refuses what a tls check cannot use, naming the field", async (t) => {
  const d = await testDaemon(t);
  await assertChecksRefused(d, [
    [{ type: "tls", host: "127.0.0.1", port: 25, starttls: "xmpp" }, "/services/0/check/starttls", /smtp/],
    [{ type: "tls", host: "127.0.0.1", port: 443, servername: "127.0.0.1" }, "/services/0/check/servername", /must be a DNS name/],
    [{ type: "tls", host: "127.0.0.1", port: 443, minVersion: "TLSv1.0" }, "/services/0/check/minVersion", /TLSv1\.2/],
    [{ type: "tls", host: "127.0.0.1", port: 443, expect: [{}] }, "/services/0/check/expect/0", /needs at least one condition \(certValidDays, maxLatencyMs\)/],
    [{ type: "tls", host: "127.0.0.1", port: 443, send: "x" }, "/services/0/check/send", /is a field of tcp, udp and websocket checks, not of tls ones/],
  ]);
});

for (const engine of engines) {
  test(`${engine}: a tls service is checked, stored with its certificate's names, warned of its expiry and exported as written`, async (t) => {
    const cert = selfSigned(tempDir(t), 10);
    const port = await tlsServer(t, cert);
    const d = await testDaemon(t, { engine });
    const done = nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === "imaps").then(([r]) => r);
    const check = { type: "tls", host: "127.0.0.1", port, verifyTls: false, certWarnDays: 14, intervalSeconds: 60 };
    const put = await d.api("PUT", "/services/mail", { services: [{ id: "imaps", check }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const r = await done;
    assert.deepEqual([r.entry.ok, r.entry.type, r.entry.answers], [true, "tls", ["subject: CN=localhost", "issuer: CN=localhost"]]);
    assert.ok(r.notices.includes("cert"), `a certificate with 9 days left warns (certWarnDays 14): ${r.notices.join(", ")}`);
    const data = await d.api("GET", "/services/mail/imaps/data");
    assert.deepEqual(data.body.entries[0].answers, ["subject: CN=localhost", "issuer: CN=localhost"]);
    const stored = await d.api("GET", "/services/mail");
    const written = stored.body.services[0].check;
    assert.deepEqual(
      [written.type, written.host, written.port, written.starttls, written.servername, written.verifyTls, written.minVersion, written.certWarnDays],
      ["tls", "127.0.0.1", port, null, null, false, null, 14],
    );
    const again = await d.api("PUT", "/services/mail", { services: [{ id: "imaps", check: written }] });
    assert.equal(again.status, 200);
  });
}
