/** check, apply, export and tail, run as the built executable. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { healthdBin, runHealthd, serveHealthd } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget, switchableTarget } from "./support/targets.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";
import { open } from "./support/raw.ts";

const serversYaml = (url: string) => `# two servers
web-01:
  name: Web
  groupThreshold: 0
  services:
    - id: home
      check: {url: "${url}/ok", expect: [{status: 200, bodyContains: Welcome}]}
    - id: teapot
      check:
        url: "${url}/teapot"
        notifyThreshold: 5
db-01:
  services:
    - id: pg
      check: {url: "${url}/json", cron: "*/5 * * * *", expect: [{json: {path: $.status, equals: up}}]}
`;

test("apply, export, apply again: the round trip changes nothing; --dry-run and --prune", async (t) => {
  const target = await httpTarget(t);
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  const file = join(dir, "servers.yaml");
  writeFileSync(file, serversYaml(target.url));

  const dry = await runHealthd(["apply", file, "--db", db, "--dry-run", "--json"]);
  assert.equal(dry.code, 0, dry.stderr);
  const { servers: dryServers, ...drySummary } = JSON.parse(dry.stdout);
  assert.deepEqual(drySummary, { dryRun: true, created: ["web-01", "db-01"], updated: [], unchanged: [], deleted: [], channels: [] });
  assert.deepEqual(dryServers[0].services, { created: ["home", "teapot"], updated: [], deleted: [] });
  const empty = await runHealthd(["export", "--db", db, "--json"]);
  assert.deepEqual(JSON.parse(empty.stdout), {});

  const applied = await runHealthd(["apply", file, "--db", db]);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(applied.stdout, "web-01: created (2 services)\ndb-01: created (1 service)\n");

  const exported = await runHealthd(["export", "--db", db]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, /notifyThreshold: 5/);
  assert.match(exported.stdout, /^  groupThreshold: 0$/m, "a server's groupThreshold other than 5");
  // Defaults are left out, as a person writes the file: the round trip below still changes nothing.
  assert.doesNotMatch(exported.stdout, /timeoutMs|dependsOn|followRedirects|verifyTls|paused|type: http|locations/);
  const exportFile = join(dir, "exported.yaml");
  writeFileSync(exportFile, exported.stdout);
  const again = await runHealthd(["apply", exportFile, "--db", db, "--json"]);
  const { servers: _, ...againSummary } = JSON.parse(again.stdout);
  assert.deepEqual(againSummary, { dryRun: false, created: [], updated: [], unchanged: ["db-01", "web-01"], deleted: [], channels: [] });

  // A dry run of a changed file says which services change and which of their fields.
  const changed = join(dir, "changed.yaml");
  writeFileSync(changed, serversYaml(target.url).replace(`${target.url}/ok`, `${target.url}/ok?v=2`).replace(/    - id: teapot\n[\s\S]*?(?=db-01:)/, ""));
  const preview = await runHealthd(["apply", changed, "--db", db, "--dry-run"]);
  assert.equal(preview.code, 0, preview.stderr);
  assert.match(preview.stdout, /^web-01: would be updated\n  ~ home \(check\.url\)\n  - teapot\n/m);
  assert.match(preview.stdout, /^db-01: would be unchanged$/m);
  // A change of the server itself (its name, its maintenance windows) is said too.
  writeFileSync(changed, serversYaml(target.url).replace("db-01:\n", 'db-01:\n  name: Databases\n  maintenance: [{cron: "0 3 * * *", durationMinutes: 30}]\n'));
  const windows = await runHealthd(["apply", changed, "--db", db, "--dry-run"]);
  assert.match(windows.stdout, /^db-01: would be updated\n  ~ the server \(name, maintenance\)\n/m, windows.stdout + windows.stderr);
  assert.match(preview.stdout, /dry run: nothing was changed/);
  const json = await runHealthd(["export", "--db", db, "--json"]);
  assert.deepEqual(Object.keys(JSON.parse(json.stdout)), ["db-01", "web-01"]);

  writeFileSync(file, serversYaml(target.url).split("db-01:")[0]!);
  const pruned = await runHealthd(["apply", file, "--db", db, "--prune", "--json"]);
  assert.deepEqual(JSON.parse(pruned.stdout).deleted, ["db-01"]);
});

test("the README's quick start applies as written", async (t) => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const file = /<<'YAML'\n([\s\S]*?)\nYAML\n/.exec(readme)?.[1];
  assert.ok(file, "the quick start's servers.yaml");
  const dir = tempDir(t);
  writeFileSync(join(dir, "servers.yaml"), file + "\n");
  const applied = await runHealthd(["apply", "servers.yaml", "--db", "h.db"], {}, dir);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(applied.stdout, "web-01: created (2 services)\n");
});

test("apply refuses a bad file whole, naming file, line, column and field", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  const file = join(dir, "bad.yaml");
  writeFileSync(file, `good:\n  services: []\nweb-01:\n  services:\n    - id: home\n      check:\n        url: ftp://x/\n        intervalSecs: 5\n`);
  const bad = await runHealthd(["apply", file, "--db", db]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, new RegExp(`${file}:7:14: /web-01/services/0/check/url: must use http or https`));
  assert.match(bad.stderr, new RegExp(`${file}:8:23: /web-01/services/0/check/intervalSecs: is not a known field`));
  assert.match(bad.stderr, /nothing was applied/);
  writeFileSync(file, "web-01: [unclosed\n");
  const broken = await runHealthd(["apply", file, "--db", db]);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, new RegExp(`${file}:2:1: `));
  assert.equal((await runHealthd(["apply", join(dir, "missing.yaml"), "--db", db])).code, 2);
  // Refused before anything was opened: not even the database file was created.
  assert.deepEqual(readdirSync(dir).sort(), ["bad.yaml"]);
});

test("apply fills ${NAME} and ${NAME:-default} from the environment; $$ is a dollar; export writes them back escaped", async (t) => {
  const target = await httpTarget(t);
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  const file = join(dir, "vars.yaml");
  writeFileSync(
    file,
    [
      "web-01:",
      "  name: ${SERVER_NAME:-Web}",
      "  services:",
      "    - id: home",
      '      check: {url: "${TARGET}/ok", intervalSeconds: ${INTERVAL}, expect: [{bodyContains: "cost: $$5 ${X}$$ $"}]}',
      "",
    ].join("\n"),
  );
  // Both unset names are said, with their lines; nothing is opened.
  const unset = await runHealthd(["apply", file, "--db", db], { TARGET: target.url });
  assert.equal(unset.code, 2, unset.stderr);
  assert.match(unset.stderr, new RegExp(`${file}:5:53: \\$\\{INTERVAL\\} is not set: set INTERVAL in the environment`));
  assert.match(unset.stderr, new RegExp(`${file}:5:\\d+: \\$\\{X\\} is not set`));
  assert.deepEqual(readdirSync(dir), ["vars.yaml"]);

  const applied = await runHealthd(["apply", file, "--db", db], { TARGET: target.url, INTERVAL: "45", X: "${Y}" });
  assert.equal(applied.code, 0, applied.stderr);
  const exported = await runHealthd(["export", "--db", db, "--json"]);
  const check = JSON.parse(exported.stdout.replaceAll("$$", "$"))["web-01"].services[0].check;
  assert.equal(JSON.parse(exported.stdout.replaceAll("$$", "$"))["web-01"].name, "Web");
  assert.equal(check.url, `${target.url}/ok`);
  assert.equal(check.intervalSeconds, 45);
  // A value is not read again: X's "${Y}" is stored as it is, and export escapes it so apply keeps it.
  assert.deepEqual(check.expect, [{ bodyContains: "cost: $5 ${Y}$ $" }]);
  writeFileSync(join(dir, "back.json"), exported.stdout);
  const again = await runHealthd(["apply", join(dir, "back.json"), "--db", db, "--json"]);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout).unchanged, ["web-01"]);

  writeFileSync(file, "web-01:\n  name: ${bad name}\n");
  const malformed = await runHealthd(["apply", file, "--db", db]);
  assert.equal(malformed.code, 2);
  assert.match(malformed.stderr, /vars\.yaml:2:9: \$\{bad name\} is not a variable: write \$\{NAME\}/);
});

test("check says a paused service is paused, and which it skipped of a server", async (t) => {
  const target = await httpTarget(t);
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  writeFileSync(
    join(dir, "s.yaml"),
    `web-01:\n  services:\n    - {id: home, check: {url: "${target.url}/ok"}}\n    - {id: old, check: {url: "${target.url}/ok", paused: true}}\n` +
      `archive:\n  services:\n    - {id: a, check: {url: "${target.url}/ok", paused: true}}\n    - {id: b, check: {url: "${target.url}/ok", paused: true}}\n`,
  );
  assert.equal((await runHealthd(["apply", join(dir, "s.yaml"), "--db", db])).code, 0);
  const one = await runHealthd(["check", "web-01/old", "--db", db]);
  assert.equal(one.code, 2);
  assert.equal(one.stderr, "healthd: web-01/old is paused (paused: true), so it is not checked; unpause it to check it\n");
  const server = await runHealthd(["check", "web-01", "--db", db]);
  assert.equal(server.code, 0, server.stderr);
  assert.match(server.stdout, /web-01\/home/);
  assert.doesNotMatch(server.stdout, /web-01\/old/);
  assert.equal(server.stderr, "healthd: skipped 1 paused: web-01/old\n");
  const archive = await runHealthd(["check", "archive", "--db", db]);
  assert.equal(archive.code, 2);
  assert.match(archive.stderr, /every service of archive is paused \(archive\/a, archive\/b\), so none is checked/);
  assert.match((await runHealthd(["check", "web-01/nope", "--db", db])).stderr, /server web-01 has no service nope/);
});

test("check: exit 0 when all pass, 1 when one fails, 2 for an unknown target; --json lines; --record", async (t) => {
  const target = await httpTarget(t);
  const dir = tempDir(t);
  const db = join(dir, "h.db");
  writeFileSync(join(dir, "s.yaml"), serversYaml(target.url));
  await runHealthd(["apply", join(dir, "s.yaml"), "--db", db]);

  const home = await runHealthd(["check", "web-01/home", "--db", db]);
  assert.equal(home.code, 0, home.stderr);
  assert.match(home.stdout, /^ok {3}web-01\/home {2} *\d+\.\d ms {2}200\n$/);
  const all = await runHealthd(["check", "--db", db, "--json"]);
  assert.equal(all.code, 1);
  const lines = all.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, 3);
  const teapot = lines.find((l) => l.service === "teapot");
  assert.deepEqual([teapot.server, teapot.ok, teapot.status, teapot.errorKind], ["web-01", false, 418, "status"]);
  // Text: in the stored order whichever answers first, names and latencies in columns.
  const text = (await runHealthd(["check", "--db", db])).stdout.split("\n").filter(Boolean);
  assert.deepEqual(text.map((l) => l.split(/ +/)[1]), lines.map((l) => `${l.server}/${l.service}`));
  assert.equal(new Set(text.map((l) => l.indexOf(" ms "))).size, 1, text.join("\n"));
  assert.equal((await runHealthd(["check", "nope", "--db", db])).code, 2);
  assert.equal((await runHealthd(["check", "web-01/nope", "--db", db])).code, 2);

  const before = await runHealthd(["export", "--db", db]);
  const recorded = await runHealthd(["check", "db-01", "--db", db, "--record"]);
  assert.equal(recorded.code, 0, recorded.stderr);
  assert.equal((await runHealthd(["check", "web-01/teapot", "--db", db, "--record"])).code, 1);
  // --record goes the daemon's way: the entry with the service's state and its hourly rollup.
  const store = await open(db, { mode: "read" });
  try {
    const [pg] = await store.services({ serverId: "db-01" });
    assert.deepEqual([pg!.state?.status, pg!.state?.consecutiveFailures, pg!.lastEntry?.ok], ["up", 0, true]);
    const teapot = (await store.services({ serverId: "web-01" })).find((s) => s.id === "teapot")!;
    assert.deepEqual([teapot.state?.status, teapot.state?.consecutiveFailures, teapot.lastEntry?.status], ["down", 1, 418]);
    const rollups = await store.rollups(teapot.key, 0);
    assert.deepEqual([rollups.reduce((n, r) => n + r.checks, 0), (await store.readEntries(teapot.key, { limit: 10 })).entries.length], [1, 1]);
  } finally {
    await store.close();
  }
  assert.equal((await runHealthd(["export", "--db", db])).stdout, before.stdout);
});

test("check --url runs an ad-hoc check without a database", async (t) => {
  const target = await httpTarget(t);
  const cwd = tempDir(t);
  const healthd = (args: string[]) => runHealthd(args, {}, cwd);
  const run = (args: string[]) => healthd(["check", ...args]);
  const ok = await run(["--url", `${target.url}/echo`, "--method", "post", "--header", "x-probe: yes", "--expect", '[{"json": {"path": "$.headers[\'x-probe\']", "equals": "yes"}}]']);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  const failed = await run(["--url", `${target.url}/teapot`, "--json"]);
  assert.equal(failed.code, 1);
  assert.equal(JSON.parse(failed.stdout).errorKind, "status");
  const timeout = await run(["--url", `${target.url}/slow-headers`, "--timeout", "200"]);
  assert.equal(timeout.code, 1);
  assert.match(timeout.stdout, /timeout: no complete answer within 200 ms/);
  const badExpect = await run(["--url", target.url, "--expect", '[{"status": "6xx"}]']);
  assert.equal(badExpect.code, 2);
  assert.match(badExpect.stderr, /--expect \/0\/status: must be a status code/);
  assert.equal((await run(["--url", "ftp://x/"])).code, 2);
  assert.equal((await run(["--header", "a:b"])).code, 2);
  // --body, and redirects not followed: the redirect itself is what the check sees.
  const posted = await run(["--url", `${target.url}/echo`, "--method", "POST", "--body", "hello", "--expect", '[{"json": {"path": "$.body", "equals": "hello"}}]']);
  assert.equal(posted.code, 0, posted.stdout + posted.stderr);
  const redirect = await run(["--url", `${target.url}/hops/1`, "--no-follow", "--expect", '[{"status": 302}]']);
  assert.equal(redirect.code, 0, redirect.stdout + redirect.stderr);
  assert.equal((await run(["--url", `${target.url}/hops/1`, "--expect", '[{"status": 302}]'])).code, 1);
  // One alternative may be given alone, without the list.
  assert.equal((await run(["--url", `${target.url}/hops/1`, "--no-follow", "--expect", '{"status": 302}'])).code, 0);
  assert.equal((await run(["--url", `${target.url}/hops/1`, "--no-follow", "--expect", '{"status": 200}'])).code, 1);
  assert.equal((await run(["--insecure"])).code, 2);
  // A value that looks like healthd's own flag is the value: this check has a bad concurrency, it does not ask
  // for the version.
  const looksLikeAFlag = await run(["--url", target.url, "--concurrency", "-V"]);
  assert.equal(looksLikeAFlag.code, 2, looksLikeAFlag.stdout + looksLikeAFlag.stderr);
  assert.match(looksLikeAFlag.stderr, /--concurrency must be an integer from 1 to 1000 \(got "-V"\)/);
  const debugAsValue = await run(["--url", target.url, "--concurrency", "--debug"]);
  assert.equal(debugAsValue.code, 2, debugAsValue.stdout + debugAsValue.stderr);
  assert.match(debugAsValue.stderr, /--concurrency must be an integer from 1 to 1000 \(got "--debug"\)/);
  // --debug itself stands before the subcommand or after it.
  for (const args of [["--debug", "check", "--url", `${target.url}/echo`], ["check", "--url", `${target.url}/echo`, "--debug"]]) {
    const debug = await healthd(args);
    assert.equal(debug.code, 0, `${args.join(" ")}: ${debug.stderr}`);
  }
  assert.deepEqual(readdirSync(cwd), [], "an ad-hoc check creates no database");
});

test("check, tail and export refuse a missing or unmigrated database with exit 2", async (t) => {
  const db = tempDbPath(t);
  for (const command of ["check", "export", "tail"]) {
    const missing = await runHealthd([command, "--db", db]);
    assert.equal(missing.code, 2, command);
    assert.match(missing.stderr, /healthd migrate --db/);
  }
  const { default: Database } = await import("better-sqlite3");
  new Database(db).close();
  const unmigrated = await runHealthd(["check", "--db", db]);
  assert.equal(unmigrated.code, 2);
  assert.match(unmigrated.stderr, /needs \d+ migration\(s\); run: healthd migrate/);
});

for (const engine of engines) {
  test(`${engine}: tail --json follows what a running daemon stores; apply reaches the running daemon`, async (t) => {
    const target = await switchableTarget(t);
    target.setUp(true);
    const db = await testDatabase(t, engine);
    const served = await serveHealthd(t, ["--db", db]);
    // All services: web-01 does not exist yet (tail web-01 would be exit 2 now, as check web-01 is).
    const tail = spawn(process.execPath, [healthdBin, "tail", "--json", "--db", db]);
    t.after(() => tail.kill());
    const lines: Record<string, unknown>[] = [];
    const arrived = new (await import("node:events")).EventEmitter();
    let buffer = "";
    tail.stdout.on("data", (d: Buffer) => {
      buffer += d;
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        lines.push(JSON.parse(buffer.slice(0, i)));
        buffer = buffer.slice(i + 1);
        arrived.emit("line");
      }
    });

    // The service comes from a file applied by another process while the daemon runs.
    const dir = tempDir(t);
    writeFileSync(join(dir, "s.yaml"), `web-01:\n  services:\n    - id: home\n      check: {url: "${target.url}", intervalSeconds: 1}\n`);
    const applied = await runHealthd(["apply", join(dir, "s.yaml"), "--db", db]);
    assert.equal(applied.code, 0, applied.stderr);
    await nextEvent(arrived, "line", () => lines.length >= 2);
    assert.deepEqual(Object.keys(lines[0]!), ["server", "service", "id", "checkedAt", "ok", "status", "latencyMs", "errorKind", "error", "matched", "location", "type", "kind", "exitCode", "durationMs", "body", "answers", "method", "userAgent", "remoteAddr", "scheme", "rid"]);
    assert.deepEqual([lines[0]!.server, lines[0]!.service, lines[0]!.ok], ["web-01", "home", true]);
    assert.ok(Number(lines[1]!.id) > Number(lines[0]!.id));
    assert.equal(await served.stop(), 0);
  });
}

test("the documented systemd unit passes systemd-analyze verify", async (t) => {
  const unit = readFileSync(new URL("../contrib/systemd/healthd.service", import.meta.url), "utf8");
  const guide = readFileSync(new URL("../docs/guide/install.md", import.meta.url), "utf8");
  assert.ok(guide.includes(unit.trim()), "docs/guide/install.md shows contrib/systemd/healthd.service as it is");
  const { execFileSync, spawnSync } = await import("node:child_process");
  assert.equal(spawnSync("systemd-analyze", ["--version"]).status, 0, "this test needs systemd-analyze: apt-get install systemd");
  assert.match(unit, /^ExecStart=healthd serve$/m, "a bare name, found in /usr/local/bin or /usr/bin");
  // verify looks the executable up; here it is this checkout's, and the user is one that exists here.
  const path = join(tempDir(t), "healthd.service");
  writeFileSync(path, unit.replace("ExecStart=healthd", `ExecStart=${healthdBin}`).replace(/^(User|Group)=healthd$/gm, "$1=root"));
  execFileSync("systemd-analyze", ["verify", path], { stdio: "pipe" });
});

test("too few open files at start (ulimit -n 200): a healthd: line naming the fix and exit 2, no stack", async (t) => {
  const child = spawn("bash", ["-c", 'ulimit -n 200 && exec "$0" "$@"', process.execPath, healthdBin, "serve", "--db", tempDbPath(t), "--port", "0"], {
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d));
  const [code] = await nextEvent<[number | null]>(child, "exit", () => true, 30_000);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /^healthd: too many open files \(EMFILE\): raise the limit of open files \(ulimit -n 4096, or LimitNOFILE=4096 under systemd\)/m);
  assert.doesNotMatch(stderr, /\n\s+at /, "no stack trace");
});
