/**
 * `healthd run https://host/ping/KEY -- cmd` (issue 78): a crontab that reports by the heartbeat's ping URL
 * needs no API token, so the first token the API gets locks none of them out. The built executable, as a
 * subprocess, against a daemon that asks for a token.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePingUrl } from "../src/cli/pinger.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const key = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278";

test("healthd run with the ping URL: no token, the failure and its exit code recorded, the command's status passed through", async (t) => {
  const d = await testDaemon(t, { token: adminToken });
  const put = await d.api("PUT", "/services/db1", { services: [{ id: "backup", check: { type: "heartbeat", periodSeconds: 3600, pingKey: key } }] }, admin);
  assert.equal(put.status, 201);
  const entries = () => d.api("GET", "/services/db1/backup/data", undefined, admin).then((a) => a.body.entries as { kind: string; ok: boolean; exitCode: number | null }[]);

  // HEALTHD_URL points nowhere and no token is given: the URL says where, the key is the credential.
  const env = { HEALTHD_URL: "http://127.0.0.1:9" };
  const run = await runHealthd(["run", `${d.url}/ping/${key}`, "--", "sh", "-c", "echo working; exit 3"], env);
  assert.equal(run.code, 3, run.stderr);
  assert.equal(run.stdout, "working\n");
  assert.equal(run.stderr, "", "nothing to warn of");
  const stored = await until(entries, (e) => e.length === 2, "the start and the exit stored");
  assert.deepEqual(stored.map((e) => [e.kind, e.ok, e.exitCode]), [["exit", false, 3], ["start", true, null]]);

  // The name form still works with a token that may ping, and says what to do without one.
  const ping = await d.api("POST", "/tokens", { name: "cron", scope: "ping", servers: ["db1"] }, admin);
  const named = await runHealthd(["run", "db1/backup", "--", "sh", "-c", "exit 0"], { HEALTHD_URL: d.url, HEALTHD_TOKEN: ping.body.token });
  assert.equal(named.code, 0, named.stderr);
  await until(entries, (e) => e.length === 4, "the named run stored");
  const tokenless = await runHealthd(["run", "db1/backup", "--", "sh", "-c", "exit 4"], { HEALTHD_URL: d.url });
  assert.equal(tokenless.code, 4);
  assert.match(tokenless.stderr, /answered 401: .*give the heartbeat's ping URL instead \(healthd run https:\/\/HOST\/ping\/KEY -- \.\.\.\), which needs no token; the job goes on/);

  // A URL that is not a ping URL is a usage error before anything runs.
  const wrong = await runHealthd(["run", `${d.url}/pong/${key}`, "--", "sh", "-c", "echo ran"]);
  assert.equal(wrong.code, 2);
  assert.equal(wrong.stdout, "");
  assert.match(wrong.stderr, /is not a ping URL: it ends in \/ping\/ and the heartbeat's key/);
});

test("a ping URL keeps the path a proxy puts before /ping, over https as over http", () => {
  assert.deepEqual(parsePingUrl(`https://127.0.0.1:8443/healthd/ping/${key.toUpperCase()}`), { url: "https://127.0.0.1:8443/healthd", key });
  assert.deepEqual(parsePingUrl(`http://127.0.0.1:8080/ping/${key}/`), { url: "http://127.0.0.1:8080", key });
  assert.equal(parsePingUrl("db1/backup"), undefined);
});
