/** What a first-time user tripped on: messages that name the value and the fix. */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createLogger } from "../src/platform/log.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { testDatabase } from "./support/databases.ts";
import { until } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

test("--db that is neither a path nor a postgres:// URL, or whose folder does not exist, is exit 2 naming it", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "s.yaml");
  writeFileSync(file, "web-01: {services: []}\n");
  for (const command of ["migrate", "apply", "export", "check", "serve"]) {
    const args = command === "apply" ? [command, file] : [command];
    const url = await runHealthd([...args, "--db", "mysql://db/healthd"]);
    assert.equal(url.code, 2, `${command}: ${url.stderr}`);
    assert.match(url.stderr, /--db mysql:\/\/db\/healthd is neither a SQLite file nor a postgres:\/\/ URL: give a path such as/);
    const missing = await runHealthd([...args, "--db", join(dir, "no/such/healthd.db")]);
    assert.equal(missing.code, 2, `${command}: ${missing.stderr}`);
    assert.match(missing.stderr, /the folder .*no\/such does not exist; create it \(mkdir -p .*no\/such\) or choose another path/);
  }
  assert.ok(!existsSync(join(dir, "no")));
  assert.ok(!existsSync(join(dir, "mysql:")));
});

test("a command without --db or HEALTHD_DB (or with it empty) says which database file it used", async (t) => {
  const dir = tempDir(t);
  assert.equal((await runHealthd(["migrate"], {}, dir)).code, 0);
  const exported = await runHealthd(["export"], { HEALTHD_DB: "" }, dir);
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(exported.stderr, `healthd: using ${join(dir, "healthd.db")} (no --db or HEALTHD_DB given)\n`);
  const named = await runHealthd(["export", "--db", join(dir, "healthd.db")], {}, dir);
  assert.equal(named.stderr, "");
  const fromEnv = await runHealthd(["export"], { HEALTHD_DB: join(dir, "healthd.db") }, dir);
  assert.equal(fromEnv.stderr, "");
});

test("only --ntfy-topic: the start says, once, that notifications go to the public ntfy.sh", async (t) => {
  const lines: string[] = [];
  await testDaemon(t, { ntfy: { url: "https://ntfy.sh", topic: "my-alerts" }, log: createLogger({ write: (line) => lines.push(line) }) });
  assert.equal(lines.filter((l) => /notifications go to the public server https:\/\/ntfy\.sh, topic my-alerts: anyone who knows or guesses/.test(l)).length, 1);
  const own: string[] = [];
  await testDaemon(t, { ntfy: { url: "https://ntfy.example.org", topic: "my-alerts" }, log: createLogger({ write: (line) => own.push(line) }) });
  assert.ok(!own.some((l) => /public server/.test(l)));
});

test("the log says who changed what through the API, when another process changed the configuration, and nodes joining and leaving", async (t) => {
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line) });
  const db = await testDatabase(t, "postgres");
  const a = await testDaemon(t, { db, node: "a", log, token: "the-daemons-token-01234" });
  const put = await a.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: "http://127.0.0.1:1/" } }] }, { authorization: "Bearer the-daemons-token-01234" });
  assert.equal(put.status, 201);
  assert.ok(lines.some((l) => /PUT \/services\/web-01 by --token .*status=201/.test(l)), lines.join("\n"));
  assert.ok(!lines.some((l) => /GET /.test(l)), "reads are not logged");

  const dir = tempDir(t);
  writeFileSync(join(dir, "s.yaml"), `db-01: {services: [{id: pg, check: {type: tcp, host: 127.0.0.1, port: 1}}]}\n`);
  assert.equal((await runHealthd(["apply", join(dir, "s.yaml"), "--db", db])).code, 0);
  await until(async () => lines.some((l) => /the configuration changed in the database \(healthd apply, or another node's API\); following it started=1 stopped=0/.test(l)), Boolean, "the log line of the apply");

  const joined: string[] = [];
  const b = await testDaemon(t, { db, node: "b", log: createLogger({ write: (line) => joined.push(line) }) });
  // The node that joins takes its share, and a node says how many checks moved: the one whose rebalance runs
  // first, the joining node at its start or the other when it hears of the join.
  const moved = () => [...lines, ...joined].filter((l) => /rebalanced the checks: 1 moved/.test(l)).length;
  await until(async () => moved(), (n) => n > 0, "a node saying one check moved");
  await until(async () => lines.some((l) => /node b joined/.test(l)), Boolean, "a saying b joined");
  await b.stop();
  await until(async () => lines.some((l) => /node b left/.test(l)), Boolean, "a saying b left");
});
