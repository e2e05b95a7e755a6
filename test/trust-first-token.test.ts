/**
 * The first token locks nothing out silently (issue 78): `healthd serve` says at start which surfaces need a
 * token and which stay open, and says so again the moment a first token closes the API or the last one
 * revoked opens it. The built executable, on both engines.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runHealthd, serveHealthd } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { until } from "./support/events.ts";

const key = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278";

for (const engine of engines) {
  test(`${engine}: serve says what needs a token at start and when the first token switches it, and pings by key stay open`, async (t) => {
    const db = await testDatabase(t, engine);
    const served = await serveHealthd(t, ["--db", db]);
    await until(async () => served.log(), (log) => /access: /.test(log), "the start's access line");
    assert.match(served.log(), /access: the API, the status page and pings answer anyone who reaches this address \(no --token, no token in the database\); the first token made .* pings by key \(\/ping\/KEY\) stay open/);
    const status = (path: string, init: RequestInit = {}) => fetch(served.url + path, init).then(async (r) => (await r.arrayBuffer(), r.status));
    const heartbeat = { services: [{ id: "backup", check: { type: "heartbeat", periodSeconds: 3600, pingKey: key } }] };
    assert.equal(await status("/services/db1", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(heartbeat) }), 201);
    assert.equal(await status("/status.json"), 200);

    const made = await runHealthd(["token", "create", "first", "--scope", "admin", "--db", db, "--json"]);
    assert.equal(made.code, 0, made.stderr);
    // Closed within a second (decided from the database at each request), and said in the log.
    await until(() => status("/services"), (code) => code === 401, "the API asking for a token");
    await until(async () => served.log(), (log) => /access changed: the API, the status page and pings by name need a token \(the database holds tokens\); pings by key \(\/ping\/KEY\), public named pages and \/healthz stay open/.test(log), "the switch said in the log");
    assert.equal(await status("/status.json"), 401);
    assert.equal(await status(`/ping/${key}`), 200, "a ping by key needs no token");

    const revoked = await runHealthd(["token", "revoke", "first", "--db", db]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await until(() => status("/services"), (code) => code === 200, "the API open again");
    await until(async () => served.log(), (log) => /access changed: the API, the status page and pings answer anyone/.test(log), "the switch back said in the log");
  });
}

test("with --token and --public-status, serve says the status page stays open and the API does not", async (t) => {
  const db = await testDatabase(t, "sqlite");
  const served = await serveHealthd(t, ["--db", db, "--token", "the-daemons-own-token-0123", "--public-status"]);
  await until(async () => served.log(), (log) => /access: /.test(log), "the start's access line");
  assert.match(served.log(), /access: the API and pings by name need a token \(--token is set\); pings by key \(\/ping\/KEY\), the status page and badges \(--public-status\), public named pages and \/healthz stay open/);
});
