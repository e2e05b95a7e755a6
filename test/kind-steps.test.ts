/**
 * An http check's steps (issue 84): a login endpoint that hands out a token and a session cookie, protected
 * endpoints that want them, and one that stalls, all on 127.0.0.1. The controller through the schema (a step
 * passing, failing at step 2 named, values from the JSON body, a header and a cookie, one deadline for all the
 * steps, extracted values kept out of errors), the API's 400s, then through the daemon on both engines.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import { test, type TestContext } from "node:test";
import { probe, type Probed } from "../src/checks/probe.ts";
import type { CheckDone } from "../src/daemon.ts";
import { checkInput } from "../src/domain/schema/index.ts";
import { maskedCheck } from "../src/domain/schema/secrets.ts";
import type { StoredCheck } from "../src/domain/model.ts";
import { checkChange } from "../src/policy/change.ts";
import { fromGatus } from "../src/import/gatus.ts";
import { assertChecksRefused, testDaemon } from "./support/daemon.ts";
import { engines } from "./support/databases.ts";
import { nextEvent } from "./support/events.ts";
import { serveOnLoopback } from "./support/targets.ts";

const token = "tok-3f9a1c77e2b04d5e";
const session = "sess-8d2e4f6a";

/** The site: POST /login, then /me wants the token, /cart the cookie, /delay answers after ?ms, /stall never. */
async function site(t: TestContext): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const body = async (req: IncomingMessage) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    return text;
  };
  const server = createServer(async (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const json = (status: number, value: unknown, headers: Record<string, string | string[]> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(value));
    };
    const path = new URL(req.url!, "http://x").pathname;
    if (path === "/login" && req.method === "POST") {
      const sent = JSON.parse((await body(req)) || "{}") as { user?: string; password?: string };
      if (sent.password !== "hunter2") return json(403, { error: "wrong password" });
      // Values a hostile or careless API might hand out: a path, one too long to send, one that would split a header.
      const odd = { path: "../admin?x=1#y", big: "x".repeat(5000), crlf: "a\r\nx-injected: 1" };
      return json(200, { access_token: token, expires_in: 3600, user: { id: 42 }, odd }, {
        "x-request-id": "req-77",
        "set-cookie": [`theme=dark; Path=/`, `sid=${session}; Path=/; Expires=Wed, 09 Jun 2027 10:18:14 GMT; HttpOnly`],
      });
    }
    if (path === "/me") {
      if (req.headers.authorization !== `Bearer ${token}`) return json(401, { error: "no token" });
      return json(200, { user: "ann", id: 42 }, { "x-echo": String(req.headers.authorization) });
    }
    if (path.startsWith("/users/")) return json(path === "/users/42" && req.headers["x-request"] === "req-77" ? 200 : 404, {});
    if (path.startsWith("/echo/")) return json(200, {});
    if (path === "/cart") return json(req.headers.cookie === `sid=${session}` ? 200 : 401, { items: 0 });
    if (path === "/delay") {
      const ms = Number(new URL(req.url!, "http://x").searchParams.get("ms"));
      return void setTimeout(() => json(200, {}), ms);
    }
    if (path === "/stall") return; // accepts, reads, never answers
    json(404, {});
  });
  const port = await serveOnLoopback(t, server);
  return { url: `http://127.0.0.1:${port}/`, seen };
}

const login = { name: "login", url: "/login", method: "POST", headers: { "content-type": "application/json" }, body: '{"user":"ann","password":"hunter2"}', extract: { token: "$.access_token", id: "$.user.id" } };
const run = (check: unknown) => probe(checkInput.parse(check) as Probed);

test("steps: a login's token, sent by the next step, passes; the entry says each step's status and latency", async (t) => {
  const { url, seen } = await site(t);
  const outcome = await run({
    url,
    timeoutMs: 5000,
    steps: [login, { name: "me", url: "/me", headers: { authorization: "Bearer {{steps.login.token}}" }, expect: [{ status: 200, json: { path: "$.user", equals: "ann" } }] }],
  });
  assert.deepEqual([outcome.ok, outcome.status, outcome.errorKind, outcome.error], [true, 200, null, null]);
  assert.equal(outcome.answers?.length, 2);
  assert.match(outcome.answers![0]!, /^login: status 200 in \d+(\.\d)? ms$/);
  assert.match(outcome.answers![1]!, /^me: status 200 in \d+(\.\d)? ms$/);
  assert.deepEqual(seen, ["POST /login", "GET /me"]);
});

test("steps: the check fails at its first failing step, named, with the steps after it not run; a value never shows in an error", async (t) => {
  const { url, seen } = await site(t);
  const later = { name: "cart", url: "/cart" };
  // Step 2 is refused: no token sent.
  const refused = await run({ url, steps: [login, { name: "me", url: "/me" }, later] });
  assert.deepEqual([refused.ok, refused.status, refused.errorKind, refused.error], [false, 401, "status", "step me: status 401 was not expected (expected 2xx)"]);
  assert.match(refused.answers![1]!, /^me: status 401 in /);
  assert.equal(refused.answers![2], "cart: not run");
  assert.ok(!seen.includes("GET /cart"), "no step after the failing one is made");

  // Step 2 answers, but not what its own expect wants; the header it quotes holds the token: shown as its reference.
  const wrong = await run({
    url,
    steps: [login, { name: "me", url: "/me", headers: { authorization: "Bearer {{steps.login.token}}" }, expect: [{ header: { name: "x-echo", equals: "nope" } }] }],
  });
  assert.deepEqual([wrong.errorKind, wrong.error], ["header", 'step me: header x-echo is "Bearer {{steps.login.token}}", expected "nope"']);
  assert.ok(!JSON.stringify(wrong).includes(token));

  // Step 1 fails: the first step is named, and a left-out expect is the check's.
  const first = await run({ url, expect: [{ status: 200 }], steps: [{ ...login, body: '{"password":"wrong"}' }, later] });
  assert.deepEqual([first.errorKind, first.error], ["status", "step login: status 403 was not expected (expected 200)"]);

  // A value the answer does not have fails its step by its source's kind.
  const missing = await run({ url, steps: [{ ...login, extract: { refresh: "$.refresh_token" } }, later] });
  assert.deepEqual([missing.errorKind, missing.error], ["json", "step login: extract.refresh: $.refresh_token not found in the JSON body"]);
  const noHeader = await run({ url, steps: [{ ...login, extract: { trace: "header:traceparent" } }, later] });
  assert.deepEqual([noHeader.errorKind, noHeader.error], ["header", "step login: extract.trace: the answer has no traceparent header"]);
  const noCookie = await run({ url, steps: [{ ...login, extract: { s: "cookie:session" } }, later] });
  assert.deepEqual([noCookie.errorKind, noCookie.error], ["header", "step login: extract.s: the answer sets no cookie session"]);
  const object = await run({ url, steps: [{ ...login, extract: { user: "$.user" } }, later] });
  assert.equal(object.error, "step login: extract.user: $.user is an object, not a string, number or boolean a later step could send");
  // A value too long to send, or one that would split a later request's header, is never sent.
  const big = await run({ url, steps: [{ ...login, extract: { big: "$.odd.big" } }, later] });
  assert.equal(big.error, "step login: extract.big: $.odd.big is 5000 characters long, more than the 4096 a value may be");
  const crlf = await run({ url, steps: [{ ...login, extract: { v: "$.odd.crlf" } }, { name: "use", url: "/cart", headers: { "x-v": "{{steps.login.v}}" } }] });
  assert.deepEqual([crlf.errorKind, crlf.error], ["json", "step login: extract.v: $.odd.crlf holds control characters (CR, LF, ...), which a later step could not send"]);
  assert.ok(!seen.some((line) => line.startsWith("GET /cart")), "no step after the failing one is made");
});

test("steps: values from a header and a cookie, in a later step's url and headers", async (t) => {
  const { url } = await site(t);
  const outcome = await run({
    url,
    steps: [
      { ...login, extract: { id: "$.user.id", request: "header:X-Request-Id", sid: "cookie:sid" } },
      { name: "user", url: "/users/{{steps.login.id}}", headers: { "x-request": "{{ steps.login.request }}" } },
      { name: "cart", url: "/cart", headers: { cookie: "sid={{steps.login.sid}}" }, expect: [{ json: { path: "$.items", equals: 0 } }] },
    ],
  });
  assert.deepEqual([outcome.ok, outcome.error], [true, null]);
  assert.deepEqual(outcome.answers?.map((line) => line.split(":")[0]), ["login", "user", "cart"]);

  // In a url, a value is percent-encoded: it fills a segment, and cannot climb the path or start a query.
  const { url: base, seen } = await site(t);
  const odd = await run({ url: base, steps: [{ ...login, extract: { p: "$.odd.path" } }, { name: "echo", url: "/echo/{{steps.login.p}}?q={{steps.login.p}}" }] });
  assert.deepEqual([odd.ok, seen.at(-1)], [true, "GET /echo/..%2Fadmin%3Fx%3D1%23y?q=..%2Fadmin%3Fx%3D1%23y"]);
});

test("steps: one deadline covers every step: a stall at the last step fails the check at timeoutMs, with only what was left", async (t) => {
  const { url, seen } = await site(t);
  const timeoutMs = 800;
  const outcome = await run({ url, timeoutMs, steps: [login, { name: "slow", url: "/delay?ms=300" }, { name: "stuck", url: "/stall" }, { name: "after", url: "/me" }] });
  assert.deepEqual([outcome.ok, outcome.errorKind], [false, "timeout"]);
  // The stuck step had what the first two left of the check's 800 ms (at most 500), not 1500 of its own.
  const given = Number(/^step stuck: no complete answer within the (\d+) ms left of the check's timeoutMs \(800 ms\) \(timed out waiting for the response\)$/.exec(outcome.error!)?.[1]);
  assert.ok(given > 0 && given <= timeoutMs - 300, outcome.error!);
  assert.ok(outcome.latencyMs >= timeoutMs - 1, `the check's latency is its whole time (${outcome.latencyMs} ms)`);
  assert.deepEqual(outcome.answers?.slice(2), ["stuck: no answer in " + outcome.answers![2]!.split(" in ")[1], "after: not run"]);
  assert.deepEqual(seen, ["POST /login", "GET /delay?ms=300", "GET /stall"]);
});

test("the API refuses steps it could not run, naming the field and the fix", async (t) => {
  const d = await testDaemon(t);
  const base = "http://127.0.0.1:9/";
  const me = (more: object) => ({ name: "me", url: "/me", ...more });
  await assertChecksRefused(d, [
    [{ url: base, steps: [login, me({ headers: { authorization: "Bearer {{steps.auth.token}}" } })] }, "/services/0/check/steps/1/headers/authorization", /names step "auth", which this check does not have \(its steps: login, me\)/],
    [{ url: base, steps: [me({ url: "/me?t={{steps.login.token}}" }), login] }, "/services/0/check/steps/0/url", /names step login, which runs after this one; a step uses only the values of the steps before it/],
    [{ url: base, steps: [login, me({ body: "{{steps.me.x}}" })] }, "/services/0/check/steps/1/body", /names step me, which is this step/],
    [{ url: base, steps: [login, me({ headers: { authorization: "{{steps.login.refresh}}" } })] }, "/services/0/check/steps/1/headers/authorization", /step login extracts no refresh \(it extracts: token, id\)/],
    [{ url: base, steps: [login, me({ body: "{{steps.login}}" })] }, "/services/0/check/steps/1/body", /is not a reference; write \{\{steps\.STEP\.VALUE\}\}/],
    [{ url: base, steps: [login, { ...login }] }, "/services/0/check/steps/1/name", /repeats the name of steps\/0; step names are unique/],
    [{ url: base, steps: [{ name: "Log In" }] }, "/services/0/check/steps/0/name", /a-z 0-9 _ -/],
    [{ url: base, steps: [{ ...login, extract: { token: "body.token" } }] }, "/services/0/check/steps/0/extract/token", /JSONPath into the JSON body \(\$\.access_token\), header:NAME .* or cookie:NAME/],
    [{ url: base, steps: [{ ...login, extract: { token: "$..token" } }] }, "/services/0/check/steps/0/extract/token", /invalid JSONPath/],
    [{ url: base, steps: [me({ url: "ftp://127.0.0.1/x" })] }, "/services/0/check/steps/0/url", /must use http or https/],
    [{ url: base, steps: [me({ expect: [{ bodyMatches: "(a)\\1" }] })] }, "/services/0/check/steps/0/expect/0/bodyMatches", /backreference/],
    [{ url: base, headers: { authorization: "{{steps.login.token}}" }, steps: [login] }, "/services/0/check/headers/authorization", /only a step's url, headers and body may hold/],
    [{ url: base, steps: [] }, "/services/0/check/steps", /at least one step/],
    [{ url: base, steps: [me({ retries: 2 })] }, "/services/0/check/steps/0/retries", /is not a known field/],
  ]);
});

test("a read token sees the steps' secrets masked as it sees the check's: headers, query parameters, bodies", () => {
  const check = checkInput.parse({ url: "http://127.0.0.1:9/", steps: [login, { name: "me", url: "/me?api_key=k-123&page=2", headers: { authorization: "Bearer {{steps.login.token}}", accept: "text/plain" } }] });
  assert.equal(check.type, "http");
  if (check.type !== "http") return;
  const shown = maskedCheck(check);
  assert.deepEqual(
    shown.steps?.map(({ url, headers, body }) => ({ url, headers, body })),
    [
      { url: "/login", headers: { "content-type": "application/json" }, body: '{"user":"ann","password":"***"}' },
      { url: "/me?api_key=***&page=2", headers: { authorization: "***", accept: "text/plain" }, body: undefined },
    ],
  );
  assert.equal(check.steps?.[1]?.headers?.authorization, "Bearer {{steps.login.token}}", "the stored check is left as it was");
});

test("steps added, changed or taken away change the check (its service starts again); the same steps do not", () => {
  const stored = (check: unknown) => ({ ...(checkInput.parse(check) as object), notify: true, notifyThreshold: 2 }) as StoredCheck;
  const plain = stored({ url: "http://127.0.0.1:9/" });
  const stepped = stored({ url: "http://127.0.0.1:9/", steps: [login] });
  assert.deepEqual(checkChange(plain, stepped, false), { fields: ["check.steps"], checkChanged: true });
  assert.deepEqual(checkChange(stepped, plain, false), { fields: ["check.steps"], checkChanged: true });
  assert.deepEqual(checkChange(stepped, stored({ url: "http://127.0.0.1:9/", steps: [login] }), false), { fields: [], checkChanged: false });
});

for (const engine of engines) {
  test(`${engine}: a steps check through the daemon: checked, its failing step in the entry, stored as written, taken back unchanged`, async (t) => {
    const { url } = await site(t);
    const d = await testDaemon(t, { engine });
    const done = (id: string) => nextEvent<[CheckDone]>(d.events, "check:done", (r) => r.service.serviceId === id).then(([r]) => r);
    const up = done("flow");
    const down = done("broken");
    const me = { name: "me", url: "/me", headers: { authorization: "Bearer {{steps.login.token}}" }, expect: [{ status: 200 }] };
    const services = [
      { id: "flow", check: { url, intervalSeconds: 60, steps: [login, me] } },
      { id: "broken", check: { url, intervalSeconds: 60, notifyThreshold: 1, steps: [login, { ...me, headers: {} }] } },
    ];
    const put = await d.api("PUT", "/services/shop", { services });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const [flow, broken] = await Promise.all([up, down]);
    assert.deepEqual([flow.entry.ok, flow.entry.type, flow.entry.status, flow.entry.answers?.length], [true, "http", 200, 2]);
    assert.deepEqual([broken.entry.ok, broken.entry.errorKind, broken.entry.error], [false, "status", "step me: status 401 was not expected (expected 200)"]);

    const data = await d.api("GET", "/services/shop/broken/data");
    const [entry] = data.body.entries;
    assert.equal(entry.error, "step me: status 401 was not expected (expected 200)");
    assert.match(entry.answers[0], /^login: status 200 in /);
    assert.match(entry.answers[1], /^me: status 401 in /);

    const stored = await d.api("GET", "/services/shop");
    const flowCheck = stored.body.services.find((s: { id: string }) => s.id === "flow").check;
    assert.deepEqual(flowCheck.steps, [login, me]);
    const again = await d.api("PUT", "/services/shop", { services: stored.body.services.map((x: { id: string; check: unknown }) => ({ id: x.id, check: x.check })) });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body.services.map((x: { check: unknown }) => x.check), stored.body.services.map((x: { check: unknown }) => x.check));
  });
}

test("import --from gatus: a suite becomes a check with steps, its store extracts, its [CONTEXT] references; what does not map is said", async (t) => {
  const { url } = await site(t);
  const yaml = `
suites:
  - name: Shop checkout
    group: shop
    interval: 5m
    timeout: 30s
    context: {user: ann, password: hunter2}
    endpoints:
      - name: Log in
        url: "${url}login"
        method: POST
        headers: {Content-Type: application/json}
        body: '{"user":"[CONTEXT].user","password":"[CONTEXT].password"}'
        conditions: ["[STATUS] == 200", "[BODY].user.id == 42"]
        store: {token: "[BODY].access_token", code: "[STATUS]"}
        alerts: [{type: slack, failure-threshold: 2}]
      - name: Me
        url: "${url}me"
        headers: {Authorization: "Bearer [CONTEXT].token"}
        conditions: ["[STATUS] == 200", "[BODY].user == [CONTEXT].user", "[BODY].id == [CONTEXT].token"]
      - name: Clean up
        url: "${url}cart"
        client: {timeout: 2s}
        always-run: true
        conditions: ["[STATUS] < 500"]
  - name: Reads a status
    endpoints:
      - {name: a, url: "${url}login", store: {code: "[STATUS]"}}
      - {name: b, url: "${url}users/[CONTEXT].code"}
  - name: Mixed
    endpoints:
      - {name: port, url: "tcp://127.0.0.1:1", conditions: ["[CONNECTED] == true"]}
`;
  const imported = fromGatus(yaml, "default");
  const services = imported.servers.shop?.services ?? [];
  assert.deepEqual(services.map((s) => s.id), ["shop-checkout"]);
  assert.deepEqual(services[0]!.check, {
    url: `${url}login`,
    intervalSeconds: 300,
    timeoutMs: 30_000,
    steps: [
      {
        name: "log-in", url: `${url}login`, method: "POST", headers: { "content-type": "application/json" }, body: '{"user":"ann","password":"hunter2"}',
        expect: [{ status: 200, json: { path: "$.user.id", equals: 42 } }], extract: { token: "$.access_token" },
      },
      { name: "me", url: `${url}me`, headers: { authorization: "Bearer {{steps.log-in.token}}" }, expect: [{ status: 200, json: { path: "$.user", equals: "ann" } }] },
      { name: "clean-up", url: `${url}cart`, expect: [{ status: ["2xx", "3xx", "4xx"] }] },
    ],
    notifyThreshold: 2,
    recoverThreshold: 2,
  });
  assert.deepEqual(imported.notes, [
    'suite "Shop checkout": endpoint "Log in": store code: "[STATUS]" is not a [BODY].path healthd can extract (only JSON paths of the body are); not stored',
    'suite "Shop checkout": endpoint "Me": condition "[BODY].id == [CONTEXT].token" compares with a value of the suite\'s context, which healthd\'s expect cannot (it compares with what is written); left out',
    'suite "Shop checkout": endpoint "Clean up": its client timeout does not carry over: the suite\'s timeout (the check\'s timeoutMs) covers all its steps',
    'suite "Shop checkout": endpoint "Clean up": always-run: Gatus runs it even after a failure; healthd stops at the first failing step, so it runs only when the steps before it pass',
    'suite "Reads a status": endpoint "a": store code: "[STATUS]" is not a [BODY].path healthd can extract (only JSON paths of the body are); not stored',
    'suite "Reads a status": its endpoint "b" reads [CONTEXT].code, which no endpoint before it stores as a [BODY] path and the suite\'s context does not set; not carried over',
    'suite "Mixed": its endpoint "port" is a tcp check; healthd\'s steps are http requests; not carried over',
  ]);
  // A suite without alerts is imported quiet, and said so, as a plain endpoint without them is.
  const quiet = fromGatus(`suites:\n  - name: q\n    endpoints: [{name: a, url: "${url}login"}]\n`, "default");
  assert.equal(quiet.servers.default?.services[0]?.check.notify, false);
  assert.deepEqual(quiet.notes, ["alerts: 1 suite has no alerts on any endpoint in Gatus, so notify: false; remove it to be notified"]);
  // What was imported runs: the login's token reaches the next step.
  const outcome = await run(services[0]!.check);
  assert.deepEqual([outcome.ok, outcome.error, outcome.answers?.length], [true, null, 3]);
});
