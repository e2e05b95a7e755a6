/**
 * TLS session resumption between checks (issue 84): a returning check resumes its target's last session, as the
 * server sees it, and still reports the certificate; a full handshake is made again after the interval (moved
 * by a clock, not waited for), a replaced certificate is seen then, and a session never lets a check pass that
 * a full handshake would fail for what the check can know.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { test, type TestContext } from "node:test";
import { connect, createServer as createTlsServer, type Server, type TLSSocket } from "node:tls";
import { systemClock, type Clock } from "../src/platform/clock.ts";
import { runTcpCheck } from "../src/checks/tcp.ts";
import { runTlsCheck, type TlsOptions, type TlsRequest } from "../src/checks/tls.ts";
import { TlsSessions } from "../src/checks/tls-sessions.ts";
import { expired, selfSigned, type Cert } from "./support/certs.ts";
import { tempDir } from "./support/temp.ts";

const minutes = 60_000;
const days = 86_400_000;

const tls = (port: number, more: Partial<TlsRequest> = {}): TlsRequest => ({
  host: "127.0.0.1", port, starttls: null, servername: null, verifyTls: false, minVersion: null, expect: [], timeoutMs: 3000, ...more,
});

/** The system's clock, moved forward when a test says so: the wall clock and the monotonic one apart. */
class MovedClock implements Clock {
  wall = 0;
  steady = 0;
  now = () => systemClock.now() + this.wall;
  monotonic = () => systemClock.monotonic() + this.steady;
  setTimeout = systemClock.setTimeout;
  clearTimeout = systemClock.clearTimeout;
}

type Handshake = "full" | "resumed";

/**
 * A TLS server with Node's defaults (session tickets) that waits for the client, as an HTTPS server does, and
 * says whether it resumed each handshake. It asks its socket when the handshake's first secret is made (its
 * 'keylog' event), once it has answered the client's hello: a check hangs up as soon as its side of the
 * handshake is done, and the server's socket is often gone by its 'secureConnection' (a reset instead).
 */
async function ticketingServer(t: TestContext, cert: Cert, more: { maxVersion?: "TLSv1.2" } = {}): Promise<{ port: number; server: Server; next: () => Promise<Handshake> }> {
  const server = createTlsServer({ key: cert.key, cert: cert.cert, ...more }, (s) => {
    s.on("error", () => {});
    s.resume();
  });
  server.on("tlsClientError", () => {});
  const told = new WeakSet<TLSSocket>();
  let tell = (_: Handshake) => {};
  server.on("keylog", (_line: Buffer, s: TLSSocket) => {
    if (told.has(s)) return;
    told.add(s);
    tell(s.isSessionReused() ? "resumed" : "full");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const next = () => new Promise<Handshake>((resolve) => (tell = resolve));
  return { port: (server.address() as { port: number }).port, server, next };
}

/** Each check, and how the server saw its handshake. */
function checker(next: () => Promise<Handshake>, options: TlsOptions) {
  return async (request: TlsRequest) => {
    const [outcome, handshake] = await Promise.all([runTlsCheck(request, options), next()]);
    return { ...outcome, handshake };
  };
}

test("what Node gives of a resumed handshake: authorized as the full one was, and no certificate (so the check keeps what the full one showed)", async (t) => {
  const cert = selfSigned(tempDir(t), 10);
  const { port, next } = await ticketingServer(t, cert);
  const handshake = async (session?: Buffer) => {
    const socket = connect({ host: "127.0.0.1", port, servername: "localhost", ca: cert.cert, ...(session ? { session } : {}) });
    const issued = new Promise<Buffer>((resolve) => socket.once("session", resolve));
    const [, seen] = await Promise.all([once(socket, "secureConnect"), next()]);
    const shown = { seen, reused: socket.isSessionReused(), authorized: socket.authorized, subject: socket.getPeerCertificate().subject, x509: socket.getPeerX509Certificate()?.subject };
    return { shown, issued: seen === "full" ? await issued : undefined, socket };
  };
  const full = await handshake();
  full.socket.destroy();
  assert.deepEqual(full.shown, { seen: "full", reused: false, authorized: true, subject: Object.assign(Object.create(null), { CN: "localhost" }), x509: "CN=localhost" });
  const resumed = await handshake(full.issued);
  resumed.socket.destroy();
  assert.deepEqual(resumed.shown, { seen: "resumed", reused: true, authorized: true, subject: undefined, x509: undefined });
});

for (const version of ["TLSv1.3", "TLSv1.2"] as const) {
  test(`tls (${version}): a returning check resumes, reporting the same certificate, until a full handshake after the interval`, async (t) => {
    const { port, next } = await ticketingServer(t, selfSigned(tempDir(t), 10), version === "TLSv1.2" ? { maxVersion: "TLSv1.2" } : {});
    const clock = new MovedClock();
    const check = checker(next, { clock, sessions: new TlsSessions(10 * minutes) });

    const full = await check(tls(port));
    assert.deepEqual([full.ok, full.handshake, full.answers], [true, "full", ["subject: CN=localhost", "issuer: CN=localhost"]]);
    assert.ok(full.certExpiresAt! > Date.now() + 9 * days);
    const again = await check(tls(port));
    assert.deepEqual([again.ok, again.handshake, again.answers, again.certExpiresAt], [true, "resumed", full.answers, full.certExpiresAt]);
    clock.steady += 9 * minutes;
    assert.equal((await check(tls(port))).handshake, "resumed");
    clock.steady += 1 * minutes;
    assert.equal((await check(tls(port))).handshake, "full");
    assert.equal((await check(tls(port))).handshake, "resumed");
  });
}

test("tls: a renewed certificate is seen at the first full handshake after the interval; until then a resumed session shows the one it was made with", async (t) => {
  const dir = tempDir(t);
  const { port, server, next } = await ticketingServer(t, selfSigned(dir, 10));
  const clock = new MovedClock();
  const check = checker(next, { clock, sessions: new TlsSessions(10 * minutes) });
  const full = await check(tls(port));
  assert.equal(full.handshake, "full");

  // Renewed: 90 days. The server keeps its ticket keys, as servers that share them across reloads do (TLS 1.3;
  // Node's TLS 1.2 server resumes no session of its former certificate).
  const keys = server.getTicketKeys();
  const renewed = selfSigned(dir, 90);
  server.setSecureContext({ key: renewed.key, cert: renewed.cert });
  server.setTicketKeys(keys);
  clock.steady += 9 * minutes;
  const stale = await check(tls(port));
  assert.deepEqual([stale.handshake, stale.certExpiresAt], ["resumed", full.certExpiresAt]);
  clock.steady += 1 * minutes;
  const seen = await check(tls(port));
  assert.equal(seen.handshake, "full");
  assert.ok(seen.certExpiresAt! > full.certExpiresAt! + 70 * days, "the renewed certificate");
  const resumed = await check(tls(port));
  assert.deepEqual([resumed.handshake, resumed.certExpiresAt], ["resumed", seen.certExpiresAt]);
});

test("tls: a session is never offered where a full handshake could fail: verified another way, past its certificate's expiry, after a failed check", async (t) => {
  const dir = tempDir(t);
  const cert = selfSigned(dir, 10);
  const { port, server, next } = await ticketingServer(t, cert);
  const clock = new MovedClock();
  const check = checker(next, { clock, sessions: new TlsSessions(10 * minutes) });

  // A session of an unverified check is not one for a verified check: that one verifies, and fails.
  assert.equal((await check(tls(port))).handshake, "full");
  const verified = await check(tls(port, { verifyTls: true, servername: "localhost" }));
  assert.deepEqual([verified.ok, verified.errorKind, verified.handshake], [false, "tls", "full"]);

  // Past the certificate's expiry on the check's clock, within the interval: a full handshake.
  assert.equal((await check(tls(port))).handshake, "resumed");
  clock.wall += 11 * days;
  assert.equal((await check(tls(port))).handshake, "full");
  clock.wall = 0;

  // A failed check (here its certificate has fewer days than asked) drops the session.
  assert.equal((await check(tls(port))).handshake, "resumed");
  const short = await check(tls(port, { expect: [{ certValidDays: 30 }] }));
  assert.deepEqual([short.ok, short.errorKind, short.handshake], [false, "cert", "resumed"]);
  assert.equal((await check(tls(port))).handshake, "full");

  // Verified against a CA the check trusts: resumed sessions are authorized as their full handshake was; a
  // certificate replaced by an expired one is refused at the next full handshake, within the interval, and no
  // session is kept of it.
  const expiredCert = expired(dir);
  const trusting = checker(next, { clock, sessions: new TlsSessions(10 * minutes), ca: cert.cert + expiredCert.cert });
  const strict = tls(port, { verifyTls: true, servername: "localhost" });
  assert.deepEqual(pick(await trusting(strict)), [true, "full"]);
  assert.deepEqual(pick(await trusting(strict)), [true, "resumed"]);
  const keys = server.getTicketKeys();
  server.setSecureContext({ key: expiredCert.key, cert: expiredCert.cert });
  server.setTicketKeys(keys);
  clock.steady += 10 * minutes;
  const refused = await trusting(strict);
  assert.deepEqual([refused.ok, refused.errorKind, refused.handshake], [false, "tls", "full"]);
  assert.match(refused.error!, /expired/i);
  assert.deepEqual(pick(await trusting(strict)), [false, "full"]);
});

const pick = (o: { ok: boolean; handshake: Handshake }) => [o.ok, o.handshake];

test("tcp over TLS: a returning check resumes as a tls check does, with its certificate's expiry, and a failed one drops the session", async (t) => {
  const { port, next } = await ticketingServer(t, selfSigned(tempDir(t), 10));
  const options = { sessions: new TlsSessions(10 * minutes) };
  const tcp = async (expect: { certValidDays?: number }[] = []) => {
    const request = { host: "127.0.0.1", port, tls: true, verifyTls: false, send: null, expect, timeoutMs: 3000 };
    const [outcome, handshake] = await Promise.all([runTcpCheck(request, options), next()]);
    return [outcome.ok, handshake, outcome.certExpiresAt];
  };
  const [ok, handshake, expiry] = await tcp();
  assert.deepEqual([ok, handshake], [true, "full"]);
  assert.ok((expiry as number) > Date.now() + 9 * days);
  assert.deepEqual(await tcp(), [true, "resumed", expiry]);
  assert.deepEqual(await tcp([{ certValidDays: 30 }]), [false, "resumed", expiry]);
  assert.deepEqual(await tcp(), [true, "full", expiry]);
});
