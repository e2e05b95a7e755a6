/**
 * Heartbeats from the outside, as jobs report: pings from a real curl and from the built `healthd run` and
 * `healthd ping`, against a running daemon on both engines, with the answers Healthchecks.io's clients expect
 * and the bad input they may send. Deadlines fire on their own; pings sent while PostgreSQL is away are 503.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import { Pool } from "undici";
import type { CheckDone } from "../src/daemon.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { healthdBin, runHealthd, serveHealthd } from "./support/cli.ts";
import { nextEvent, until } from "./support/events.ts";
import { notifications, open } from "./support/raw.ts";
import { tempDir } from "./support/temp.ts";
import { tcpProxy, throughProxy } from "./support/tcp-proxy.ts";

const heartbeat = (check: object = {}) => ({ services: [{ id: "backup", check: { type: "heartbeat", periodSeconds: 3600, ...check } }] });

async function daemonWithHeartbeat(t: TestContext, engine: TestEngine, check: object = {}, db?: string): Promise<{ d: TestDaemon; key: string }> {
  const d = await testDaemon(t, { engine, ...(db ? { db } : {}) });
  const put = await d.api("PUT", "/services/db1", heartbeat(check));
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const key = put.body.services[0].check.pingKey;
  assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a random UUID");
  return { d, key };
}

/** curl as a job's crontab line calls it; answers the status, the headers and the body. */
async function curl(url: string, ...args: string[]): Promise<{ status: number; headers: string; body: string }> {
  const { stdout } = await promisify(execFile)("curl", ["-sS", "-m", "10", "-D", "-", ...args, url]).catch((error: { code?: string; stdout?: string }) => {
    if (error.code === "ENOENT") throw new Error("curl is not installed: apt-get install -y curl");
    throw error;
  });
  const split = stdout.lastIndexOf("\r\n\r\n");
  const headers = stdout.slice(0, split);
  return { status: Number(/^HTTP\/[\d.]+ (\d+)/m.exec(headers)?.[1]), headers, body: stdout.slice(split + 4) };
}

/** Wait until the service's entries, newest first, satisfy `accept`. */
const entriesUntil = (d: TestDaemon, accept: (entries: any[]) => boolean, what: string) =>
  until(async () => (await d.api("GET", "/services/db1/backup/data?limit=50")).body.entries as any[], accept, what);

for (const engine of engines) {
  test(`${engine}: pings from curl: every signal is an entry, OK with Ping-Body-Limit, bodies kept to 10,000 bytes`, async (t) => {
    const { d, key } = await daemonWithHeartbeat(t, engine);
    assert.equal((await d.api("GET", "/services/db1/backup")).body.state.status, "new");
    const ping = (suffix = "", ...args: string[]) => curl(`${d.url}/ping/${key}${suffix}`, ...args);

    const ok = await ping();
    assert.deepEqual([ok.status, ok.body], [200, "OK"]);
    assert.match(ok.headers, /^content-type: text\/plain; charset=utf-8$/im);
    assert.match(ok.headers, /^ping-body-limit: 10000$/im);
    assert.equal((await ping("", "-I")).status, 200, "HEAD");
    assert.equal((await ping("/start?rid=0B9F0C51-7A4E-4D3C-9A55-0A1F2B3C4D5E")).status, 200);
    assert.equal((await ping("/0?rid=0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e", "--data-binary", "x".repeat(25_000))).status, 200);
    assert.equal((await ping("/log", "--data-raw", "half way")).status, 200);
    assert.equal((await ping("/fail")).status, 200);
    assert.equal((await ping("/42")).status, 200);

    const entries = await entriesUntil(d, (e) => e.length === 7, "seven pings stored");
    assert.deepEqual(
      entries.reverse().map((e) => [e.type, e.kind, e.ok, e.errorKind, e.exitCode, e.body?.length ?? null]),
      [
        ["heartbeat", "success", true, null, null, null],
        ["heartbeat", "success", true, null, null, null],
        ["heartbeat", "start", true, null, null, null],
        ["heartbeat", "exit", true, null, 0, 10_000],
        ["heartbeat", "log", true, null, null, 8],
        ["heartbeat", "fail", false, "fail", null, null],
        ["heartbeat", "exit", false, "exit", 42, null],
      ],
    );
    assert.ok(entries[3].durationMs >= 0, "the run with a rid was paired with its start");
    const state = (await d.api("GET", "/services/db1/backup")).body.state;
    assert.equal(state.status, "down");
    assert.equal(state.lastPingAt, entries[6].checkedAt);
    assert.equal(Date.parse(state.nextDueAt), Date.parse(entries[6].checkedAt) + 3_600_000, "due a period after the last finish");
  });

  test(`${engine}: bad pings: unknown keys 404, bad exit codes and rids 400, a flood to one key 429 while others go on`, async (t) => {
    const { d, key } = await daemonWithHeartbeat(t, engine);
    const cases: [string, number, RegExp][] = [
      ["/ping/00000000-0000-4000-8000-000000000000", 404, /^not found/],
      ["/ping/not-a-key", 404, /^not found/],
      // Healthchecks.io's answers: a word that is no signal is a URL of nothing (404).
      [`/ping/${key}/256`, 400, /^invalid url format$/],
      [`/ping/${key}/-1`, 404, /^not found$/],
      [`/ping/${key}/1e2`, 404, /^not found$/],
      [`/ping/${key}/stop`, 404, /^not found$/],
      [`/ping/${key}?rid=123`, 400, /^invalid uuid format$/],
      [`/ping/${key}?rid=a&rid=b`, 400, /rid/],
    ];
    for (const [path, status, body] of cases) {
      const answer = await d.api("GET", path);
      assert.equal(answer.status, status, path);
      assert.match(typeof answer.body === "string" ? answer.body : answer.body.detail, body, path);
    }
    assert.equal((await d.api("PUT", "/ping/" + key)).status, 405);

    const other = (await d.api("PUT", "/services/db1/other", { check: { type: "heartbeat", periodSeconds: 60 } })).body.check.pingKey;
    // Over 100 connections, below the daemon's bound of 256: each answer waits for its commit, and 600 at once
    // would spend seconds taking each other's places (spread so, the flood stays under the rate). 2,000 of
    // them: past the burst and the refill unless the machine takes fewer than 110 pings a second.
    const flood = new Pool(d.url, { connections: 100 });
    t.after(() => flood.close());
    const floodStart = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 2000 }, () =>
        flood.request({ path: `/ping/${key}`, method: "GET" }).then(async (r) => ({ status: r.statusCode, retry: r.headers["retry-after"], body: await r.body.text() })),
      ),
    );
    const refused = answers.filter((a) => a.status === 429);
    t.diagnostic(`flood: ${refused.length} of 2000 refused in ${Math.round(performance.now() - floodStart)} ms`);
    assert.ok(refused.length > 0 && answers.filter((a) => a.status === 200).length >= 100, `at least 100 taken, then 429 (${refused.length} of 2000 refused)`);
    assert.deepEqual([refused[0]!.retry, refused[0]!.body], ["1", "too many pings for this key; slow down\n"]);
    assert.equal((await fetch(`${d.url}/ping/${other}`)).status, 200, "another key is not limited by this one's flood");
  });

  test(`${engine}: ping keys: kept across PUTs, set to keep a job's URL, renewed (the old one stops at once), refused when taken`, async (t) => {
    const { d, key } = await daemonWithHeartbeat(t, engine);
    const again = await d.api("PUT", "/services/db1", heartbeat({ graceSeconds: 60 }));
    assert.equal(again.body.services[0].check.pingKey, key, "a PUT that leaves it out keeps it");
    const moved = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278";
    assert.equal((await d.api("PUT", "/services/db1", heartbeat({ pingKey: moved }))).body.services[0].check.pingKey, moved);
    assert.equal((await d.api("GET", `/ping/${key}`)).status, 404);
    assert.equal((await d.api("GET", `/ping/${moved}`)).status, 200);

    const renewed = await d.api("POST", "/services/db1/backup/ping-key");
    assert.equal(renewed.status, 200);
    assert.notEqual(renewed.body.pingKey, moved);
    assert.equal((await d.api("GET", `/ping/${moved}`)).status, 404, "the old key stops working at once");
    assert.equal((await d.api("GET", `/ping/${renewed.body.pingKey}`)).status, 200);

    const taken = await d.api("PUT", "/services/db2", { services: [{ id: "job", check: { type: "heartbeat", periodSeconds: 60, pingKey: renewed.body.pingKey } }] });
    assert.equal(taken.status, 409);
    assert.match(taken.body.detail, /pingKey is already the ping key of db1\/backup; leave pingKey out/);
    assert.equal((await d.api("GET", "/services/db2")).status, 404, "nothing was stored");

    const http = await d.api("PUT", "/services/db1/site", { check: { url: "http://127.0.0.1:9/" } });
    assert.equal((await d.api("POST", "/services/db1/site/ping-key")).status, 409, `${http.status}: an http check has no ping key`);
  });

  test(`${engine}: a heartbeat's fields: another kind's field, both period and cron, bad bounds are 400 naming the field`, async (t) => {
    const d = await testDaemon(t, { engine });
    const cases: [object, string, RegExp][] = [
      [{ type: "heartbeat", periodSeconds: 60, url: "http://127.0.0.1:9/" }, "/services/0/check/url", /http/],
      [{ type: "heartbeat", periodSeconds: 60, cron: "0 3 * * *" }, "/services/0/check/periodSeconds", /either periodSeconds .* or cron/],
      [{ type: "heartbeat" }, "/services/0/check/periodSeconds", /either periodSeconds/],
      [{ type: "heartbeat", periodSeconds: 0 }, "/services/0/check/periodSeconds", /1/],
      [{ type: "heartbeat", periodSeconds: 60, minRunSeconds: 30, maxRunSeconds: 10 }, "/services/0/check/minRunSeconds", /less than maxRunSeconds/],
      [{ type: "heartbeat", periodSeconds: 60, timezone: "Europe/Paris" }, "/services/0/check/timezone", /goes with cron/],
      [{ type: "heartbeat", periodSeconds: 60, pingKey: "abc" }, "/services/0/check/pingKey", /UUID/],
      [{ url: "http://127.0.0.1:9/", graceSeconds: 10 }, "/services/0/check/graceSeconds", /heartbeat/],
      [{ type: "smtp" }, "/services/0/check/type", /http|heartbeat/],
    ];
    for (const [check, path, message] of cases) {
      const answer = await d.api("PUT", "/services/s", { services: [{ id: "x", check }] });
      assert.equal(answer.status, 400, JSON.stringify(check));
      const error = answer.body.errors.find((e: { path: string }) => e.path === path);
      assert.ok(error, `${JSON.stringify(check)}: ${JSON.stringify(answer.body.errors)}`);
      assert.match(error.message, message);
    }
    assert.equal((await d.api("GET", "/services/s")).status, 404);
  });
}

test("a deadline fires on its own: missed once per period, one DOWN with threshold 0, and a ping recovers it", async (t) => {
  const { d, key } = await daemonWithHeartbeat(t, "sqlite", { periodSeconds: 1, graceSeconds: 1 });
  const [first] = await nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === "missed");
  assert.equal(first.state.status, "down");
  await nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === "missed");
  // Each wait listens before what it waits for is sent: the result may be stored before the answer is read.
  const upAgain = nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === "success" && done.state.status === "up");
  assert.equal((await fetch(`${d.url}/ping/${key}`)).status, 200);
  await upAgain;
  const missed = (await d.api("GET", "/services/db1/backup/data?limit=50")).body.entries.filter((e: any) => e.kind === "missed");
  const times = missed.map((e: any) => Date.parse(e.checkedAt)).sort();
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 900, `one missed entry per period (${times.join(", ")})`);
  const incidents = (await d.api("GET", "/incidents")).body.incidents;
  assert.equal(incidents.length, 1);
  assert.match(incidents[0].firstError, /^no ping by .* and its grace of 1s \(never pinged\)$/);
});

test("postgres: pings while the database is away are 503 (OK means stored), and stored once it is back and they are sent again", async (t) => {
  const url = await testDatabase(t, "postgres");
  const server = new URL(url);
  const proxy = await tcpProxy(t, { host: server.hostname, port: Number(server.port || 5432) });
  const { d, key } = await daemonWithHeartbeat(t, "postgres", {}, throughProxy(url, proxy));
  await proxy.set("close");
  for (const suffix of ["/start", "", "/log"]) assert.equal((await fetch(`${d.url}/ping/${key}${suffix}`)).status, 503);
  await proxy.set("pass");
  for (const suffix of ["/start", "", "/log"]) {
    await until(() => fetch(`${d.url}/ping/${key}${suffix}`).then((r) => r.status), (status) => status === 200, `${suffix || "success"} taken again`, 30_000);
  }
  const entries = await entriesUntil(d, (e) => e.length === 3, "the three pings stored after the outage");
  assert.deepEqual(entries.map((e) => e.kind).reverse(), ["start", "success", "log"]);
});

test("healthd run and healthd ping, the built executable: exit codes, output as the body, a missing command, no daemon", async (t) => {
  const { d, key } = await daemonWithHeartbeat(t, "sqlite");
  const env = { HEALTHD_URL: d.url };
  const failed = await runHealthd(["run", "db1/backup", "--", "sh", "-c", "echo dumping; echo 'disk full' >&2; exit 3"], env);
  assert.equal(failed.code, 3, failed.stderr);
  assert.equal(failed.stdout, "dumping\n", "the command's output passes through");
  assert.equal(failed.stderr, "disk full\n");
  let entries = await entriesUntil(d, (e) => e.length === 2, "start and exit");
  assert.deepEqual([entries[1].kind, entries[0].kind, entries[0].exitCode, entries[0].body], ["start", "exit", 3, "dumping\ndisk full\n"]);
  assert.ok(entries[0].durationMs >= 0);

  const long = await runHealthd(["run", "--ping-key", key, "--", "sh", "-c", "head -c 30000 /dev/zero | tr '\\0' a; echo; echo end"], env);
  assert.equal(long.code, 0, long.stderr);
  entries = await entriesUntil(d, (e) => e.length === 4, "the second run");
  assert.equal(entries[0].body.length, 10_000, "the last 10,000 bytes of the output");
  assert.match(entries[0].body, /a\nend\n$/);

  const missing = await runHealthd(["run", "db1/backup", "--", "/nonexistent/backup.sh"], env);
  assert.equal(missing.code, 127);
  assert.match(missing.stderr, /cannot run \/nonexistent\/backup.sh: command not found/);
  entries = await entriesUntil(d, (e) => e.length === 6, "a start and a failure for the missing command");
  assert.deepEqual([entries[1].kind, entries[0].kind, entries[0].exitCode, entries[0].ok], ["start", "exit", 127, false]);

  const logged = await runHealthd(["ping", "db1/backup", "--log", "rotated 3 files"], env);
  assert.equal(logged.code, 0, logged.stderr);
  const piped = spawn(process.execPath, [healthdBin, "ping", "--ping-key", key, "--exit-code", "0", "-"], { env: { ...process.env, ...env } });
  piped.stdin.end("from stdin");
  assert.deepEqual(await once(piped, "close"), [0, null]);
  entries = await entriesUntil(d, (e) => e.length === 8, "the two pings");
  assert.deepEqual([entries[1].body, entries[0].body, entries[0].exitCode], ["rotated 3 files", "from stdin", 0]);

  // No daemon: the job runs, its code stands, a warning says why nothing was reported.
  const away = await runHealthd(["run", "--url", "http://127.0.0.1:9", "db1/backup", "--", "sh", "-c", "exit 0"]);
  assert.equal(away.code, 0);
  assert.match(away.stderr, /warning: cannot find the ping key of db1\/backup: cannot reach http:\/\/127\.0\.0\.1:9: .* \(tried 3 times\); the job goes on/);
  const unsent = await runHealthd(["ping", "--url", "http://127.0.0.1:9", "--ping-key", key]);
  assert.equal(unsent.code, 1);
  const unknown = await runHealthd(["ping", "db1/nope"], env);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /404/);
  for (const [args, message] of [
    [["run", "db1/backup"], /give the command after --/],
    [["run", "--", "true"], /name the heartbeat/],
    [["ping", "db1/backup", "--start", "--fail"], /give one of --start, --fail, --log and --exit-code/],
    [["ping", "db1/backup", "--exit-code", "300"], /--exit-code must be an integer from 0 to 255/],
    [["ping", "--ping-key", "nope"], /--ping-key \(HEALTHD_PING_KEY\) must be a UUID/],
    [["ping", "db1/backup", "--url", "ftp://x"], /--url \(HEALTHD_URL\) must start with http/],
  ] as const) {
    const usage = await runHealthd([...args], env);
    assert.equal(usage.code, 2, `${args.join(" ")}: ${usage.stderr}`);
    assert.match(usage.stderr, message);
  }
});

test("healthd run passes SIGTERM on to the command and reports the code it exits with", async (t) => {
  const { d } = await daemonWithHeartbeat(t, "sqlite");
  // Listening before the run starts: its start ping may be stored before or after the command says "started".
  const startStored = nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === "start");
  const child = spawn(process.execPath, [healthdBin, "run", "db1/backup", "--", "sh", "-c", "trap 'echo stopping; exit 7' TERM; echo started; while :; do sleep 0.1; done"], {
    env: { ...process.env, HEALTHD_URL: d.url },
  });
  t.after(() => child.kill("SIGKILL"));
  await nextEvent<[Buffer]>(child.stdout, "data", (chunk) => String(chunk).includes("started"));
  await startStored;
  const exitStored = nextEvent<[CheckDone]>(d.events, "check:done", (e) => e.entry.kind === "exit");
  child.kill("SIGTERM");
  const [code] = await once(child, "close");
  assert.equal(code, 7);
  const [done] = await exitStored;
  assert.deepEqual([done.entry.exitCode, done.entry.body], [7, "started\nstopping\n"]);
});

test("postgres, two nodes: one missed entry per period and one DOWN between them; a ping to either node counts", async (t) => {
  const db = await testDatabase(t, "postgres");
  const nodes = [await serveHealthd(t, ["--db", db, "--node", "a"]), await serveHealthd(t, ["--db", db, "--node", "b"])];
  const call = async (node: number, method: string, path: string, body?: unknown) => {
    const r = await fetch(nodes[node]!.url + path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: (r.headers.get("content-type") ?? "").includes("json") ? await r.json() : await r.text() };
  };
  await until(() => call(0, "GET", "/nodes"), (r) => r.body.nodes.filter((n: { live: boolean }) => n.live).length === 2, "both nodes live");
  const key = (await call(0, "PUT", "/services/db1", heartbeat({ periodSeconds: 1, graceSeconds: 1 }))).body.services[0].check.pingKey;
  const data = () => call(1, "GET", "/services/db1/backup/data?limit=100").then((r) => r.body.entries as any[]);
  await until(data, (e) => e.filter((x) => x.kind === "missed").length >= 4, "four periods missed");
  assert.equal((await call(1, "GET", `/ping/${key}`)).status, 200);
  assert.equal((await call(0, "GET", `/ping/${key}`)).status, 200);
  await until(() => call(0, "GET", "/services/db1/backup"), (r) => r.body.state.status === "up", "up again");

  const missed = (await data()).filter((e) => e.kind === "missed").map((e) => Date.parse(e.checkedAt)).sort();
  for (let i = 1; i < missed.length; i++) assert.ok(missed[i]! - missed[i - 1]! >= 900, `one missed entry per period: ${missed.join(", ")}`);
  const store = await open(db, { mode: "read" });
  t.after(() => store.close());
  assert.deepEqual((await notifications(store)).map((n) => n.kind), ["down", "recovered"]);
});

test("a late heartbeat: amber on the status page with when it was due, in its badge and /status.json; check exits 1; /metrics has its pings", async (t) => {
  const { d, key } = await daemonWithHeartbeat(t, "sqlite", { periodSeconds: 1, graceSeconds: 3600 });
  const json = await until(() => d.api("GET", "/status.json"), (r) => r.body.servers?.[0]?.services?.[0]?.status === "late", "late");
  const shown = json.body.servers[0].services[0];
  assert.ok(Date.parse(shown.dueAt) <= Date.now(), "dueAt says when it was due");
  const page = (await d.api("GET", "/status")).body as string;
  assert.match(page, /class="[^"]*\blate\b[^"]*"/);
  assert.match(page, /Its ping was due <time datetime="[^"]+" title="[^"]+">(just now|\d+ minutes? ago)<\/time>/);
  const badge = await d.api("GET", "/badges/db1/backup/status.svg");
  assert.match(badge.body, />late</);
  const checked = await runHealthd(["check", "db1/backup", "--db", d.db]);
  assert.equal(checked.code, 1, checked.stderr);
  assert.match(checked.stdout, /^LATE db1\/backup {2}heartbeat: never pinged, was due /);

  // A period of an hour from here: pinged, the job is up until then, however long `healthd check` takes to start.
  const hourly = await d.api("PUT", "/services/db1", heartbeat({ graceSeconds: 3600 }));
  assert.equal(hourly.status, 200, JSON.stringify(hourly.body));
  assert.equal(hourly.body.services[0].check.pingKey, key, "the job's URL stays");
  const succeeded = nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === "success");
  assert.equal((await fetch(`${d.url}/ping/${key}/start`)).status, 200);
  assert.equal((await fetch(`${d.url}/ping/${key}`)).status, 200);
  await succeeded;
  const metrics = (await d.api("GET", "/metrics")).body as string;
  assert.match(metrics, /^healthd_heartbeat_last_ping_timestamp_seconds\{server="db1",service="backup",type="heartbeat"\} \d+(\.\d+)?$/m);
  assert.match(metrics, /^healthd_heartbeat_last_run_duration_seconds\{server="db1",service="backup",type="heartbeat"\} \d+(\.\d+)?(e-\d+)?$/m);
  const ok = await runHealthd(["check", "db1/backup", "--db", d.db, "--json"]);
  assert.equal(ok.code, 0, ok.stdout);
  assert.equal(JSON.parse(ok.stdout).status, "up");
});

test("export writes a heartbeat with its ping key, and apply on another database keeps the job's URL", async (t) => {
  const { d, key } = await daemonWithHeartbeat(t, "sqlite", { periodSeconds: null, cron: "30 2 * * *", timezone: "Europe/Paris", maxRunSeconds: 900 });
  const exported = await runHealthd(["export", "--db", d.db]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, new RegExp(`pingKey: ${key}`));
  const dir = tempDir(t);
  writeFileSync(join(dir, "servers.yaml"), exported.stdout);
  const other = join(dir, "other.db");
  const applied = await runHealthd(["apply", join(dir, "servers.yaml"), "--db", other]);
  assert.equal(applied.code, 0, applied.stderr);
  const again = await runHealthd(["export", "--db", other]);
  assert.equal(again.stdout, exported.stdout, "what export wrote, apply takes back whole");
  const check = (await runHealthd(["export", "--db", other, "--json"])).stdout;
  // Defaults left out (graceSeconds 3600 is this schedule's default): what a person would write.
  assert.deepEqual(JSON.parse(check).db1.services[0].check, { type: "heartbeat", cron: "30 2 * * *", timezone: "Europe/Paris", maxRunSeconds: 900, pingKey: key });
});
