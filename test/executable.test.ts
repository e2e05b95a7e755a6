/**
 * The single executable (npm run build:executable), built here and run alone in an empty folder, with no Node
 * on PATH and no node_modules: every kind of command works from it, tail's terminal view included.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { test } from "node:test";
import { migrationNames } from "../src/store/migrate.ts";
import { httpTarget, serveOnLoopback } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

const root = new URL("..", import.meta.url).pathname;
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

test("the single executable works alone: --version, migrate, apply, check, serve with its page, tail's terminal view", async (t) => {
  execFileSync(process.execPath, [join(root, "scripts/build-executable.mjs")], { stdio: ["ignore", "ignore", "pipe"] });
  const dir = tempDir(t);
  const empty = join(dir, "empty-path");
  mkdirSync(empty);
  const exe = join(dir, "healthd");
  copyFileSync(join(root, "dist", `healthd-linux-${process.arch}`), exe);
  execFileSync("chmod", ["755", exe]);
  // No Node, no node_modules: an empty PATH, a home of its own (where it unpacks), a folder with only itself.
  const env = { HOME: dir, PATH: empty, NO_COLOR: "1", TERM: "xterm", COLUMNS: "100", LINES: "20" };
  // Not execFileSync: the target answers from this process, which must not be blocked meanwhile.
  const run = async (args: string[]) => {
    const child = spawn(exe, args, { cwd: dir, env });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (err += d));
    const [code] = await once(child, "close");
    assert.equal(code, 0, `healthd ${args.join(" ")}: ${err}`);
    return out;
  };

  assert.equal((await run(["--version"])).trim(), version);
  // At the newest migration, whichever it is.
  assert.match(await run(["migrate", "--db", "./h.db"]), new RegExp(`is now at ${migrationNames.at(-1)}\n`));
  const target = await httpTarget(t);
  writeFileSync(join(dir, "s.yaml"), `web-01:\n  services:\n    - {id: home, check: {url: "${target.url}/ok", expect: [{bodyContains: Welcome}], domainWarnDays: 30}}\n`);
  assert.equal(await run(["apply", "s.yaml", "--db", "./h.db"]), "web-01: created (1 service)\n");
  assert.match(await run(["check", "--db", "./h.db"]), /^ok {3}web-01\/home {2} *\d+\.\d ms {2}200\n$/);
  // A pattern too costly for the event loop runs on the worker thread, whose file is unpacked beside healthd.
  const big = createServer((req, res) => res.end("ab".repeat(200_000) + "abbbbbbbbbbbbc"));
  const port = await serveOnLoopback(t, big);
  const costly = await run(["check", "--url", `http://127.0.0.1:${port}/`, "--expect", '[{"bodyMatches": "a[ab]{12}c"}]', "--json"]);
  assert.equal(JSON.parse(costly).ok, true, costly);

  const daemon = spawn(exe, ["serve", "--db", "./h.db", "--port", "0"], { cwd: dir, env });
  t.after(() => daemon.kill("SIGKILL"));
  let log = "";
  const url = await new Promise<string>((resolve, reject) => {
    daemon.stderr.on("data", (d: Buffer) => {
      log += d;
      const found = /listening url=(\S+)/.exec(log)?.[1];
      if (found) resolve(found);
    });
    daemon.once("exit", () => reject(new Error(`serve exited: ${log}`)));
  });
  assert.deepEqual(await (await fetch(url + "/healthz")).json(), { status: "ok", version });
  assert.equal((await fetch(url + "/status")).status, 200);

  // tail's terminal view, on a terminal (util-linux script makes one): the service and its last result.
  const tail = spawn("script", ["-qec", `${exe} tail --db ./h.db`, "/dev/null"], { cwd: dir, env: { ...env, PATH: "/usr/bin:/bin" } });
  let screen = "";
  tail.stdout.on("data", (d: Buffer) => (screen += d));
  await new Promise<void>((resolve, reject) => {
    const look = () => /web-01\/home/.test(screen) && /q quits/.test(screen) && resolve();
    tail.stdout.on("data", look);
    // A tail that ends before drawing its view fails the test with what it printed, rather than hanging it.
    tail.once("close", (code) => reject(new Error(`tail exited (${code}) before showing web-01/home:\n${screen}`)));
  });
  tail.stdin.write("q");
  await once(tail, "close");

  daemon.kill("SIGTERM");
  assert.deepEqual(await once(daemon, "exit"), [0, null]);
  assert.deepEqual(readdirSync(dir).sort(), [".cache", "empty-path", "h.db", "healthd", "s.yaml"]);
});
