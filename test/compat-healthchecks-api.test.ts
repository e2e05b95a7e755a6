/**
 * Healthchecks.io's management API v3 (and v1, v2) over healthd's heartbeats, over real HTTP on both engines, checked against
 * HC's own answers as COMPAT-SPEC §2 digests them from its code, tests and docs (the docs' check example field
 * by field, names and types): list, get, create with `unique` (201 then 200), update, delete, pause and resume,
 * pings and flips after real pings, channels; a read key's view, wrong and missing keys, a token limited to
 * another server.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test, type TestContext } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { flipDicts, hcStatus, hcTime } from "../src/http/healthchecks-map.ts";
import { createLogger } from "../src/platform/log.ts";
import { shownStatuses } from "../src/status/shown.ts";
import { engines, type TestEngine } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";

const adminToken = "the-daemons-own-token-0123";
const backupKey = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278";
const otherKey = "0f0e8f3a-6a1e-4b1e-9d55-3d5b3c2f4a10";

/** HC's docs' example of a check (v3, read-write view), as HC's code emits it (with subject and subject_fail). */
const docsExample = {
  name: "Backups", slug: "", tags: "prod www", desc: "", grace: 60, n_pings: 0, status: "new", started: false,
  last_ping: null, next_ping: null, manual_resume: false, methods: "", subject: "", subject_fail: "", start_kw: "",
  success_kw: "", failure_kw: "", filter_subject: false, filter_body: false, filter_http_body: false,
  filter_default_fail: false, badge_url: "SITE_ROOT/b/2/x.svg", uuid: "7918b17b-...", ping_url: "PING_ENDPOINT7918b17b-...",
  update_url: "SITE_ROOT/api/v3/checks/7918b17b-...", pause_url: "…/pause", resume_url: "…/resume", channels: "", timeout: 3600,
};
const readOnlyHidden = ["uuid", "ping_url", "update_url", "pause_url", "resume_url", "channels"];
/** The type of each field as the docs' example shows it ("null" where the example is null and a string when set). */
const typeOf = (value: unknown) => (value === null ? "null" : typeof value);

function sameShape(check: Record<string, unknown>, expected: Record<string, unknown>, nullable: readonly string[] = []) {
  assert.deepEqual(Object.keys(check), Object.keys(expected), "HC's fields, in HC's order");
  for (const [key, value] of Object.entries(expected)) {
    if (nullable.includes(key) && check[key] === null) continue;
    assert.equal(typeOf(check[key]), nullable.includes(key) ? "string" : typeOf(value), `the type of ${key}`);
  }
}

interface Setup {
  readonly d: TestDaemon;
  readonly write: string;
  readonly read: string;
  readonly limited: string;
  readonly hc: (method: string, path: string, key?: string, body?: unknown) => ReturnType<TestDaemon["api"]>;
}

async function setup(t: TestContext, engine: TestEngine, lines: string[] = []): Promise<Setup> {
  const d = await testDaemon(t, { engine, token: adminToken, log: createLogger({ write: (line) => lines.push(line) }) });
  const admin = { authorization: `Bearer ${adminToken}` };
  const heartbeat = (pingKey: string) => ({ type: "heartbeat", periodSeconds: 3600, graceSeconds: 60, pingKey });
  assert.equal((await d.api("PUT", "/services/web", { name: "Web", services: [{ id: "backup", name: "Backups", check: heartbeat(backupKey) }] }, admin)).status, 201);
  assert.equal((await d.api("PUT", "/services/other", { services: [{ id: "sync", check: heartbeat(otherKey) }] }, admin)).status, 201);
  const token = async (name: string, scope: string, servers?: string[]) => (await d.api("POST", "/tokens", { name, scope, ...(servers ? { servers } : {}) }, admin)).body.token as string;
  const [write, read, limited] = [await token("terraform", "write"), await token("grafana", "read"), await token("other-team", "write", ["other"])];
  const hc = (method: string, path: string, key?: string, body?: unknown) => d.api(method, `/api/v3${path}`, body, key === undefined ? {} : { "x-api-key": key });
  return { d, write, read, limited, hc };
}

/** Sends a ping and waits until it is stored. */
async function ping(d: TestDaemon, path: string, kind: string) {
  const stored = nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.entry.kind === kind);
  assert.equal((await fetch(`${d.url}/ping/${path}`)).status, 200);
  await stored;
}

for (const engine of engines) {
  test(`${engine}: GET /api/v3/checks/ and /checks/{uuid}: HC's check object field by field; a read key's view; wrong and missing keys are 401`, async (t) => {
    const { d, write, read, hc } = await setup(t, engine);
    const list = await hc("GET", "/checks/", write);
    assert.equal(list.status, 200);
    assert.match(list.headers.get("content-type")!, /^application\/json/);
    assert.equal(list.headers.get("access-control-allow-origin"), "*");
    assert.deepEqual(Object.keys(list.body), ["checks"]);
    const checks = list.body.checks as Record<string, unknown>[];
    assert.deepEqual(checks.map((c) => c.slug), ["sync", "backup"], "by server, then as created");
    const backup = checks[1]!;
    sameShape(backup, docsExample, ["last_ping", "next_ping"]);
    assert.equal(Object.keys(backup).length, 29, "HC's test_get_check: 29 keys for a simple check without last_duration");
    assert.deepEqual(
      { ...backup },
      {
        ...docsExample,
        slug: "backup",
        tags: "",
        uuid: backupKey,
        ping_url: `${d.url}/ping/${backupKey}`,
        update_url: `${d.url}/api/v3/checks/${backupKey}`,
        pause_url: `${d.url}/api/v3/checks/${backupKey}/pause`,
        resume_url: `${d.url}/api/v3/checks/${backupKey}/resume`,
        badge_url: `${d.url}/badges/web/backup/status.svg`,
      },
    );
    assert.deepEqual((await hc("GET", `/checks/${backupKey}`, write)).body, backup);
    assert.deepEqual((await hc("GET", "/checks/?slug=sync", write)).body.checks.map((c: { uuid: string }) => c.uuid), [otherKey]);
    assert.deepEqual((await hc("GET", "/checks/?tag=prod", write)).body, { checks: [] }, "no check carries the tag prod: a tag filter matches none");

    // A read key: HC's read-only view, without the uuid (the ping key) anywhere, with unique_key instead.
    const readOnly = await hc("GET", "/checks/", read);
    assert.equal(readOnly.status, 200);
    const seen = readOnly.body.checks[1];
    const unique = createHash("sha1").update(backupKey.replaceAll("-", "").slice(0, 16)).digest("hex");
    const { uuid: _u, ping_url: _p, update_url: _up, pause_url: _pa, resume_url: _r, channels: _c, ...shared } = backup;
    assert.deepEqual(seen, { ...shared, unique_key: unique });
    const text = JSON.stringify(readOnly.body);
    assert.ok(!text.includes(backupKey) && !text.includes(otherKey), "the read-only view never shows a ping key");
    for (const word of readOnlyHidden.slice(0, 5)) assert.ok(!text.includes(word), word);
    assert.deepEqual((await hc("GET", `/checks/${unique}`, read)).body, seen, "a check by its unique_key");
    assert.equal((await hc("GET", `/checks/${unique}`, write)).body.uuid, backupKey);

    // Keys: HC's 401 texts; a read key on a write endpoint is 401 wrong api key, as HC answers it.
    assert.deepEqual([(await hc("GET", "/checks/")).status, (await hc("GET", "/checks/")).body], [401, { error: "missing api key" }]);
    assert.deepEqual([(await hc("GET", "/checks/", "hd_not-a-token")).status, (await hc("GET", "/checks/", "hd_not-a-token")).body], [401, { error: "wrong api key" }]);
    const readWrites = await hc("POST", "/checks/", read, { name: "x" });
    assert.deepEqual([readWrites.status, readWrites.body], [401, { error: "wrong api key" }]);
    assert.equal((await hc("GET", "/checks/00000000-0000-4000-8000-000000000000", write)).status, 404);
    // The key may also be a bearer token; and X-Api-Key counts as one on the rest of the API.
    assert.equal((await d.api("GET", "/api/v3/checks/", undefined, { authorization: `Bearer ${write}` })).status, 200);
    assert.equal((await d.api("GET", "/services/web", undefined, { "x-api-key": read })).status, 200);
    assert.equal((await d.api("PUT", "/services/web", { services: [] }, { "x-api-key": read })).status, 403, "with its scope");
  });

  test(`${engine}: POST /api/v3/checks/ creates a heartbeat (201), upserts by unique (200), validates as HC; POST and DELETE /checks/{uuid}`, async (t) => {
    const { d, write, read, hc } = await setup(t, engine);
    const created = await hc("POST", "/checks/", write, { name: "Backups", tags: "prod www", timeout: 3600, grace: 60, unique: ["name"] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    sameShape(created.body, docsExample, ["last_ping", "next_ping"]);
    const uuid = created.body.uuid as string;
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual([created.body.name, created.body.slug, created.body.timeout, created.body.grace, created.body.status], ["Backups", "backups", 3600, 60, "new"]);
    // It is a heartbeat of the default server, and its uuid is its ping key: the ping URL works.
    const service = (await d.api("GET", "/services/healthchecks/backups", undefined, { authorization: `Bearer ${adminToken}` })).body;
    assert.deepEqual([service.check.type, service.check.pingKey, service.check.periodSeconds, service.check.graceSeconds], ["heartbeat", uuid, 3600, 60]);
    assert.equal((await fetch(created.body.ping_url)).status, 200);

    const again = await hc("POST", "/checks/", write, { name: "Backups", timeout: 7200, unique: ["name"] });
    assert.equal(again.status, 200, "HC's upsert: an existing check matched by name is updated");
    assert.deepEqual([again.body.uuid, again.body.timeout, again.body.grace], [uuid, 7200, 60]);
    assert.equal((await hc("POST", "/checks/", write, { unique: ["name"] })).status, 201, "a unique field not given matches nothing");
    const plain = await hc("POST", "/checks/", undefined, { api_key: write, name: "Backups", unique: [] });
    assert.deepEqual([plain.status, plain.body.slug], [201, "backups-2"], "no unique: always created; the key may come in the body");
    assert.equal(plain.body.timeout, 86400, "HC's default timeout, a day");
    const cron = await hc("POST", "/checks/", write, { name: "Nightly", schedule: "5 * * * *", tz: "Europe/Kiev" });
    assert.equal(cron.status, 201);
    assert.deepEqual([cron.body.schedule, cron.body.tz, "timeout" in cron.body], ["5 * * * *", "Europe/Kyiv", false]);

    // HC's validation: its texts, the body read before the key.
    const refused = async (body: unknown, error: string, key: string | undefined = write) => {
      const answer = await hc("POST", "/checks/", key, body);
      assert.deepEqual([answer.status, answer.body], [400, { error }], JSON.stringify(body));
    };
    await refused({ timeout: 10 }, "json validation error: timeout is too small");
    await refused({ timeout: 31536001 }, "json validation error: timeout is too large");
    await refused({ timeout: "oops" }, "json validation error: timeout is not a number");
    await refused({ name: false }, "json validation error: name is not a string");
    await refused({ name: "x".repeat(101) }, "json validation error: name is too long");
    await refused({ slug: "Uppercase" }, "json validation error: slug does not match pattern");
    await refused({ schedule: "bad-expression" }, 'json validation error: schedule is not a valid cron or OnCalendar expression (healthd takes 5-field cron expressions only, such as "0 3 * * *")');
    await refused({ tz: "Europe/Surprise" }, "json validation error: tz is not a valid timezone");
    await refused({ unique: "name" }, "json validation error: unique is not an array");
    await refused({ channels: "abc" }, "invalid channel identifier: abc");
    await refused("this is not json", "could not parse request body", undefined);
    await refused([1, 2, 3], "json validation error: value is not an object", undefined);

    // Update: the fields given change; channels by name or by HC's id.
    const channels = (await hc("GET", "/channels/", write)).body.channels;
    assert.deepEqual(channels.map((c: { name: string; kind: string }) => [c.name, c.kind]), [["ntfy", "ntfy"]]);
    assert.match(channels[0].id, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual([(await hc("GET", "/channels/", read)).status, (await hc("GET", "/channels/", read)).body], [401, { error: "wrong api key" }]);
    const updated = await hc("POST", `/checks/${uuid}`, write, { name: "Nightly backups", grace: 120, channels: "ntfy" });
    assert.equal(updated.status, 200);
    assert.deepEqual([updated.body.name, updated.body.grace, updated.body.timeout, updated.body.channels], ["Nightly backups", 120, 7200, channels[0].id]);
    assert.equal((await hc("POST", `/checks/${uuid}`, write, { channels: "" })).body.channels, "");
    assert.equal((await hc("POST", `/checks/${uuid}`, read, {})).status, 401);

    const deleted = await hc("DELETE", `/checks/${uuid}`, write);
    assert.deepEqual([deleted.status, deleted.body.uuid, deleted.body.name], [200, uuid, "Nightly backups"]);
    assert.equal((await hc("GET", `/checks/${uuid}`, write)).status, 404);
    assert.equal((await fetch(created.body.ping_url)).status, 404, "its ping URL is gone with it");
  });

  test(`${engine}: pause and resume; pings and flips after real pings (/ping/{uuid}/start, /fail, success)`, async (t) => {
    const lines: string[] = [];
    const { d, write, read, hc } = await setup(t, engine, lines);
    await ping(d, `${backupKey}/start`, "start");
    assert.equal((await hc("GET", `/checks/${backupKey}`, write)).body.started, true, "a run going: started");
    // API v1 (which HC's Terraform provider uses) says so as a status; its URLs are v1's. No v4.
    const v1 = (await d.api("GET", `/api/v1/checks/${backupKey}`, undefined, { "x-api-key": write })).body;
    assert.deepEqual([v1.status, v1.started, v1.update_url], ["started", true, `${d.url}/api/v1/checks/${backupKey}`]);
    assert.equal((await d.api("GET", "/api/v2/checks/", undefined, { "x-api-key": write })).body.checks[1].status, "new");
    assert.deepEqual((await d.api("GET", "/api/v4/checks/", undefined, { "x-api-key": write })).status, 404);
    await ping(d, backupKey, "success");
    await ping(d, `${backupKey}/fail`, "fail");
    await ping(d, backupKey, "success");

    const check = (await hc("GET", `/checks/${backupKey}`, write)).body;
    assert.deepEqual(Object.keys(check).filter((key) => key !== "last_duration"), Object.keys(docsExample), "HC's fields, last_duration only when a run was timed");
    assert.deepEqual([check.status, check.n_pings, check.started], ["up", 4, false]);
    assert.match(check.last_ping, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
    assert.match(check.next_ping, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
    assert.equal(Date.parse(check.next_ping) - Date.parse(check.last_ping), 3600_000, "next_ping: the last ping and the timeout");
    await ping(d, `${backupKey}/log`, "log");

    const pings = await hc("GET", `/checks/${backupKey}/pings/`, write);
    assert.equal(pings.status, 200);
    assert.deepEqual(pings.body.pings.map((p: { type: string; n: number }) => [p.type, p.n]), [["log", 5], ["success", 4], ["fail", 3], ["success", 2], ["start", 1]]);
    const [first] = pings.body.pings;
    assert.deepEqual(Object.keys(first), ["type", "date", "n", "scheme", "remote_addr", "method", "ua", "rid", "body_url"]);
    assert.match(first.date, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$/);
    assert.equal(typeof pings.body.pings[3].duration, "number", "a success paired with its start has a duration, in seconds");
    assert.deepEqual([(await hc("GET", `/checks/${backupKey}/pings/`, read)).status, (await hc("GET", `/checks/${backupKey}/pings/`, read)).body], [401, { error: "wrong api key" }]);

    const flips = await hc("GET", `/checks/${backupKey}/flips/`, read);
    assert.equal(flips.status, 200);
    assert.deepEqual(flips.body.flips.map((f: { up: number }) => f.up), [1, 0], "the fail opened an incident (down), the success closed it (up)");
    assert.match(flips.body.flips[0].timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
    assert.deepEqual((await hc("GET", `/checks/${backupKey}/flips/?start=10000000000`, read)).body, { flips: [] });
    const bad = await hc("GET", `/checks/${backupKey}/flips/?seconds=abc`, read);
    assert.deepEqual([bad.status, bad.body], [400, ""]);

    const paused = await hc("POST", `/checks/${backupKey}/pause`, write);
    assert.deepEqual([paused.status, paused.body.status, paused.body.uuid], [200, "paused", backupKey]);
    assert.equal((await hc("POST", `/checks/${backupKey}/pause`, undefined, { api_key: write })).body.status, "paused", "already paused: 200");
    assert.equal((await hc("POST", `/checks/${backupKey}/pause`, read)).status, 401);
    assert.equal((await hc("GET", `/checks/${backupKey}/pause`, write)).status, 405);
    const resumed = await hc("POST", `/checks/${backupKey}/resume`, write);
    assert.deepEqual([resumed.status, resumed.body.status], [200, "up"]);
    const again = await hc("POST", `/checks/${backupKey}/resume`, write);
    assert.deepEqual([again.status, again.body], [409, "check is not paused"]);
    // Who changed what is logged, naming the service, never its uuid (the ping key is a secret).
    assert.ok(lines.some((line) => line.includes("POST /api/v3/checks/{uuid}/pause (web/backup) by terraform")), lines.join("\n"));
    assert.ok(!lines.some((line) => line.includes(backupKey)));
  });

  test(`${engine}: a token limited to one server sees only that server's checks (others are 404) and creates its checks there`, async (t) => {
    const { hc, limited } = await setup(t, engine);
    assert.deepEqual((await hc("GET", "/checks/", limited)).body.checks.map((c: { uuid: string }) => c.uuid), [otherKey]);
    for (const [method, path] of [["GET", ""], ["POST", ""], ["DELETE", ""], ["POST", "/pause"], ["GET", "/pings/"], ["GET", "/flips/"]] as const) {
      const answer = await hc(method, `/checks/${backupKey}${path}`, limited);
      assert.equal(answer.status, 404, `${method} ${path}: another server's check is as unknown`);
    }
    const created = await hc("POST", "/checks/", limited, { name: "Reports" });
    assert.equal(created.status, 201);
    assert.deepEqual((await hc("GET", "/checks/", limited)).body.checks.map((c: { slug: string }) => c.slug), ["sync", "reports"]);
    const elsewhere = await hc("POST", "/checks/", limited, { name: "x", server: "web" });
    assert.deepEqual([elsewhere.status, elsewhere.body], [403, { error: 'token "other-team" may not use server web' }]);
  });
}

test("the mapping: healthd's statuses as HC's, HC's time formats, flips from incidents within a window", () => {
  assert.deepEqual(
    Object.fromEntries(shownStatuses.map((status) => [status, hcStatus(status)])),
    { up: "up", down: "down", unknown: "new", paused: "paused", blocked: "down", new: "new", late: "grace", degraded: "up" },
  );
  const at = Date.UTC(2020, 5, 9, 14, 51, 6, 113);
  assert.deepEqual([hcTime(at), hcTime(at, true), hcTime(at - 113, true)], ["2020-06-09T14:51:06+00:00", "2020-06-09T14:51:06.113000+00:00", "2020-06-09T14:51:06+00:00"]);
  const incident = (openedAt: number, closedAt: number | null) => ({ id: 1, serverId: "s", serviceId: "x", startedAt: openedAt, openedAt, closedAt, failures: 1, firstError: null, notified: true });
  const s = 1000;
  const incidents = [incident(300 * s, null), incident(100 * s, 200 * s)];
  assert.deepEqual(flipDicts(incidents, { start: -Infinity, end: Infinity }).map((f) => [f.timestamp, f.up]), [
    ["1970-01-01T00:05:00+00:00", 0],
    ["1970-01-01T00:03:20+00:00", 1],
    ["1970-01-01T00:01:40+00:00", 0],
  ]);
  assert.deepEqual(flipDicts(incidents, { start: 100 * s, end: 300 * s }).map((f) => f.up), [1, 0], "start inclusive, end exclusive");
});

test("a daemon without tokens still asks Healthchecks.io's API for a key, so that no web page can use it from a browser", async (t) => {
  const d = await testDaemon(t);
  const get = await fetch(`${d.url}/api/v3/checks/`);
  assert.deepEqual([get.status, await get.json()], [401, { error: "missing api key" }], "a page's GET carries no key");
  // A form another site posts needs no preflight: a key in a body that is not JSON does not count.
  const form = await fetch(`${d.url}/api/v3/checks/`, { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify({ api_key: "x", name: "forged" }) });
  assert.deepEqual([form.status, await form.json()], [401, { error: "missing api key" }]);
  assert.deepEqual((await d.api("GET", "/services")).body.servers, [], "nothing was made");
  // A client of the API sends one (any, on an open daemon, as the rest of its API takes any token).
  const client = await fetch(`${d.url}/api/v3/checks/`, { headers: { "x-api-key": "anything" } });
  assert.deepEqual([client.status, await client.json()], [200, { checks: [] }]);
});
