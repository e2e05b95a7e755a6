/**
 * The email channel against a real SMTP server on 127.0.0.1 (smtp-server): STARTTLS with AUTH, implicit TLS,
 * and plain SMTP; a refusal of the message, and wrong credentials.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test, type TestContext } from "node:test";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import type { Notification } from "../src/store/store.ts";
import { selfSigned } from "./support/certs.ts";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { notifications } from "./support/raw.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

interface Mail {
  readonly from: string;
  readonly to: string[];
  readonly user: string | undefined;
  readonly secure: boolean;
  readonly raw: string;
}

async function smtp(t: TestContext, options: SMTPServerOptions): Promise<{ port: number; mails: Mail[]; events: EventEmitter }> {
  const mails: Mail[] = [];
  const events = new EventEmitter();
  const server = new SMTPServer({
    logger: false,
    disabledCommands: [],
    ...options,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        if (raw.includes("REFUSE-ME")) return callback(Object.assign(new Error("mailbox unavailable"), { responseCode: 550 }));
        const mail = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          user: session.user as string | undefined,
          secure: session.secure,
          raw,
        };
        mails.push(mail);
        callback();
        events.emit("mail", mail);
      });
    },
  });
  // A client that drops the connection (one refusing the certificate) is an error of that session, not the server's.
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.server.address() as { port: number }).port, mails, events };
}

/** A MIME part's text, quoted-printable undone. */
function part(raw: string, type: string): string {
  const start = raw.indexOf(`Content-Type: ${type}`);
  assert.ok(start >= 0, `the mail has a ${type} part`);
  const body = raw.slice(raw.indexOf("\r\n\r\n", start) + 4).split(/\r\n--/)[0]!;
  return body.replace(/=\r\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

const auth: SMTPServerOptions["onAuth"] = (a, _session, callback) =>
  a.username === "healthd" && a.password === "pw" ? callback(null, { user: "healthd" }) : callback(new Error("Invalid username or password"));

for (const engine of engines) {
  test(`${engine}: a DOWN goes by email through STARTTLS with AUTH: subject, a text and an HTML part, a Message-ID from its incident`, async (t) => {
    const cert = selfSigned(tempDir(t), 2);
    const server = await smtp(t, { key: cert.key, cert: cert.cert, authMethods: ["PLAIN", "LOGIN"], onAuth: auth });
    const target = await switchableTarget(t);
    const d = await testDaemon(t, { engine, env: { SMTP_PASSWORD: "pw" } });
    const made = await d.api("PUT", "/channels/mail", {
      type: "email", to: ["ops@example.org", "Oncall <oncall@example.org>"], from: "healthd <healthd@example.org>", host: "127.0.0.1", port: server.port,
      secure: "starttls", user: "healthd", password: "${SMTP_PASSWORD}", verifyTls: false,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.password, "${SMTP_PASSWORD}");
    const mailed = nextEvent<[Mail]>(server.events, "mail");
    const sent = nextEvent<[Notification]>(d.events, "notify:sent");
    await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0, channels: ["mail"] } }] });
    const [mail] = await mailed;
    const [row] = await sent;
    assert.deepEqual([mail.from, mail.to, mail.user, mail.secure], ["healthd@example.org", ["ops@example.org", "oncall@example.org"], "healthd", true]);
    assert.match(mail.raw, /^Subject: DOWN: web-01\/home\r$/m);
    // A DOWN's Message-ID is its incident's (test/messages.test.ts: its RECOVERED answers it).
    assert.match(mail.raw, new RegExp(`^Message-ID: <incident-${row.incidentId}\\.[0-9a-f]{10}\\.down@example\\.org>\\r$`, "m"));
    assert.match(part(mail.raw, "text/plain"), /^status: status 500 was not expected \(expected 2xx\)\r?\nURL: /);
    const html = part(mail.raw, "text/html");
    assert.match(html, /<h2[^>]*>DOWN: web-01\/home<\/h2>/);
    const [stored] = await notifications(d.store);
    assert.match(stored!.remoteId!, new RegExp(`^<incident-${row.incidentId}\\.[0-9a-f]{10}\\.down@example\\.org>$`));
  });
}

test("email: implicit TLS and plain SMTP; a message the server refuses and wrong credentials are 502 with its words; an unverified certificate is refused", async (t) => {
  const cert = selfSigned(tempDir(t), 2);
  const tls = await smtp(t, { secure: true, key: cert.key, cert: cert.cert, authOptional: true });
  const plain = await smtp(t, { authOptional: true, hideSTARTTLS: true });
  const authed = await smtp(t, { authOptional: false, hideSTARTTLS: true, allowInsecureAuth: true, onAuth: auth });
  const d = await testDaemon(t);
  const base = { type: "email", to: ["ops@example.org"], from: "healthd@example.org", host: "127.0.0.1" };
  await d.api("PUT", "/channels/tls", { ...base, port: tls.port, secure: "tls", verifyTls: false });
  await d.api("PUT", "/channels/plain", { ...base, port: plain.port, secure: "none" });
  await d.api("PUT", "/channels/refusing", { ...base, port: plain.port, secure: "none", title: "REFUSE-ME {{title}}" });
  await d.api("PUT", "/channels/wrong", { ...base, port: authed.port, secure: "none", user: "healthd", password: "nope" });
  await d.api("PUT", "/channels/strict", { ...base, port: tls.port, secure: "tls" });

  assert.equal((await d.api("POST", "/channels/tls/test")).status, 200);
  assert.equal(tls.mails[0]!.secure, true);
  assert.match(tls.mails[0]!.raw, /^Subject: TEST: healthd channel tls\r$/m);
  assert.equal((await d.api("POST", "/channels/plain/test")).status, 200);
  assert.equal(plain.mails[0]!.secure, false);

  const refused = await d.api("POST", "/channels/refusing/test");
  assert.equal(refused.status, 502);
  assert.match(refused.body.detail, new RegExp(`^refusing did not take the test message: email through 127\\.0\\.0\\.1:${plain.port}: .*550`));
  const wrong = await d.api("POST", "/channels/wrong/test");
  assert.equal(wrong.status, 502);
  assert.match(wrong.body.detail, /Invalid username or password/);
  // A certificate no CA signed is refused unless verifyTls is false.
  const strict = await d.api("POST", "/channels/strict/test");
  assert.equal(strict.status, 502);
  assert.match(strict.body.detail, /self.signed certificate/i);

  const bad = await d.api("PUT", "/channels/x", { ...base, to: [], secure: "ssl", from: "not an address" });
  assert.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ["/from", "/secure", "/to"]);
});
