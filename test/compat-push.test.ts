/**
 * Coming from Uptime Kuma or Gatus without touching a job: Kuma's push URL (/api/push/{pushToken}) and Gatus's
 * external-endpoint API (POST /api/v1/endpoints/{key}/external) over real HTTP against a daemon on both
 * engines, with a real curl, answered as those tools answer (COMPAT-SPEC §3 and §4); and `healthd import`
 * from a Kuma database and a Gatus file, after which the old URLs answer 200.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { goDuration } from "../src/http/gatus-external.ts";
import { gatusKey } from "../src/import/gatus.ts";
import { runHealthd } from "./support/cli.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { tempDir } from "./support/temp.ts";

/** curl as a job calls it; answers the status, the headers and the body. */
async function curl(url: string, ...args: string[]): Promise<{ status: number; headers: string; body: string }> {
  const { stdout } = await promisify(execFile)("curl", ["-sS", "-m", "10", "-D", "-", ...args, url]).catch((error: { code?: string }) => {
    if (error.code === "ENOENT") throw new Error("curl is not installed: apt-get install -y curl");
    throw error;
  });
  const split = stdout.lastIndexOf("\r\n\r\n");
  const headers = stdout.slice(0, split);
  return { status: Number(/^HTTP\/[\d.]+ (\d+)/m.exec(headers)?.[1]), headers, body: stdout.slice(split + 4) };
}

const heartbeat = (id: string, check: object) => ({ id, check: { type: "heartbeat", periodSeconds: 3600, ...check } });

/** The entries of db1/{service}, oldest first (a ping is answered once it is committed, so no waiting). */
async function entries(d: TestDaemon, service: string, headers: Record<string, string> = {}): Promise<any[]> {
  const answer = await d.api("GET", `/services/db1/${service}/data?limit=50`, undefined, headers);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body.entries as any[]).reverse();
}

for (const engine of engines) {
  test(`${engine}: Kuma push: up, down, msg as the body, ping as the latency, Kuma's answers for unknown tokens and bad pings`, async (t) => {
    const d = await testDaemon(t, { engine });
    const put = await d.api("PUT", "/services/db1", { services: [heartbeat("backup", { pushToken: true }), heartbeat("given", { pushToken: "Xk2w9QpL0aZb" })] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const token: string = put.body.services[0].check.pushToken;
    assert.match(token, /^[A-Za-z0-9]{32}$/, "made as Kuma makes them");
    assert.equal(put.body.services[1].check.pushToken, "Xk2w9QpL0aZb");
    const push = (query: string, ...args: string[]) => curl(`${d.url}/api/push/${token}${query}`, ...args);

    const up = await push("?status=up&msg=All%20good&ping=12.5");
    assert.deepEqual([up.status, up.body], [200, '{"ok":true}']);
    assert.match(up.headers, /^content-type: application\/json; charset=utf-8$/im);
    assert.deepEqual([(await push("?status=down&msg=disk%20full", "-X", "POST")).status, (await push("")).status, (await push("?status=UP&ping=0")).status], [200, 200, 200]);
    assert.equal((await push("?ping=7abc", "-I")).status, 200, "HEAD, and Kuma's parseFloat of 7abc");
    assert.deepEqual(
      (await entries(d, "backup")).map((e) => [e.kind, e.ok, e.errorKind, e.body, e.latencyMs]),
      [
        ["success", true, null, "All good", 12.5],
        ["fail", false, "fail", "disk full", 0],
        ["success", true, null, "OK", 0],
        ["fail", false, "fail", "OK", 0],
        ["success", true, null, "OK", 7],
      ],
    );
    assert.equal((await curl(`${d.url}/api/push/Xk2w9QpL0aZb?status=up`)).status, 200, "a token given in the document");

    const unknown = await curl(`${d.url}/api/push/nope`);
    assert.deepEqual([unknown.status, unknown.body], [404, '{"ok":false,"msg":"Monitor not found or not active."}']);
    assert.match(unknown.headers, /^content-type: application\/json; charset=utf-8$/im);
    // The ping's range is checked before the token, as Kuma does.
    for (const ping of ["-1", "100000000001"]) {
      const bad = await curl(`${d.url}/api/push/nope?ping=${ping}`);
      assert.deepEqual([bad.status, bad.body], [404, '{"ok":false,"msg":"Invalid ping value. Must be between 0 and 100000000000 ms."}']);
    }
    assert.equal((await entries(d, "backup")).length, 5, "nothing kept of refused pushes");

    // A paused heartbeat is not found, as a paused Kuma monitor is not; the token stays through a PUT without it.
    assert.equal((await d.api("PUT", "/services/db1/backup", { check: { type: "heartbeat", periodSeconds: 3600, paused: true } })).status, 200);
    assert.equal((await d.api("GET", "/services/db1/backup")).body.check.pushToken, token, "kept when left out");
    assert.deepEqual([(await push("")).status, (await push("")).body], [404, '{"ok":false,"msg":"Monitor not found or not active."}']);
    assert.equal((await d.api("PUT", "/services/db1/backup", { check: { type: "heartbeat", periodSeconds: 3600, pushToken: true } })).body.check.pushToken, token, "true keeps the one it has");
    assert.equal((await push("")).status, 200);
    assert.equal((await d.api("PUT", "/services/db1/backup", { check: { type: "heartbeat", periodSeconds: 3600, pushToken: null } })).body.check.pushToken, null);
    assert.equal((await push("")).status, 404, "taken away");
  });

  test(`${engine}: Gatus external endpoints: Gatus's own handler cases, in its order, with healthd ping tokens`, async (t) => {
    const d = await testDaemon(t, { engine });
    assert.equal((await d.api("PUT", "/services/db1", { services: [heartbeat("ext", { gatusKey: "g_n" })] })).status, 201);
    assert.equal((await d.api("PUT", "/services/other", { services: [] })).status, 201);
    const token = async (name: string, scope: string, servers: string[] | null, admin?: string) => {
      const made = await d.api("POST", "/tokens", { name, scope, servers }, admin ? { authorization: `Bearer ${admin}` } : {});
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body.token as string;
    };
    const admin = await token("admin", "admin", null);
    const ping = await token("ping-db1", "ping", ["db1"], admin);
    const elsewhere = await token("ping-other", "ping", ["other"], admin);
    const reader = await token("reader", "read", null, admin);
    const post = (key: string, query: string, authorization?: string) =>
      curl(`${d.url}/api/v1/endpoints/${key}/external${query}`, "-X", "POST", ...(authorization === undefined ? [] : ["-H", `Authorization: ${authorization}`]));
    const answer = async (...args: Parameters<typeof post>) => {
      const r = await post(...args);
      assert.match(r.headers, /^content-type: text\/plain; charset=utf-8$/im);
      return [r.status, r.body];
    };

    // TestCreateExternalEndpointResult, case by case.
    assert.deepEqual(await answer("g_n", "?success=true"), [401, "invalid Authorization header"]);
    assert.deepEqual(await answer("g_n", "?success=true", "Bearer bad-token"), [401, "invalid token"]);
    assert.deepEqual(await answer("bad_key", "?success=true", `Bearer ${ping}`), [404, "not found"]);
    assert.deepEqual(await answer("g_n", "?success=invalid", `Bearer ${ping}`), [400, "missing or invalid success query parameter"]);
    assert.deepEqual(await answer("g_n", "?success=true&duration=invalid", `Bearer ${ping}`), [400, 'invalid duration: time: invalid duration "invalid"']);
    assert.deepEqual(await answer("g_n", "?success=true", `Bearer ${ping}`), [200, ""]);
    assert.deepEqual(await answer("g_n", "?success=true&error=failed", `Bearer ${ping}`), [200, ""]);
    assert.deepEqual(await answer("g_n", "?success=true&duration=10s", `Bearer ${ping}`), [200, ""]);
    assert.deepEqual(await answer("g_n", "?success=false", `Bearer ${ping}`), [200, ""]);
    assert.deepEqual(await answer("g_n", "?success=false", `Bearer ${ping}`), [200, ""]);
    assert.deepEqual(await answer("g_n", "?success=false&error=failed", `Bearer ${ping}`), [200, ""]);
    // And the order between them: a bad success before any token, an unknown key before the token is looked up.
    assert.deepEqual(await answer("g_n", ""), [400, "missing or invalid success query parameter"]);
    assert.deepEqual(await answer("g_n", "?success=TRUE", "Bearer bad-token"), [400, "missing or invalid success query parameter"]);
    // Gatus's "bearer token must not be empty" cannot be reached over HTTP: a field's trailing spaces are not its value.
    assert.deepEqual(await answer("g_n", "?success=true", "Bearer   "), [401, "invalid Authorization header"]);
    assert.deepEqual(await answer("g_n", "?success=true", `bearer ${ping}`), [401, "invalid Authorization header"], "Gatus's prefix is case-sensitive");
    assert.deepEqual(await answer("bad_key", "?success=true", "Bearer bad-token"), [404, "not found"]);
    // Tokens that exist but may not ping this heartbeat are not its token either.
    assert.deepEqual(await answer("g_n", "?success=true", `Bearer ${elsewhere}`), [401, "invalid token"]);
    assert.deepEqual(await answer("g_n", "?success=true", `Bearer ${reader}`), [401, "invalid token"]);
    assert.deepEqual(await answer("G_N", "?success=true&duration=1.5h", `Bearer ${admin}`), [200, ""], "the key lower-cased, as Gatus compares it");

    const results = await entries(d, "ext", { authorization: `Bearer ${admin}` });
    assert.deepEqual(
      results.map((e) => [e.ok, e.body, e.latencyMs]),
      [
        [true, null, 0],
        [true, null, 0], // the error of a success is dropped, as Gatus drops it
        [true, null, 10_000],
        [false, null, 0],
        [false, null, 0],
        [false, "failed", 0],
        [true, null, 5_400_000],
      ],
    );
  });

  test(`${engine}: pushToken and gatusKey: validated by name, unique, and through export and apply unchanged`, async (t) => {
    const d = await testDaemon(t, { engine });
    const bad = await d.api("PUT", "/services/db1", { services: [heartbeat("a", { pushToken: "has space" }), heartbeat("b", { gatusKey: "Core_Front End" })] });
    assert.equal(bad.status, 400);
    assert.deepEqual(
      bad.body.errors.map((e: { path: string }) => e.path),
      ["/services/0/check/pushToken", "/services/1/check/gatusKey"],
    );
    assert.match(bad.body.errors[0].message, /push token/);
    assert.match(bad.body.errors[1].message, /Gatus key/);
    assert.equal((await d.api("PUT", "/services/db1", { services: [heartbeat("a", { pushToken: "tok1", gatusKey: "core_a" })] })).status, 201);
    for (const [field, value] of [["pushToken", "tok1"], ["gatusKey", "core_a"]] as const) {
      const taken = await d.api("PUT", "/services/db2", { services: [heartbeat("b", { [field]: value })] });
      assert.equal(taken.status, 409, JSON.stringify(taken.body));
      assert.deepEqual(taken.body.errors.map((e: { path: string }) => e.path), [`/services/0/check/${field}`]);
      assert.match(taken.body.errors[0].message, /db1\/a/);
    }

    const exported = await runHealthd(["export", "--db", d.db]);
    assert.equal(exported.code, 0, exported.stderr);
    const check = parse(exported.stdout).db1.services[0].check;
    assert.deepEqual([check.pushToken, check.gatusKey], ["tok1", "core_a"]);
    const dir = tempDir(t);
    writeFileSync(join(dir, "servers.yaml"), exported.stdout);
    const again = await testDaemon(t, { engine });
    const applied = await runHealthd(["apply", join(dir, "servers.yaml"), "--db", again.db]);
    assert.equal(applied.code, 0, applied.stderr);
    await until(async () => (await curl(`${again.url}/api/push/tok1`)).status, (status) => status === 200, "the applied push token taking pushes");
    assert.deepEqual((await again.api("GET", "/services/db1/a")).body.check.gatusKey, "core_a");
  });

  test(`${engine}: import from a Kuma database and a Gatus file: the old push URLs answer 200 with no job changed`, async (t) => {
    const dir = tempDir(t);
    const kuma = join(dir, "kuma.db");
    kumaDatabase(kuma, [
      { id: 1, name: "Nightly backup", type: "push", push_token: "Xk2w9QpL0aZbC7", interval: 86400, retry_interval: 600, maxretries: 1 },
      { id: 2, name: "Clone of backup", type: "push", push_token: "Xk2w9QpL0aZbC7", interval: 3600 },
      { id: 3, name: "Old push", type: "push", interval: 60 },
    ]);
    const printed = await runHealthd(["import", "--from", "uptime-kuma", kuma]);
    assert.equal(printed.code, 0, printed.stderr);
    const services = parse(printed.stdout)["uptime-kuma"].services as { id: string; check: Record<string, unknown> }[];
    assert.deepEqual(
      services.map((s) => [s.id, s.check.periodSeconds, s.check.pushToken]),
      [["nightly-backup", 86400, "Xk2w9QpL0aZbC7"], ["clone-of-backup", 3600, true], ["old-push", 60, true]],
    );
    assert.match(printed.stderr, /clone-of-backup: its push token is also uptime-kuma\/nightly-backup's/);
    assert.match(printed.stderr, /"Old push" \(push\): its push token is missing: healthd makes a new one/);
    assert.doesNotMatch(printed.stderr, /does not carry over: point the job/);

    const gatus = join(dir, "config.yaml");
    writeFileSync(
      gatus,
      [
        "external-endpoints:",
        "  - name: ext-ep-test",
        "    group: core",
        '    token: "potato"',
        "    heartbeat:",
        "      interval: 30m",
        "  - name: API (v1)",
        "    group: Load balancers",
        '    token: "potato"',
        "    heartbeat:",
        "      interval: 10m",
      ].join("\n") + "\n",
    );
    const read = await runHealthd(["import", "--from", "gatus", gatus]);
    assert.equal(read.code, 0, read.stderr);
    const document = parse(read.stdout);
    assert.deepEqual(document.core.services[0].check, { type: "heartbeat", periodSeconds: 1800, graceSeconds: 60, gatusKey: "core_ext-ep-test" });
    assert.equal(document["load-balancers"].services[0].check.gatusKey, "load-balancers_api-(v1)", "Gatus's eight characters, no more");
    assert.match(read.stderr, /external endpoint "ext-ep-test": its Gatus token does not carry over: .*--scope ping --server core, or import --apply --keep-tokens\); its key core_ext-ep-test does/);

    const d = await testDaemon(t, { engine });
    for (const [from, file] of [["uptime-kuma", kuma], ["gatus", gatus]]) {
      const applied = await runHealthd(["import", "--from", from!, file!, "--apply", "--db", d.db]);
      assert.equal(applied.code, 0, applied.stderr);
    }
    // The daemon follows another process's change within a second; the job's own line, unchanged.
    const pushed = await until(() => curl(`${d.url}/api/push/Xk2w9QpL0aZbC7?status=up&msg=OK&ping=`), (r) => r.status === 200, "the imported push token taking pushes");
    assert.equal(pushed.body, '{"ok":true}');
    const made = await d.api("POST", "/tokens", { name: "jobs", scope: "ping", servers: ["core"] });
    const external = await until(
      () => curl(`${d.url}/api/v1/endpoints/core_ext-ep-test/external?success=true&error=&duration=2s`, "-X", "POST", "-H", `Authorization: Bearer ${made.body.token}`),
      (r) => r.status === 200,
      "the imported Gatus key taking results",
    );
    assert.equal(external.body, "");
  });
}

test("Gatus keys as Gatus's config/key tests and README make them", () => {
  const cases: [string, string, string][] = [
    ["Core", "Front End", "core_front-end"],
    ["Load balancers", "us-west-2", "load-balancers_us-west-2"],
    ["a/b test", "a", "a-b-test_a"],
    ["", "name", "_name"],
    ["API (v1)", "endpoint", "api-(v1)_endpoint"],
    ["website (admin)", "test", "website-(admin)_test"],
    ["search", "query&filter", "search_query-filter"],
    ["core", "ext-ep-test", "core_ext-ep-test"],
    [" g.1,#+ ", "x_y", "g-1---_x-y"],
  ];
  for (const [group, name, key] of cases) assert.equal(gatusKey(group, name), key, `${group}/${name}`);
});

test("Go durations as time.ParseDuration reads them, with its error texts", () => {
  const ok: [string, number][] = [["300ms", 300], ["10s", 10_000], ["1.5h", 5_400_000], ["1h2m", 3_720_000], ["-1s", -1000], ["0", 0], ["+5m", 300_000], [".5s", 500], ["1µs", 0.001], ["2ns", 0.000002]];
  for (const [text, ms] of ok) assert.deepEqual(goDuration(text), { ok: true, ms }, text);
  const refused: [string, string][] = [
    ["invalid", 'time: invalid duration "invalid"'],
    ["", 'time: invalid duration ""'],
    ["10", 'time: missing unit in duration "10"'],
    ["10x", 'time: unknown unit "x" in duration "10x"'],
    ["1d", 'time: unknown unit "d" in duration "1d"'],
    [".s", 'time: invalid duration ".s"'],
    ["-", 'time: invalid duration "-"'],
    ["3000000h", 'time: invalid duration "3000000h"'],
  ];
  for (const [text, error] of refused) assert.deepEqual(goDuration(text), { ok: false, error }, text);
});
