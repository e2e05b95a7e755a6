import assert from "node:assert/strict";
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { healthdBin, runHealthd, serveHealthd } from "./support/cli.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";

test("healthd --help lists the commands that work", async () => {
  const { code, stdout } = await runHealthd(["--help"]);
  assert.equal(code, 0);
  const commands = [...stdout.matchAll(/^  (\w+) /gm)].map((m) => m[1]);
  assert.deepEqual(commands, ["serve", "check", "apply", "silence", "ack", "announce", "report", "export", "import", "tail", "migrate", "copy", "run", "ping", "token", "channel", "help"]);
  const serve = await runHealthd(["serve", "--help"]);
  assert.match(serve.stdout, /HEALTHD_PORT/);
  assert.match(serve.stdout, /Examples:/);
});

test("healthd migrate creates the database, then has nothing to do", async (t) => {
  const db = tempDbPath(t);
  const first = await runHealthd(["migrate", "--db", db]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /applied \d{14}_create_health_check_tables/);
  const second = await runHealthd(["migrate", "--json"], { HEALTHD_DB: db });
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(JSON.parse(second.stdout).applied, []);
});

test("bad usage exits 2 with a message", async () => {
  const port = await runHealthd(["serve", "--port", "http"]);
  assert.equal(port.code, 2);
  assert.match(port.stderr, /port must be an integer from 0 to 65535/);
  const unknown = await runHealthd(["frobnicate"]);
  assert.equal(unknown.code, 2);
});

test("healthd serve answers the API, reads HEALTHD_* and stops cleanly on SIGTERM and SIGINT", async (t) => {
  const db = tempDbPath(t);
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    const served = await serveHealthd(t, [], { HEALTHD_DB: db, HEALTHD_HOST: "127.0.0.1" });
    const health = await fetch(served.url + "/healthz");
    assert.equal(health.status, 200);
    const put = await fetch(served.url + "/services/web-01", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ services: [{ id: "home", check: { url: "http://127.0.0.1:9/" } }] }),
    });
    assert.ok(put.status === 201 || put.status === 200);
    assert.equal(await served.stop(signal), 0, served.log());
    assert.match(served.log(), /stopped/);
  }
  const list = await runHealthd(["migrate", "--db", db, "--json"]);
  assert.deepEqual(JSON.parse(list.stdout).applied, []);
});

test("healthd serve refuses a database from a newer healthd with exit 2", async (t) => {
  const db = tempDbPath(t);
  await runHealthd(["migrate", "--db", db]);
  const { default: Database } = await import("better-sqlite3");
  const raw = new Database(db);
  raw.exec(`INSERT INTO kysely_migration VALUES ('29990101000000_future', '2999-01-01')`);
  raw.close();
  const served = await runHealthd(["serve", "--db", db, "--port", "0"]);
  assert.equal(served.code, 2);
  assert.match(served.stderr, /newer healthd/);
});

test("ntfy credentials come whole: a user without a password, or beside a token, is exit 2", async () => {
  for (const [args, message] of [
    [["--ntfy-user", "healthd"], /--ntfy-user needs --ntfy-password/],
    [["--ntfy-password", "x"], /--ntfy-password needs --ntfy-user/],
    [["--ntfy-user", "u", "--ntfy-password", "p", "--ntfy-token", "tk_x"], /either a token .* or a user and password/],
  ] as const) {
    const run = await runHealthd(["serve", "--port", "0", "--db", "/nonexistent/never/made.db", ...args]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, message);
  }
});

test("a closed output ends a command quietly; every error line starts with healthd:", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  writeFileSync(join(dir, "s.yaml"), `w:\n  services:\n${Array.from({ length: 40 }, (_, i) => `  - {id: s${i}, check: {url: "http://127.0.0.1:9/${i}"}}\n`).join("")}`);
  assert.equal((await runHealthd(["apply", join(dir, "s.yaml"), "--db", db])).code, 0);
  const piped = spawnSync("sh", ["-c", `"${process.execPath}" "${healthdBin}" check --db "${db}" --json | head -1; exit \${PIPESTATUS:-0}`], { encoding: "utf8" });
  assert.equal(piped.stderr, "", "no EPIPE stack trace");
  assert.equal(piped.stdout.trim().split("\n").length, 1);
  for (const args of [["frobnicate"], ["check", "--bogus"], ["--debug", "check", "--concurrency", "x"], ["tail", "nope", "--db", db, "--json"], ["export", "--db", join(dir, "none.db")]]) {
    const run = await runHealthd(args);
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, /^healthd: /, args.join(" "));
    assert.doesNotMatch(run.stderr, /\n\s+at /, "no stack trace");
  }
});
