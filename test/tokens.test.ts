/** Scoped tokens: made, used, limited, revoked at once on every node; pings by name; `healthd token`. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { runHealthd } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { open, rawQuery } from "./support/raw.ts";
import { tempDbPath } from "./support/temp.ts";
import { until } from "./support/events.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const as = (secret: string) => ({ authorization: `Bearer ${secret}` });

const heartbeat = { services: [{ id: "backup", check: { type: "heartbeat", periodSeconds: 3600, graceSeconds: 60 } }] };

async function makeToken(d: TestDaemon, body: object): Promise<string> {
  const made = await d.api("POST", "/tokens", body, admin);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.match(made.body.token, /^hd_[A-Za-z0-9_-]{43}$/);
  return made.body.token;
}

for (const engine of engines) {
  test(`${engine}: scoped tokens: read, write limited to a server, ping by name, admin; stored as a hash; 401 and 403 say why`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    for (const id of ["web-01", "db-01"]) assert.equal((await d.api("PUT", `/services/${id}`, heartbeat, admin)).status, 201);

    const read = await makeToken(d, { name: "grafana", scope: "read" });
    const deploy = await makeToken(d, { name: "deploy-web", scope: "write", servers: ["web-01"] });
    const cron = await makeToken(d, { name: "cron-web", scope: "ping", servers: ["web-01"] });
    const listed = (await d.api("GET", "/tokens", undefined, admin)).body.tokens;
    assert.deepEqual(
      listed.map((x: any) => [x.name, x.scope, x.servers, "token" in x]),
      [["grafana", "read", null, false], ["deploy-web", "write", ["web-01"], false], ["cron-web", "ping", ["web-01"], false]],
    );
    // Only the SHA-256 of a secret is kept.
    const store = await open(d.db, { mode: "read" });
    t.after(() => store.close());
    const rows = await rawQuery(store, "SELECT name, hash FROM tokens ORDER BY id");
    assert.deepEqual(rows.map((r) => r.hash), [read, deploy, cron].map((s) => createHash("sha256").update(s).digest("hex")));
    assert.ok(!JSON.stringify(await rawQuery(store, "SELECT * FROM tokens")).includes(read.slice(3)));

    // read: GET anything, change nothing.
    assert.equal((await d.api("GET", "/services", undefined, as(read))).status, 200);
    const readPut = await d.api("PUT", "/services/web-01", heartbeat, as(read));
    assert.equal(readPut.status, 403);
    assert.match(readPut.body.detail, /PUT \/services\/web-01 needs a token of scope write or above; token "grafana" has scope read/);
    assert.equal((await d.api("GET", "/tokens", undefined, as(read))).status, 403, "tokens are an admin's");

    // write on web-01: its server only, and nothing that covers every server.
    assert.equal((await d.api("PUT", "/services/web-01", { name: "Web", ...heartbeat }, as(deploy))).status, 200);
    const other = await d.api("PUT", "/services/db-01", heartbeat, as(deploy));
    assert.equal(other.status, 403);
    assert.match(other.body.detail, /is on server db-01; token "deploy-web" is limited to server web-01/);
    assert.match((await d.api("GET", "/services", undefined, as(deploy))).body.detail, /covers every server; .*GET \/services\/\{serverId\}/);
    assert.equal((await d.api("GET", "/services/web-01/backup", undefined, as(deploy))).status, 200);
    assert.equal((await d.api("POST", "/silences", { server: "db-01", durationSeconds: 60 }, as(deploy))).status, 403);
    const silence = await d.api("POST", "/silences", { server: "web-01", durationSeconds: 60 }, as(deploy));
    assert.equal(silence.status, 201);
    const dbSilence = await d.api("POST", "/silences", { server: "db-01", durationSeconds: 60 }, admin);
    // Another server's silence answers as one that does not exist (issue 78: nothing learnt of other servers).
    assert.equal((await d.api("DELETE", `/silences/${dbSilence.body.id}`, undefined, as(deploy))).status, 404);
    assert.equal((await d.api("DELETE", `/silences/${silence.body.id}`, undefined, as(deploy))).status, 204);
    assert.equal((await d.api("GET", "/incidents?server=web-01", undefined, as(deploy))).status, 200);
    assert.equal((await d.api("GET", "/incidents", undefined, as(deploy))).status, 403);

    // ping: by name, on its server, and nothing else.
    assert.equal((await d.api("GET", "/services/web-01", undefined, as(cron))).status, 403);
    for (const suffix of ["/start", "", "/0", "/log"]) {
      const ping = await d.api("POST", `/ping/web-01/backup${suffix}`, "nightly", { ...as(cron), "content-type": "text/plain" });
      assert.deepEqual([ping.status, ping.body], [200, "OK"], suffix);
    }
    assert.equal((await d.api("GET", "/ping/db-01/backup", undefined, as(cron))).status, 403);
    assert.equal((await d.api("GET", "/ping/web-01/nope", undefined, as(cron))).status, 404);
    // Without a token a name is read as a slug URL's server ping key, which it is not: Healthchecks.io's 404.
    const forgot = await d.api("GET", "/ping/web-01/backup");
    assert.deepEqual([forgot.status, forgot.body], [404, "not found"]);
    assert.equal((await d.api("GET", "/ping/web-01/backup/start")).status, 404);
    assert.equal((await d.api("GET", "/ping/web-01/backup", undefined, as(read))).status, 403, "a read token may not ping");
    const entries = await until(
      async () => (await d.api("GET", "/services/web-01/backup/data", undefined, admin)).body.entries as any[],
      (e) => e.length === 4,
      "the four pings by name stored",
    );
    assert.deepEqual(entries.map((e) => e.kind).reverse(), ["start", "success", "exit", "log"]);
    assert.equal(entries[0].body, "nightly");

    // Unknown and revoked tokens are 401; a bad body is 400 naming the field; a name is used once.
    assert.equal((await d.api("GET", "/services", undefined, as("hd_nope"))).status, 401);
    const bad = await d.api("POST", "/tokens", { name: "x", scope: "root", servers: [] }, admin);
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: any) => e.path).sort(), ["/scope", "/servers"]);
    assert.equal((await d.api("POST", "/tokens", { name: "grafana", scope: "read" }, admin)).status, 409);
    const id = listed.find((x: any) => x.name === "grafana").id;
    assert.equal((await d.api("DELETE", `/tokens/${id}`, undefined, admin)).status, 204);
    assert.equal((await d.api("GET", "/services/web-01", undefined, as(read))).status, 401);
    assert.equal((await d.api("DELETE", `/tokens/${id}`, undefined, admin)).status, 404);
  });
}

test("postgres: a token revoked through one node is refused by the other at once", async (t) => {
  const db = await testDatabase(t, "postgres");
  const a = await testDaemon(t, { db, node: "a" });
  const b = await testDaemon(t, { db, node: "b" });
  const made = await a.api("POST", "/tokens", { name: "ops", scope: "admin" });
  assert.equal(made.status, 201);
  // Once a token exists, the API needs one: on both nodes.
  assert.equal((await b.api("GET", "/services")).status, 401);
  assert.equal((await b.api("GET", "/services", undefined, as(made.body.token))).status, 200);
  assert.equal((await a.api("DELETE", `/tokens/${made.body.id}`, undefined, as(made.body.token))).status, 204);
  assert.equal((await b.api("GET", "/services", undefined, as(made.body.token))).status, 200, "no token left: the API is open again");
  const reader = await b.api("POST", "/tokens", { name: "reader", scope: "read" });
  assert.equal((await b.api("POST", "/tokens", { name: "keep", scope: "admin" }, as(reader.body.token))).status, 403, "a read token may not make tokens");
  const third = await runHealthd(["token", "create", "ops3", "--scope", "admin", "--db", db]);
  assert.equal(third.code, 0, third.stderr);
  const secret = third.stdout.trim();
  assert.equal((await a.api("GET", "/services", undefined, as(secret))).status, 200);
  assert.equal((await runHealthd(["token", "revoke", "ops3", "--db", db])).code, 0);
  assert.equal((await a.api("GET", "/services", undefined, as(secret))).status, 401);
  assert.equal((await b.api("GET", "/services", undefined, as(secret))).status, 401);
});

test("healthd token create, list and revoke; ping and run by name with a ping token", async (t) => {
  const db = tempDbPath(t);
  const d = await testDaemon(t, { db });
  assert.equal((await d.api("PUT", "/services/web-01", heartbeat)).status, 201);

  const reader = (await runHealthd(["token", "create", "reader", "--scope", "read", "--db", db])).stdout.trim();
  const created = await runHealthd(["token", "create", "cron", "--scope", "ping", "--server", "web-01", "--db", db]);
  assert.equal(created.code, 0, created.stderr);
  const secret = created.stdout.trim();
  assert.match(secret, /^hd_/);
  assert.match(created.stderr, /token cron \(id 2, ping on web-01\); the line above is its secret, shown this once/);
  const listed = await runHealthd(["token", "list", "--db", db]);
  assert.equal(listed.stdout.split("\n")[0], "ID  NAME    SCOPE  SERVERS  CREATED");
  assert.match(listed.stdout, /^2 {3}cron {4}ping {3}web-01 {3}\d{4}-/m);
  assert.ok(!listed.stdout.includes(secret.slice(3)));
  assert.deepEqual(JSON.parse((await runHealthd(["token", "list", "--json", "--db", db])).stdout).tokens.map((x: any) => x.name), ["reader", "cron"]);

  const env = { HEALTHD_URL: d.url, HEALTHD_TOKEN: secret };
  const ran = await runHealthd(["run", "web-01/backup", "--", "sh", "-c", "echo done"], env);
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stderr, "", "no warning: both pings went by name");
  assert.equal((await runHealthd(["ping", "web-01/backup", "--log", "rotated"], env)).code, 0);
  const refused = await runHealthd(["ping", "db-01/backup"], env);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /403: a ping of db-01\/backup is on server db-01; token "cron" is limited to server web-01/);
  const entries = await until(
    async () => (await d.api("GET", "/services/web-01/backup/data", undefined, as(reader))).body.entries as any[],
    (e) => e?.length === 3,
    "start, exit and log",
  );
  assert.deepEqual(entries.map((e) => e.kind).reverse(), ["start", "exit", "log"]);

  for (const [args, message] of [
    [["token", "create", "x", "--scope", "root"], /--scope.*Allowed choices are read, write, ping, admin/],
    [["token", "create", "x"], /required option '--scope <scope>'/],
    [["token", "create", "bad name", "--scope", "read"], /NAME must be 1 to 64 characters/],
    [["token", "create", "x", "--scope", "read", "--server", "a/b"], /--server must be 1 to 64 characters/],
    [["token", "create", "cron", "--scope", "read"], /a token is named cron; choose another name/],
    [["token", "revoke", "nope"], /no token "nope"; healthd token list shows them/],
  ] as const) {
    const run = await runHealthd([...args, "--db", db]);
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, message);
  }
  assert.equal((await runHealthd(["token", "revoke", "2", "--db", db])).stdout, "revoked token cron (id 2)\n");
  assert.equal((await runHealthd(["ping", "web-01/backup"], env)).code, 2, "revoked: the ping is refused");
});
