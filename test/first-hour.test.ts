/** What a first-time user tripped on: messages that name the value and the fix. */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createLogger } from "../src/log.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
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
