import assert from "node:assert/strict";
import { once } from "node:events";
import { request } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { rawQuery } from "./support/raw.ts";
import { engines } from "./support/databases.ts";
import { testDaemon, type TestDaemon } from "./support/daemon.ts";

const homepage = {
  id: "homepage",
  name: "Public homepage",
  check: {
    url: "http://127.0.0.1:9/",
    headers: { accept: "text/html" },
    expect: [
      { status: [200, 204], bodyContains: "Welcome" },
      { status: [503], header: { name: "retry-after", matches: "^[0-9]+$" } },
    ],
  },
};
const api = { id: "api", check: { url: "http://127.0.0.1:9/api", cron: "*/5 * * * *", notify: false, notifyThreshold: 0 } };

/** Store one failed result of a service, through the store's write path. */
async function storeEntry(daemon: TestDaemon, serverId: string, serviceId: string): Promise<void> {
  const { key } = await daemon.store.findService(serverId, serviceId);
  const outcome = { ok: false as const, status: 500, latencyMs: 3, matched: null, errorKind: "status" as const, error: "status 500", checkedAt: Date.now() };
  await daemon.store.recordResults([{ serviceKey: key!, outcome }], Date.now());
}

// The tests that read and write the store run on both engines.
for (const engine of engines) {

  test(`${engine}: PUT creates a server with defaults filled in, and the same PUT again changes nothing`, async (t) => {
    const d = await testDaemon(t, { engine });
    const created = await d.api("PUT", "/services/web-01", { name: "web-01", services: [homepage, api] });
    assert.equal(created.status, 201);
    assert.match(created.headers.get("content-type")!, /^application\/json; charset=utf-8/);
    const [home, apiService] = created.body.services;
    assert.deepEqual(home.check, {
      type: "http",
      url: "http://127.0.0.1:9/",
      method: "GET",
      headers: { accept: "text/html" },
      body: null,
      intervalSeconds: 60,
      cron: null,
      timeoutMs: 10000,
      followRedirects: true,
      verifyTls: true,
      expect: homepage.check.expect,
      notify: true,
      notifyThreshold: 2,
      notifyTopic: null,
      paused: false,
      recoverThreshold: 1,
      remindEveryMinutes: null,
      certWarnDays: null,
      dependsOn: [],
      channels: null,
      locations: null,
      quorum: null,
      slowMs: null,
      notifySlow: false,
      domainWarnDays: null,
      slaTarget: null,
    });
    assert.deepEqual(home.state, { status: "unknown", consecutiveFailures: 0, lastCheckedAt: null, lastEntry: null, incidentOpenSince: null, incidentStartedAt: null });
    assert.equal(apiService.check.intervalSeconds, null);
    assert.equal(apiService.check.notify, false);
    assert.equal(apiService.name, "api");
    assert.match(created.body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    await storeEntry(d, "web-01", "homepage");
    const before = await d.api("GET", "/services/web-01");
    const again = await d.api("PUT", "/services/web-01", { id: "web-01", name: "web-01", services: [homepage, api] });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, before.body);
    assert.equal(again.body.services[0].state.status, "down");
  });

  test(`${engine}: PUT replaces the set of services: absent ones go with their entries, unchanged ones keep their state`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [homepage, api] });
    await storeEntry(d, "web-01", "homepage");
    await storeEntry(d, "web-01", "api");
    const changedApi = { ...api, check: { ...api.check, url: "http://127.0.0.1:9/api/v2" } };
    const replaced = await d.api("PUT", "/services/web-01", { services: [homepage, changedApi, { id: "new", check: { url: "http://x/" } }] });
    assert.equal(replaced.status, 200);
    assert.deepEqual(replaced.body.services.map((s: { id: string }) => s.id), ["homepage", "api", "new"]);
    assert.equal(replaced.body.services[0].state.consecutiveFailures, 1);
    assert.equal((await d.api("GET", "/services/web-01/homepage/data")).body.entries.length, 1);

    const pruned = await d.api("PUT", "/services/web-01", { services: [changedApi] });
    assert.deepEqual(pruned.body.services.map((s: { id: string }) => s.id), ["api"]);
    assert.equal((await d.api("GET", "/services/web-01/homepage/data")).status, 404);
    // The deleted services' entries went with them (cascade), not only out of sight.
    const [count] = await rawQuery(d.store, "SELECT count(*) AS n FROM health_check_data_entries");
    assert.equal(Number(count!.n), 1);
  });

  test(`${engine}: left-out notify settings return to the schema defaults on the next PUT`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/s", { services: [api] });
    const reset = await d.api("PUT", "/services/s", { services: [{ id: "api", check: { url: api.check.url, cron: api.check.cron } }] });
    assert.equal(reset.body.services[0].check.notify, true);
    assert.equal(reset.body.services[0].check.notifyThreshold, 2);
  });

  test(`${engine}: the scheduler is told of every write before the response`, async (t) => {
    const d = await testDaemon(t, { engine });
    const changes: unknown[] = [];
    d.events.on("schedule:changed", (c) => changes.push(c));
    await d.api("PUT", "/services/s", { services: [homepage, api] });
    await d.api("PUT", "/services/s", { services: [homepage, api] });
    await d.api("PUT", "/services/s", { services: [homepage] });
    await d.api("DELETE", "/services/s/homepage");
    assert.deepEqual(changes, [
      { started: [1, 2], stopped: [] },
      { started: [], stopped: [] },
      { started: [], stopped: [2] },
      { started: [], stopped: [1] },
    ]);
  });

  test(`${engine}: GET /services counts services by state`, async (t) => {
    const d = await testDaemon(t, { engine });
    assert.deepEqual((await d.api("GET", "/services")).body, { servers: [] });
    await d.api("PUT", "/services/b", { name: "B", services: [homepage, api] });
    await d.api("PUT", "/services/a", {});
    await storeEntry(d, "b", "api");
    assert.deepEqual((await d.api("GET", "/services")).body, {
      servers: [
        { id: "a", name: "a", serviceCount: 0, up: 0, down: 0, unknown: 0, paused: 0, blocked: 0, late: 0, degraded: 0 },
        { id: "b", name: "B", serviceCount: 2, up: 0, down: 1, unknown: 1, paused: 0, blocked: 0, late: 0, degraded: 0 },
      ],
    });
  });

  test(`${engine}: DELETE removes a server or one service, 404 when absent`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [homepage, api] });
    assert.equal((await d.api("DELETE", "/services/web-01/api")).status, 204);
    assert.equal((await d.api("DELETE", "/services/web-01/api")).status, 404);
    assert.equal((await d.api("DELETE", "/services/nope/api")).status, 404);
    assert.deepEqual((await d.api("GET", "/services/web-01")).body.services.map((s: { id: string }) => s.id), ["homepage"]);
    assert.equal((await d.api("DELETE", "/services/web-01")).status, 204);
    const gone = await d.api("GET", "/services/web-01");
    assert.equal(gone.status, 404);
    assert.equal(gone.headers.get("content-type"), "application/problem+json; charset=utf-8");
    assert.equal(gone.body.status, 404);
    assert.match(gone.body.detail, /no server "web-01"/);
    assert.equal((await d.api("DELETE", "/services/web-01")).status, 404);
  });

  test(`${engine}: GET and PUT of one service: created, replaced, unchanged, 404 without its server`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [homepage] });
    const changes: unknown[] = [];
    d.events.on("schedule:changed", (c) => changes.push(c));
    const got = await d.api("GET", "/services/web-01/homepage");
    assert.equal(got.status, 200);
    assert.deepEqual(Object.keys(got.body), ["id", "name", "tags", "check", "state"]);
    assert.equal(got.body.check.url, "http://127.0.0.1:9/");

    const created = await d.api("PUT", "/services/web-01/api", { check: api.check });
    assert.equal(created.status, 201);
    assert.deepEqual([created.body.id, created.body.name, created.body.check.cron], ["api", "api", "*/5 * * * *"]);
    const same = await d.api("PUT", "/services/web-01/api", { id: "api", check: api.check });
    assert.equal(same.status, 200);
    assert.deepEqual(same.body, created.body);
    const moved = await d.api("PUT", "/services/web-01/api", { name: "API", check: { ...api.check, url: "http://127.0.0.1:9/v2" } });
    assert.deepEqual([moved.status, moved.body.name, moved.body.check.url], [200, "API", "http://127.0.0.1:9/v2"]);
    assert.deepEqual((await d.api("GET", "/services/web-01")).body.services.map((s: { id: string }) => s.id), ["homepage", "api"]);
    // The scheduler follows: new, unchanged (nothing), changed.
    assert.equal(changes.length, 3);
    assert.deepEqual(changes.map((c) => (c as { started: number[] }).started.length), [1, 0, 1]);

    const wrongId = await d.api("PUT", "/services/web-01/api", { id: "other", check: api.check });
    assert.equal(wrongId.status, 400);
    assert.deepEqual(wrongId.body.errors.map((e: { path: string }) => e.path), ["/id"]);
    const bad = await d.api("PUT", "/services/web-01/api", { check: { url: "ftp://x/" } });
    assert.deepEqual([bad.status, bad.body.errors[0].path], [400, "/check/url"]);
    assert.equal((await d.api("GET", "/services/web-01/api")).body.check.url, "http://127.0.0.1:9/v2");
    const noServer = await d.api("PUT", "/services/nope/api", { check: api.check });
    assert.equal(noServer.status, 404);
    assert.match(noServer.body.detail, /no server "nope"/);
    assert.equal((await d.api("GET", "/services/web-01/nope")).status, 404);
    assert.equal((await d.api("GET", "/services/nope/api")).status, 404);
  });

  test(`${engine}: a NUL in a document or a query, or a control character in the path, is 400 naming where; nothing changes`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [homepage] });
    const before = await d.api("GET", "/services/web-01");
    const bad = await d.api("PUT", "/services/web-01", { name: "web\u0000one", services: [{ ...homepage, name: "a\u0000" }] });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.deepEqual(
      bad.body.errors.map((e: { path: string; message: string }) => `${e.path} ${e.message}`).sort(),
      ["/name", "/services/0/name"].map((path) => `${path} contains a NUL character (\\u0000), which cannot be stored; remove it`),
    );
    assert.deepEqual(await d.api("GET", "/services/web-01"), before);
    const query = await d.api("GET", "/incidents?server=web%00");
    assert.equal(query.status, 400);
    assert.deepEqual(query.body.errors.map((e: { path: string }) => e.path), ["/server"]);
    for (const path of ["/services/web%0001", "/services/web-01/home%0Apage/data", "/status/web%00"]) {
      const answer = await d.api("GET", path);
      assert.equal(answer.status, 400, path);
      assert.match(answer.body.detail, /contains control characters; remove them/, path);
    }
  });

  test(`${engine}: a bad document is 400 with every problem listed, and changes nothing`, async (t) => {
    const d = await testDaemon(t, { engine });
    await d.api("PUT", "/services/web-01", { services: [homepage] });
    const before = await d.api("GET", "/services/web-01");
    const bad = await d.api("PUT", "/services/web-01", {
      id: "web-02",
      nmae: "typo",
      services: [
        {
          id: "homepage",
          check: {
            url: "ftp://example.org/",
            intervalSeconds: 0,
            cron: "* * *",
            timeoutMs: "10",
            expect: [{ status: "6xx", bodyMatches: "(" }, {}, { json: { path: "$..x", equals: 1 } }],
            notifyThreshold: -1,
            notifyTopic: "bad topic",
          },
        },
        { id: "homepage", check: { url: "http://a/", intervalSeconds: 5, cron: "* * * * *" } },
        { id: "bad id!", check: {} },
      ],
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get("content-type"), "application/problem+json; charset=utf-8");
    const paths = bad.body.errors.map((e: { path: string }) => e.path).sort();
    assert.deepEqual(paths, [
      "/id",
      "/nmae",
      "/services/0/check/cron",
      "/services/0/check/cron",
      "/services/0/check/expect/0/bodyMatches",
      "/services/0/check/expect/0/status",
      "/services/0/check/expect/1",
      "/services/0/check/expect/2/json/path",
      "/services/0/check/intervalSeconds",
      "/services/0/check/notifyThreshold",
      "/services/0/check/notifyTopic",
      "/services/0/check/timeoutMs",
      "/services/0/check/url",
      "/services/1/check/cron",
      "/services/1/id",
      "/services/2/check/url",
      "/services/2/id",
    ]);
    for (const error of bad.body.errors) assert.ok(error.message.length > 10, error.message);
    assert.doesNotMatch(JSON.stringify(bad.body), /at .*\.ts:\d+/);
    assert.deepEqual((await d.api("GET", "/services/web-01")).body, before.body);
  });
}

test("read-only fields of the GET answer are refused by name", async (t) => {
  const d = await testDaemon(t);
  const got = (await d.api("PUT", "/services/s", { services: [homepage] })).body;
  const bad = await d.api("PUT", "/services/s", got);
  assert.equal(bad.status, 400);
  const messages = bad.body.errors.map((e: { path: string; message: string }) => `${e.path} ${e.message}`);
  assert.ok(messages.includes("/createdAt is read-only (the GET answer adds it); leave it out"), messages.join("\n"));
  assert.ok(messages.some((m: string) => m.startsWith("/services/0/state is read-only")));
});

test("malformed, mistyped, missing and oversized bodies get 400, 415 and 413", async (t) => {
  const d = await testDaemon(t);
  const malformed = await d.api("PUT", "/services/s", "{not json");
  assert.equal(malformed.status, 400);
  assert.match(malformed.body.detail, /not valid JSON/);
  assert.equal((await d.api("PUT", "/services/s", "[]")).status, 400);
  assert.equal((await d.api("PUT", "/services/s", '"x"')).status, 400);
  const empty = await d.api("PUT", "/services/s");
  assert.equal(empty.status, 400);
  const text = await d.api("PUT", "/services/s", "name=x", { "content-type": "text/plain" });
  assert.equal(text.status, 415);
  assert.match(text.body.detail, /content-type: application\/json/);
  const huge = await d.api("PUT", "/services/s", JSON.stringify({ name: "x".repeat(1024 * 1024) }));
  assert.equal(huge.status, 413);
  const badId = await d.api("PUT", "/services/has%20space", {});
  assert.equal(badId.status, 400);
  assert.equal(badId.body.errors[0].path, "/serverId");
  assert.deepEqual((await d.api("GET", "/services")).body, { servers: [] });
});

test("a chunked body over the limit is refused while it streams", async (t) => {
  const d = await testDaemon(t);
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(d.url + "/services/s", { method: "PUT", headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    const chunk = Buffer.alloc(64 * 1024, " ");
    let sent = 0;
    const pump = () => {
      while (sent < 2 * 1024 * 1024) {
        sent += chunk.length;
        if (!req.write(chunk)) return req.once("drain", pump);
      }
      req.end();
    };
    pump();
  });
  assert.equal(status, 413);
});

test("unknown paths are 404, wrong methods 405 with Allow", async (t) => {
  const d = await testDaemon(t);
  const missing = await d.api("GET", "/nope");
  assert.equal(missing.status, 404);
  assert.equal(missing.body.type, "about:blank");
  const wrong = await d.api("POST", "/services/web-01");
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "GET, PUT, DELETE");
  assert.equal((await d.api("PATCH", "/healthz")).headers.get("allow"), "GET");
});

test("GET /healthz and GET /openapi.json", async (t) => {
  const d = await testDaemon(t);
  const health = await d.api("GET", "/healthz");
  assert.equal(health.status, 200);
  assert.equal(health.body.status, "ok");
  assert.match(health.body.version, /^\d+\.\d+\.\d+/);
  const doc = (await d.api("GET", "/openapi.json")).body;
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.paths["/services/{serverId}"].put);
  // A check is one of its kinds, each with its own required fields and no others.
  const kinds = doc.components.schemas.ServerDocument.properties.services.items.properties.check.oneOf;
  assert.deepEqual(kinds.map((k: { properties: { type: { const: string } } }) => k.properties.type.const), ["http", "tcp", "udp", "tls", "dns", "icmp", "websocket", "grpc", "postgres", "mysql", "redis", "heartbeat"]);
  const [http, tcp, udp, tls, dns, icmp, websocket, grpc, postgres, mysql, redis, heartbeat] = kinds;
  assert.deepEqual([http.properties.type.const, http.required, http.additionalProperties], ["http", ["url"], false], "type may be left out: http");
  assert.deepEqual([tcp.properties.type.const, tcp.required], ["tcp", ["type", "host", "port"]]);
  assert.deepEqual([udp.required, tls.required, icmp.required], [["type", "host", "port"], ["type", "host", "port"], ["type", "host"]]);
  assert.deepEqual([dns.properties.type.const, dns.required], ["dns", ["type", "name"]]);
  assert.deepEqual([websocket.required, grpc.required], [["type", "url"], ["type", "target"]]);
  assert.deepEqual([postgres.required, mysql.required, redis.required], [["type", "url"], ["type", "url"], ["type", "url"]]);
  assert.deepEqual([heartbeat.properties.type.const, heartbeat.required, heartbeat.additionalProperties], ["heartbeat", ["type"], false]);
});

test("every documented limit is a 400 naming the field and the bound", async (t) => {
  const d = await testDaemon(t);
  const check = { url: "http://127.0.0.1:9/" };
  const cases: [string, unknown, string, RegExp][] = [
    ["services per server", { services: Array.from({ length: 1001 }, (_, i) => ({ id: `s${i}`, check })) }, "/services", /at most 1000 services/],
    ["alternatives", { services: [{ id: "a", check: { ...check, expect: Array.from({ length: 17 }, () => ({ status: 200 })) } }] }, "/services/0/check/expect", /at most 16 alternatives/],
    ["headers per check", { services: [{ id: "a", check: { ...check, headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`x-h${i}`, "v"])) } }] }, "/services/0/check/headers", /at most 50 headers/],
    ["header value", { services: [{ id: "a", check: { ...check, headers: { "x-big": "v".repeat(8193) } } }] }, "/services/0/check/headers/x-big", /8192/],
    ["request body", { services: [{ id: "a", check: { ...check, method: "POST", body: "b".repeat(65537) } }] }, "/services/0/check/body", /65536/],
    ["service id", { services: [{ id: "x".repeat(65), check }] }, "/services/0/id", /1 to 64 characters/],
    ["name", { name: "n".repeat(201) }, "/name", /200/],
    ["URL", { services: [{ id: "a", check: { url: `http://127.0.0.1:9/${"p".repeat(2048)}` } }] }, "/services/0/check/url", /2048/],
    ["timeout", { services: [{ id: "a", check: { ...check, timeoutMs: 300_001 } }] }, "/services/0/check/timeoutMs", /300000/],
  ];
  for (const [what, doc, path, message] of cases) {
    const answer = await d.api("PUT", "/services/limits", doc);
    assert.equal(answer.status, 400, what);
    const error = answer.body.errors.find((e: { path: string }) => e.path === path);
    assert.ok(error, `${what}: ${JSON.stringify(answer.body.errors)}`);
    assert.match(error.message, message, what);
  }
  assert.equal((await d.api("GET", "/services")).body.servers.length, 0);
});

test("check headers with CR, LF or NUL, and headers healthd sets itself, are refused at PUT naming the header", async (t) => {
  const d = await testDaemon(t);
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ "x-a": "a\r\nx-injected: 1" }, "/services/0/check/headers/x-a", /control characters/],
    [{ "x-nul": "a\u0000b" }, "/services/0/check/headers/x-nul", /NUL character/],
    [{ "Transfer-Encoding": "chunked" }, "/services/0/check/headers/Transfer-Encoding", /set by healthd itself \(or is hop-by-hop\)/],
    [{ connection: "upgrade" }, "/services/0/check/headers/connection", /hop-by-hop/],
    [{ "content-length": "5" }, "/services/0/check/headers/content-length", /set by healthd itself/],
    [{ host: "a b" }, "/services/0/check/headers/host", /host name with an optional port/],
    [{ "X-Token": "1", "x-token": "2" }, "/services/0/check/headers", /names x-token twice/],
  ];
  for (const [headers, path, message] of cases) {
    const answer = await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: "http://127.0.0.1:9/", headers } }] });
    assert.equal(answer.status, 400, JSON.stringify(headers));
    assert.deepEqual(answer.body.errors.map((e: { path: string }) => e.path), [path], JSON.stringify(headers));
    assert.match(answer.body.errors[0].message, message);
  }
  // A Host header is how a virtual host is checked through an address: it stays allowed.
  assert.equal((await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: "http://127.0.0.1:9/", headers: { host: "example.org" } } }] })).status, 201);
  assert.deepEqual((await d.api("GET", "/services")).body.servers.map((s: { id: string }) => s.id), ["s"]);
});

test("requests pipelined on one connection are answered in order, each seeing the ones before it", async (t) => {
  const d = await testDaemon(t);
  const body = JSON.stringify({ services: [{ id: "a", check: { url: "http://127.0.0.1:9/" } }] });
  const { port } = new URL(d.url);
  const socket = connect(Number(port), "127.0.0.1");
  t.after(() => socket.destroy());
  let received = "";
  socket.on("data", (chunk) => (received += chunk));
  const closed = once(socket, "close");
  socket.end(
    `PUT /services/p HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
      `GET /services/p HTTP/1.1\r\nhost: x\r\n\r\n` +
      `DELETE /services/p HTTP/1.1\r\nhost: x\r\n\r\n` +
      `GET /services/p HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
  );
  await closed;
  assert.deepEqual([...received.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => m[1]), ["201", "200", "204", "404"]);
});

test("a key given twice, an empty path segment and the ids . and .. are refused, and change nothing", async (t) => {
  const d = await testDaemon(t);
  const good = { services: [{ id: "a", check: { url: "http://127.0.0.1:9/" } }] };
  assert.equal((await d.api("PUT", "/services/x", good)).status, 201);
  const twice = await d.api("PUT", "/services/x", '{"services": [{"id": "a", "check": {"url": "http://127.0.0.1:9/"}}], "services": []}');
  assert.equal(twice.status, 400);
  assert.deepEqual(twice.body.errors, [{ path: "/services", message: "is given twice in the same object; give each key once" }]);
  const nested = await d.api("PUT", "/services/x", '{"services": [{"id": "a", "check": {"url": "http://a/", "url": "http://b/"}}]}');
  assert.deepEqual(nested.body.errors.map((e: { path: string }) => e.path), ["/services/0/check/url"]);
  const deep = await d.api("PUT", "/services/x", "[".repeat(100_000) + "]".repeat(100_000));
  assert.equal(deep.status, 400);
  assert.match(deep.body.errors[0].message, /nests deeper than 64 levels/);
  const empty = await d.api("PUT", "/services//x", good);
  assert.equal(empty.status, 404);
  assert.match(empty.body.detail, /empty segment/);
  for (const id of [".", ".."]) {
    const dotted = await d.api("PUT", `/services/s/`, { services: [{ id, check: { url: "http://127.0.0.1:9/" } }] });
    assert.equal(dotted.status, 400, id);
    assert.match(dotted.body.errors[0].message, /cannot be "\." or "\.\."/);
  }
  // fetch would normalize /services/%2E%2E away; node:http sends the path as it is (as curl --path-as-is does).
  const raw = await new Promise<number>((resolve, reject) => {
    const { hostname, port } = new URL(d.url);
    const req = request({ hostname, port, path: "/services/%2E%2E", method: "PUT", headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    req.end(JSON.stringify(good));
  });
  assert.equal(raw, 400);
  assert.deepEqual((await d.api("GET", "/services/x")).body.services.map((s: { id: string }) => s.id), ["a"]);
  assert.deepEqual((await d.api("GET", "/services")).body.servers.map((s: { id: string }) => s.id), ["x"]);
});

test("every message says the rule in healthd's words: nothing of the validation library's leaks", async (t) => {
  const d = await testDaemon(t);
  const answer = await d.api("PUT", "/services/s", {
    name: "",
    services: [{ id: "a" }, { id: "b", check: { url: "http://127.0.0.1:9/", intervalSeconds: 0, timeoutMs: "x", followRedirects: "yes", expect: [{ maxLatencyMs: 0 }] } }],
  });
  assert.equal(answer.status, 400);
  const messages = Object.fromEntries(answer.body.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
  assert.deepEqual(messages, {
    "/name": "must not be empty",
    "/services/0/check": "is required",
    "/services/1/check/intervalSeconds": "must be an integer from 1 to 86400 (for example 60)",
    "/services/1/check/timeoutMs": "must be an integer from 1 to 300000 (for example 10000)",
    "/services/1/check/followRedirects": 'must be true or false (got "yes")',
    "/services/1/check/expect/0/maxLatencyMs": "must be an integer from 1 to 600000 (for example 2000)",
  });
  assert.doesNotMatch(JSON.stringify(answer.body), /Invalid input|Too small|Too big|expected \w+, received/);
  // A method is read in any case, by the API as by healthd check --method.
  const lower = await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: "http://127.0.0.1:9/", method: "post" } }] });
  assert.equal(lower.status, 201);
  assert.equal(lower.body.services[0].check.method, "POST");
});

test("since and until take a plain date, explain a + sent as a space, and must be in order", async (t) => {
  const d = await testDaemon(t);
  await d.api("PUT", "/services/s", { services: [{ id: "a", check: { url: "http://127.0.0.1:9/", intervalSeconds: 86400 } }] });
  const { key } = await d.store.findService("s", "a");
  const at = (iso: string) => ({ ok: true as const, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt: Date.parse(iso) });
  await d.store.recordResults(["2020-01-01T10:00:00Z", "2020-01-02T10:00:00Z", "2020-01-03T10:00:00Z"].map((iso) => ({ serviceKey: key!, outcome: at(iso) })), Date.now());
  const day = await d.api("GET", "/services/s/a/data?since=2020-01-02&until=2020-01-03");
  assert.equal(day.status, 200, JSON.stringify(day.body));
  assert.deepEqual(day.body.entries.map((e: { checkedAt: string }) => e.checkedAt), ["2020-01-02T10:00:00.000Z"]);
  // What curl sends for ?since=2020-01-02T12:00:00+02:00 without encoding the +.
  const spaced = await d.api("GET", "/services/s/a/data?since=2020-01-02T12:00:00+02:00");
  assert.equal(spaced.status, 400);
  assert.match(spaced.body.errors[0].message, /a \+ in a query string arrives as a space: send it as %2B \(2020-01-02T12:00:00%2B02:00\)/);
  const backwards = await d.api("GET", "/services/s/a/data?since=2020-01-03&until=2020-01-02");
  assert.equal(backwards.status, 400);
  assert.deepEqual(backwards.body.errors, [{ path: "/since", message: "is later than until; swap them, or leave one out" }]);
  assert.equal((await d.api("GET", "/services?unknown=1")).status, 400, "every endpoint refuses parameters it does not take");
});

test("a cron pattern that never fires (30 February) is 400 naming it, for a check and for a maintenance window", async (t) => {
  const d = await testDaemon(t);
  const never = await d.api("PUT", "/services/web-01", {
    services: [{ id: "home", check: { url: "http://127.0.0.1:9/", cron: "0 0 30 2 *" } }],
    maintenance: [{ cron: "0 3 31 4 *", durationMinutes: 60 }],
  });
  assert.equal(never.status, 400);
  assert.deepEqual(
    never.body.errors.map((e: { path: string; message: string }) => [e.path, e.message]),
    [
      ["/services/0/check/cron", "never fires (0 0 30 2 * names no date that exists); check its day and month"],
      ["/maintenance/0/cron", "never fires (0 3 31 4 * names no date that exists); check its day and month"],
    ],
  );
  assert.equal((await d.api("GET", "/services/web-01")).status, 404, "nothing stored");
  // 29 February fires, every fourth year.
  const leap = await d.api("PUT", "/services/web-01", { services: [{ id: "home", check: { url: "http://127.0.0.1:9/", cron: "0 0 29 2 *" } }] });
  assert.equal(leap.status, 201);
});
