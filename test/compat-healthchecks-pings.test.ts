/**
 * Healthchecks.io's own ping tests (hc/api/tests/test_ping.py and test_ping_by_slug.py, as COMPAT-SPEC.md §1
 * digests them), ported as black-box tests over real HTTP against a running daemon: each test is named after
 * the case it comes from, and asserts what that case asserts, through healthd's API where the case looks at
 * stored state (both engines). A check there is a heartbeat here (a period of a day, a grace of an hour, as
 * Healthchecks.io's defaults); a project's ping key is a server's. Cases left out, and where healthd differs
 * on purpose, are listed in docs/guide/coming-from-another-tool.md.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import { engines, type TestEngine } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";

const projectKey = "p".repeat(22);
const checkDefaults = { type: "heartbeat", periodSeconds: 86_400, graceSeconds: 3600 };

interface Setup {
  readonly d: TestDaemon;
  /** The heartbeat's UUID URL, /ping/{uuid}. */
  readonly url: string;
  /** Its slug URL, /ping/{projectKey}/foo. */
  readonly slugUrl: string;
}

/** A daemon (trusting 127.0.0.1 as a proxy, so X-Forwarded-* are read) with server "jobs" and its heartbeat "foo". */
async function setup(t: TestContext, engine: TestEngine = "sqlite", check: object = {}, server: object = {}): Promise<Setup> {
  const d = await testDaemon(t, { engine, trustProxy: ["127.0.0.1"] });
  const put = await d.api("PUT", "/services/jobs", { pingKey: projectKey, ...server, services: [{ id: "foo", check: { ...checkDefaults, ...check } }] });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const key = put.body.services[0].check.pingKey as string;
  return { d, url: `${d.url}/ping/${key}`, slugUrl: `${d.url}/ping/${projectKey}/foo` };
}

async function send(url: string, init: RequestInit = {}) {
  const r = await fetch(url, init);
  return { status: r.status, headers: r.headers, text: await r.text() };
}

/** The heartbeat's entries, newest first. */
const entries = async (d: TestDaemon, serviceId = "foo"): Promise<any[]> => (await d.api("GET", `/services/jobs/${serviceId}/data?limit=50`)).body.entries;
const service = async (d: TestDaemon, serviceId = "foo") => (await d.api("GET", `/services/jobs/${serviceId}`)).body;

// ---- wire: what a client sees, whatever is stored (one engine) ----

test("test_it_handles_bad_uuid (test_ping.py)", async (t) => {
  const { d } = await setup(t);
  assert.equal((await send(`${d.url}/ping/not-uuid/`)).status, 404);
});

test("test_it_rejects_alternative_uuid_formats (test_ping.py)", async (t) => {
  const { d } = await setup(t);
  assert.equal((await send(`${d.url}/ping/07c2f54898504b27af5d6c9dc157ec02/`)).status, 404);
});

test("test_it_handles_missing_check (test_ping.py)", async (t) => {
  const { d } = await setup(t);
  const r = await send(`${d.url}/ping/07c2f548-9850-4b27-af5d-6c9dc157ec02/`);
  assert.deepEqual([r.status, r.text], [404, "not found"]);
});

test("test_it_never_caches (test_ping.py)", async (t) => {
  const { url } = await setup(t);
  const r = await send(url);
  assert.equal(r.status, 200);
  assert.match(r.headers.get("cache-control") ?? "", /no-cache/);
  assert.match(r.headers.get("cache-control") ?? "", /no-store/, "the contract's no-store too");
});

test("test_it_rejects_exit_status_over_255 (test_ping.py)", async (t) => {
  const { url } = await setup(t);
  const r = await send(`${url}/256`);
  assert.deepEqual([r.status, r.text], [400, "invalid url format"]);
});

test("test_it_handles_invalid_rid (test_ping.py)", async (t) => {
  const { url } = await setup(t);
  for (const rid of ["12345", "684e2e73-017e-465f-8149-d70b7c5aaa490"]) {
    const r = await send(`${url}/start?rid=${rid}`);
    assert.deepEqual([r.status, r.text], [400, "invalid uuid format"], rid);
  }
});

test("test_it_never_caches (test_ping_by_slug.py)", async (t) => {
  const { slugUrl } = await setup(t);
  const r = await send(slugUrl);
  assert.equal(r.status, 200);
  assert.match(r.headers.get("cache-control") ?? "", /no-cache/);
});

test("test_it_handles_wrong_ping_key (test_ping_by_slug.py)", async (t) => {
  const { d } = await setup(t);
  const r = await send(`${d.url}/ping/${"r".repeat(22)}/foo`);
  assert.deepEqual([r.status, r.text], [404, "not found"]);
});

test("test_auto_provisioning_is_off_by_default (test_ping_by_slug.py)", async (t) => {
  const { d } = await setup(t);
  assert.equal((await send(`${d.url}/ping/${projectKey}/bar`)).status, 404);
  assert.equal((await send(`${d.url}/ping/${projectKey}/bar?create=1`)).status, 404, "autoProvision is false unless set");
  assert.equal((await d.api("GET", "/services/jobs/bar")).status, 404, "no check created");
});

test("test_it_rejects_uppercase_slug (test_ping_by_slug.py)", async (t) => {
  const { d } = await setup(t);
  const r = await send(`${d.url}/ping/${projectKey}/fooFOO`);
  assert.deepEqual([r.status, r.text], [400, "invalid url format"]);
});

test("docs (http_api.md): every ping answer carries Access-Control-Allow-Origin and Cache-Control; unknown words after a key are 404", async (t) => {
  const { d, url, slugUrl } = await setup(t);
  for (const [path, status] of [[url, 200], [`${url}/foo`, 404], [`${url}/-1`, 404], [`${url}/0123`, 200], [`${slugUrl}/start`, 200], [`${slugUrl}/nope`, 404], [`${d.url}/ping/${"r".repeat(22)}/foo/fail`, 404]] as const) {
    const r = await send(path);
    assert.equal(r.status, status, path);
    assert.equal(r.headers.get("access-control-allow-origin"), "*", path);
    assert.match(r.headers.get("cache-control") ?? "", /no-cache, no-store/, path);
  }
});

test("test_it_works (test_ping_by_slug.py), sent by curl as Healthchecks.io's docs send it", async (t) => {
  const { d, slugUrl } = await setup(t);
  const curl = async (url: string, ...args: string[]) =>
    (await promisify(execFile)("curl", ["-fsS", "-m", "10", "--retry", "5", "-o", "-", "-w", "\n%{http_code}", ...args, url]).catch((error: { code?: string }) => {
      if (error.code === "ENOENT") throw new Error("curl is not installed: apt-get install -y curl");
      throw error;
    })).stdout;
  assert.equal(await curl(`${slugUrl}/start`), "OK\n200");
  assert.equal(await curl(`${slugUrl}/0`, "--data-binary", "renewed 3 certificates"), "OK\n200");
  const [finish, start] = await entries(d);
  assert.deepEqual([start.kind, finish.kind, finish.exitCode, finish.body, finish.method], ["start", "exit", 0, "renewed 3 certificates", "POST"]);
  assert.match(finish.userAgent, /^curl\//);
  assert.ok(finish.durationMs >= 0, "the exit paired with its start");
});

// ---- stored: what the case looks at in the database, through healthd's API (both engines) ----

for (const engine of engines) {
  test(`${engine}: test_it_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    const r = await send(url);
    assert.deepEqual([r.status, r.text], [200, "OK"]);
    assert.equal(r.headers.get("access-control-allow-origin"), "*");
    assert.equal(r.headers.get("ping-body-limit"), "10000");
    const { state } = await service(d);
    const [entry] = await entries(d);
    assert.equal(state.status, "up");
    assert.equal(state.lastPingAt, entry.checkedAt);
    assert.equal(Date.parse(state.nextDueAt), Date.parse(entry.checkedAt) + 86_400_000, "due a timeout after the ping (then its grace)");
    assert.deepEqual([entry.kind, entry.scheme, entry.exitCode, entry.method], ["success", "http", null, "GET"]);
  });

  test(`${engine}: test_it_changes_status_of_paused_check (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine, { paused: true });
    assert.equal((await service(d)).state.status, "paused");
    assert.equal((await send(url)).status, 200);
    const after = await service(d);
    assert.equal(after.check.paused, false, "a ping resumes it");
    assert.equal(after.state.status, "up");
  });

  test(`${engine}: test_it_clears_last_start (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(`${url}/start`);
    assert.notEqual((await service(d)).state.lastStartAt, null);
    assert.equal((await send(url)).status, 200);
    assert.equal((await service(d)).state.lastStartAt, null);
  });

  test(`${engine}: test_post_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    assert.equal((await send(url, { method: "POST", body: "hello world", headers: { "content-type": "text/plain" } })).status, 200);
    const [entry] = await entries(d);
    assert.deepEqual([entry.method, entry.body], ["POST", "hello world"]);
  });

  test(`${engine}: test_head_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    assert.equal((await send(url, { method: "HEAD" })).status, 200);
    const stored = await entries(d);
    assert.deepEqual(stored.map((e) => [e.kind, e.method]), [["success", "HEAD"]]);
  });

  test(`${engine}: test_it_handles_120_char_ua and test_it_truncates_long_ua (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    const chrome = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_12_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/57.0.2987.133 Safari/537.36";
    await send(url, { headers: { "user-agent": chrome } });
    const long = "01234567890".repeat(30);
    await send(url, { headers: { "user-agent": long } });
    const [second, first] = await entries(d);
    assert.equal(first.userAgent, chrome);
    assert.equal(second.userAgent, long.slice(0, 200));
  });

  test(`${engine}: test_it_reads_forwarded_ip, _ipv6_ip, _first_forwarded_ip, _forwarded_ip_plus_port, _ipv4_mapped_ipv6_address (test_ping.py), behind --trust-proxy`, async (t) => {
    const { d, url } = await setup(t, engine);
    const sent = ["1.1.1.1", "2001::1", "1.1.1.1, 2.2.2.2", "1.1.1.1:1234", "::ffff:1.1.1.1"];
    for (const xff of sent) assert.equal((await send(url, { headers: { "x-forwarded-for": xff } })).status, 200);
    const stored = (await entries(d)).reverse().map((e) => e.remoteAddr);
    assert.deepEqual(stored, ["1.1.1.1", "2001::1", "1.1.1.1", "1.1.1.1", "::ffff:1.1.1.1"]);
  });

  test(`${engine}: test_it_reads_forwarded_protocol (test_ping.py), behind --trust-proxy`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(url, { headers: { "x-forwarded-proto": "https" } });
    assert.equal((await entries(d))[0].scheme, "https");
  });

  test(`${engine}: test_fail_endpoint_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    assert.equal((await send(`${url}/fail`)).status, 200);
    const [entry] = await entries(d);
    assert.deepEqual([entry.kind, entry.ok, entry.errorKind], ["fail", false, "fail"]);
    assert.equal((await service(d)).state.status, "down");
    const incidents = (await d.api("GET", "/services/jobs/foo/incidents")).body.incidents;
    assert.equal(incidents.length, 1, "one flip to down");
  });

  test(`${engine}: test_start_endpoint_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(url);
    const before = (await service(d)).state.lastPingAt;
    assert.equal((await send(`${url}/start`)).status, 200);
    const { state } = await service(d);
    assert.equal(state.lastPingAt, before, "a start leaves lastPingAt alone");
    assert.notEqual(state.lastStartAt, null);
    assert.equal((await entries(d))[0].kind, "start");
  });

  test(`${engine}: test_start_does_not_change_status_of_paused_check (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine, { paused: true });
    assert.equal((await send(`${url}/start`)).status, 200);
    const after = await service(d);
    assert.deepEqual([after.check.paused, after.state.status], [true, "paused"]);
    assert.equal((await entries(d))[0].kind, "start");
  });

  test(`${engine}: test_start_sets_last_start_rid, test_it_accepts_uppercase_rid, test_it_saves_run_id (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    const rid = "04603D8B-EDF4-4E85-8F61-24BEDBCAAB59";
    assert.equal((await send(`${url}/start?rid=${rid}`)).status, 200);
    assert.equal((await entries(d))[0].rid, rid.toLowerCase());
    assert.notEqual((await service(d)).state.lastStartAt, null);
  });

  test(`${engine}: test_it_sets_last_duration and test_it_clears_last_ping_and_sets_last_duration_if_rid_matches (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    const rid = "0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e";
    await send(`${url}/start?rid=${rid}`);
    assert.equal((await send(`${url}?rid=${rid}`)).status, 200);
    const { state } = await service(d);
    assert.equal(state.lastStartAt, null);
    assert.ok(state.lastDurationMs >= 0, "a duration");
    assert.ok((await entries(d))[0].durationMs >= 0);
  });

  test(`${engine}: test_it_does_not_update_last_ping_on_rid_mismatch (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(`${url}/start?rid=0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e`);
    const started = (await service(d)).state.lastStartAt;
    assert.equal((await send(`${url}?rid=1c8f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e`)).status, 200);
    assert.equal((await service(d)).state.lastStartAt, started, "the run with the other rid goes on");
    assert.equal((await entries(d))[0].durationMs, null);
  });

  test(`${engine}: test_it_clears_last_ping_if_rid_is_absent (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(`${url}/start?rid=0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e`);
    assert.equal((await send(url)).status, 200);
    assert.equal((await service(d)).state.lastStartAt, null, "a finish without a rid ends the latest run (healthd also gives it a duration)");
  });

  test(`${engine}: test_it_clears_last_ping_on_failure (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    await send(`${url}/start?rid=0b9f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e`);
    assert.equal((await send(`${url}/fail?rid=1c8f0c51-7a4e-4d3c-9a55-0a1f2b3c4d5e`)).status, 200);
    assert.equal((await service(d)).state.lastStartAt, null, "a failure ends the latest run, whatever its rid");
    assert.equal((await entries(d))[0].durationMs, null);
  });

  test(`${engine}: test_it_chops_long_body (test_ping.py), at healthd's fixed 10,000 bytes`, async (t) => {
    const { d, url } = await setup(t, engine);
    const r = await send(url, { method: "POST", body: "hello world ".repeat(1000) });
    assert.equal(r.headers.get("ping-body-limit"), "10000");
    assert.equal((await entries(d))[0].body, "hello world ".repeat(1000).slice(0, 10_000));
  });

  test(`${engine}: test_it_handles_manual_resume_flag (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine, { paused: true, manualResume: true });
    assert.equal((await send(url)).status, 200);
    const after = await service(d);
    assert.deepEqual([after.check.paused, after.state.status], [true, "paused"]);
  });

  test(`${engine}: test_zero_exit_status_works and test_nonzero_exit_status_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    assert.equal((await send(`${url}/0`)).status, 200);
    assert.equal((await service(d)).state.status, "up");
    assert.equal((await send(`${url}/123`)).status, 200);
    assert.equal((await service(d)).state.status, "down");
    const [fail, ok] = await entries(d);
    assert.deepEqual([ok.kind, ok.exitCode, fail.kind, fail.ok, fail.exitCode], ["exit", 0, "exit", false, 123]);
  });

  test(`${engine}: test_it_accepts_bad_unicode (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    const r = await send(url, { method: "POST", body: Buffer.from("Hello \xe9 World", "latin1") });
    assert.equal(r.status, 200);
    assert.equal((await entries(d))[0].body, "Hello \ufffd World", "kept as text: the lone byte is U+FFFD");
  });

  test(`${engine}: test_log_endpoint_works (test_ping.py)`, async (t) => {
    const { d, url } = await setup(t, engine);
    assert.equal((await send(`${url}/log`, { method: "POST", body: "hello" })).status, 200);
    const { state } = await service(d);
    assert.deepEqual([state.status, state.lastPingAt], ["new", null]);
    const [entry] = await entries(d);
    assert.deepEqual([entry.kind, entry.body], ["log", "hello"]);
    assert.equal((await d.api("GET", "/services/jobs/foo/incidents")).body.incidents.length, 0);
  });

  test(`${engine}: test_it_works, test_post_works, test_head_works, test_fail_endpoint_works, test_start_endpoint_works, test_zero_exit_status_works, test_nonzero_exit_status_works (test_ping_by_slug.py)`, async (t) => {
    const { d, slugUrl } = await setup(t, engine);
    const r = await send(slugUrl);
    assert.deepEqual([r.status, r.text, r.headers.get("access-control-allow-origin")], [200, "OK", "*"]);
    assert.equal((await send(slugUrl, { method: "POST", body: "hello world" })).status, 200);
    assert.equal((await send(slugUrl, { method: "HEAD" })).status, 200);
    for (const word of ["fail", "start", "0", "123"]) assert.equal((await send(`${slugUrl}/${word}`)).status, 200, word);
    const stored = (await entries(d)).reverse();
    assert.deepEqual(
      stored.map((e) => [e.kind, e.method, e.body, e.exitCode]),
      [["success", "GET", null, null], ["success", "POST", "hello world", null], ["success", "HEAD", null, null], ["fail", "GET", null, null], ["start", "GET", null, null], ["exit", "GET", null, 0], ["exit", "GET", null, 123]],
    );
  });

  test(`${engine}: test_it_auto_provisions_missing_check (test_ping_by_slug.py)`, async (t) => {
    const { d } = await setup(t, engine, {}, { autoProvision: true, heartbeatDefaults: { periodSeconds: 3600, graceSeconds: 300 } });
    const r = await send(`${d.url}/ping/${projectKey}/bar?create=1`);
    assert.deepEqual([r.status, r.text], [201, "Created"]);
    const made = await service(d, "bar");
    assert.deepEqual([made.check.type, made.check.periodSeconds, made.check.graceSeconds, made.state.status], ["heartbeat", 3600, 300, "up"]);
    assert.equal((await entries(d, "bar")).length, 1, "the ping that made it is its first");
    assert.equal((await send(`${d.url}/ping/${projectKey}/bar?create=1`)).status, 200, "once made, OK");
  });
}

test("a server's ping key: made when it is created, kept by a PUT that leaves it out, rotated by POST /services/{serverId}/ping-key", async (t) => {
  const d = await testDaemon(t);
  const made = await d.api("PUT", "/services/jobs", { services: [{ id: "foo", check: checkDefaults }] });
  const key = made.body.pingKey as string;
  assert.match(key, /^[a-z0-9]{22}$/);
  assert.equal((await send(`${d.url}/ping/${key}/foo`)).status, 200);
  const again = await d.api("PUT", "/services/jobs", { services: [{ id: "foo", check: checkDefaults }] });
  assert.equal(again.body.pingKey, key);
  const rotated = await d.api("POST", "/services/jobs/ping-key");
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.pingKey, key);
  assert.equal((await send(`${d.url}/ping/${key}/foo`)).status, 404, "the old key stops at once");
  assert.equal((await send(`${d.url}/ping/${rotated.body.pingKey}/foo`)).status, 200);
  assert.equal((await d.api("PUT", "/services/other", { pingKey: rotated.body.pingKey })).status, 409, "a key is one server's");
  assert.equal((await d.api("GET", "/services/jobs/foo")).status, 200, "a service path is not taken by the ping-key route");
});

test("without --trust-proxy, X-Forwarded-For and X-Forwarded-Proto are not believed", async (t) => {
  const d = await testDaemon(t);
  const put = await d.api("PUT", "/services/jobs", { services: [{ id: "foo", check: checkDefaults }] });
  await send(`${d.url}/ping/${put.body.services[0].check.pingKey}`, { headers: { "x-forwarded-for": "1.1.1.1", "x-forwarded-proto": "https" } });
  const [entry] = await entries(d);
  assert.deepEqual([entry.remoteAddr, entry.scheme], ["127.0.0.1", "http"]);
});

