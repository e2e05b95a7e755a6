import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { UsageError } from "../src/platform/config.ts";
import { runHealthd, serveHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";

const token = "s3cret-token-0123456789";

test("with a token, every endpoint but GET /healthz needs Authorization: Bearer <token>", async (t) => {
  const d = await testDaemon(t, { token });
  const bearer = { authorization: `Bearer ${token}` };
  for (const [method, path] of [["GET", "/services"], ["PUT", "/services/x"], ["GET", "/metrics"], ["POST", "/push/topics/x"], ["GET", "/no/such/path"], ["GET", "/openapi.json"]]) {
    const anonymous = await d.api(method!, path!, method === "PUT" ? {} : undefined);
    assert.equal(anonymous.status, 401, `${method} ${path}`);
    assert.equal(anonymous.headers.get("www-authenticate"), 'Bearer realm="healthd"');
    assert.match(anonymous.body.detail, /Authorization: Bearer/);
  }
  const wrong = await d.api("GET", "/services", undefined, { authorization: "Bearer not-the-token" });
  assert.equal(wrong.status, 401);
  assert.match(wrong.body.detail, /the token is not known/);
  // The scheme name is case-insensitive (RFC 9110); the token is not.
  assert.equal((await d.api("GET", "/services", undefined, { authorization: `bearer ${token}` })).status, 200);
  assert.equal((await d.api("GET", "/services", undefined, { authorization: `Bearer ${token.toUpperCase()}` })).status, 401);
  assert.equal((await d.api("GET", "/services", undefined, bearer)).status, 200);
  assert.equal((await d.api("PUT", "/services/x", {}, bearer)).status, 201);
  assert.equal((await d.api("GET", "/healthz")).status, 200);
  assert.deepEqual((await d.api("GET", "/services", undefined, bearer)).body.servers.map((s: { id: string }) => s.id), ["x"]);
});

test("a non-loopback address without a token is refused, with the way out in the message", async (t) => {
  await assert.rejects(
    testDaemon(t, { host: "0.0.0.0" }),
    (error: Error) => error instanceof UsageError && /--token, --token-file or HEALTHD_TOKEN/.test(error.message) && /--allow-no-token/.test(error.message),
  );
  const lines: string[] = [];
  const { createLogger } = await import("../src/platform/log.ts");
  const d = await testDaemon(t, { host: "0.0.0.0", allowNoToken: true, log: createLogger({ write: (l) => lines.push(l) }) });
  assert.ok(lines.some((l) => /WITHOUT A TOKEN/.test(l)));
  assert.equal((await fetch(d.url.replace("0.0.0.0", "127.0.0.1") + "/healthz")).status, 200);
});

test("healthd serve reads the token from a file (systemd credentials) and refuses weak or doubled ones", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "token");
  writeFileSync(file, `${token}\n`);
  const served = await serveHealthd(t, ["--db", tempDbPath(t), "--token-file", file]);
  assert.equal((await fetch(served.url + "/services")).status, 401);
  assert.equal((await fetch(served.url + "/services", { headers: { authorization: `Bearer ${token}` } })).status, 200);
  // The scheme name is case-insensitive.
  for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
    assert.equal((await fetch(served.url + "/services", { headers: { authorization: `${scheme} ${token}` } })).status, 200, scheme);
  }
  assert.equal(await served.stop(), 0);
  const weak = await runHealthd(["serve", "--db", tempDbPath(t), "--token", "short"]);
  assert.equal(weak.code, 2);
  assert.match(weak.stderr, /at least 16 visible ASCII characters/);
  // No client can send these in a header: refused at start, not a token that never matches.
  for (const unsendable of [`${token}\u0007`, `${token}é`, `${token} x`]) {
    const refused = await runHealthd(["serve", "--db", tempDbPath(t), "--token", unsendable]);
    assert.equal(refused.code, 2, JSON.stringify(unsendable));
    assert.match(refused.stderr, /^healthd: the token must be at least 16 visible ASCII characters \(letters, digits and punctuation; no spaces, control characters or accents\)/m);
  }
  const both = await runHealthd(["serve", "--token", token, "--token-file", file]);
  assert.equal(both.code, 2);
  const exposed = await runHealthd(["serve", "--db", tempDbPath(t), "--host", "0.0.0.0", "--port", "0"]);
  assert.equal(exposed.code, 2);
  assert.match(exposed.stderr, /refusing to listen on 0\.0\.0\.0 without a token/);
});

test("boolean environment variables mean what they say: false is off, and a value that is neither is exit 2", async (t) => {
  // Each of these must keep the override OFF: the daemon then refuses a non-loopback address without a token.
  for (const value of ["false", "FALSE", "0", "no", "off", "Off", ""]) {
    const refused = await runHealthd(["serve", "--db", tempDbPath(t), "--host", "0.0.0.0", "--port", "0"], { HEALTHD_ALLOW_NO_TOKEN: value });
    assert.equal(refused.code, 2, `HEALTHD_ALLOW_NO_TOKEN=${JSON.stringify(value)}: ${refused.stderr}`);
    assert.match(refused.stderr, /refusing to listen on 0\.0\.0\.0 without a token/);
  }
  const bad = await runHealthd(["serve", "--db", tempDbPath(t), "--port", "0"], { HEALTHD_ALLOW_NO_TOKEN: "maybe" });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^healthd: HEALTHD_ALLOW_NO_TOKEN must be one of 1, true, yes, on, 0, false, no, off \(any case\); got "maybe"/m);
  const on = await serveHealthd(t, ["--db", tempDbPath(t), "--host", "0.0.0.0"], { HEALTHD_ALLOW_NO_TOKEN: "Yes" });
  assert.match(on.log(), /WITHOUT A TOKEN/);
  assert.equal(await on.stop(), 0);
  // HEALTHD_LOG_JSON=0 logs text, each line starting with its time; =1 logs JSON.
  const text = await serveHealthd(t, ["--db", tempDbPath(t)], { HEALTHD_LOG_JSON: "0" });
  assert.match(text.log(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info +listening /m);
  assert.equal(await text.stop(), 0);
  // Under journald (which sets JOURNAL_STREAM) the time is journald's to add.
  const journal = await serveHealthd(t, ["--db", tempDbPath(t)], { JOURNAL_STREAM: "8:12345" });
  assert.match(journal.log(), /^info +listening /m);
  assert.equal(await journal.stop(), 0);
  const json = await serveHealthd(t, ["--db", tempDbPath(t)], { HEALTHD_LOG_JSON: "1" });
  assert.match(json.log(), /^\{"time":.*"message":"listening"/m);
  assert.equal(await json.stop(), 0);
});
