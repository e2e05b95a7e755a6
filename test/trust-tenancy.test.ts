/**
 * Tenancy (issue 78): a token limited to some servers can neither name another server's service nor learn that
 * it exists, and a `read` token sees checks with their secrets masked.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon, type ApiAnswer, type TestDaemon } from "./support/daemon.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };
const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
const pingKey = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278";

async function makeToken(d: TestDaemon, body: object): Promise<string> {
  const made = await d.api("POST", "/tokens", body, admin);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  return made.body.token;
}

/** What an answer says, with the name it was asked about taken out: two answers alike say the same of both. */
const shape = (answer: ApiAnswer, name: string) => ({ status: answer.status, body: JSON.stringify(answer.body).replaceAll(name, "NAME") });

for (const engine of engines) {
  test(`${engine}: a token limited to its server names nothing of another's: the same 403 for a service that exists and one that does not`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    const heartbeat = (id: string, key?: string) => ({ id, check: { type: "heartbeat", periodSeconds: 3600, ...(key ? { pingKey: key } : {}) } });
    assert.equal((await d.api("PUT", "/services/secret", { services: [heartbeat("api", pingKey)] }, admin)).status, 201);
    assert.equal((await d.api("PUT", "/services/hb", { services: [heartbeat("job")] }, admin)).status, 201);
    const hb = await makeToken(d, { name: "hb-deploy", scope: "write", servers: ["hb"] });

    // Each reference to another server's service is answered as one to a service that does not exist.
    const pairs: [string, (name: string) => Promise<ApiAnswer>][] = [
      ["PUT service, dependsOn", (name) => d.api("PUT", "/services/hb/web", { check: { type: "heartbeat", periodSeconds: 60, dependsOn: [name] } }, as(hb))],
      ["PUT server, dependsOn", (name) => d.api("PUT", "/services/hb", { services: [{ id: "job", check: { type: "heartbeat", periodSeconds: 60, dependsOn: [name] } }] }, as(hb))],
      ["silence", (name) => d.api("POST", "/silences", { server: name.split("/")[0], service: name.split("/")[1], durationSeconds: 60 }, as(hb))],
      ["announcement", (name) => d.api("POST", "/announcements", { title: "t", message: "m", servers: [name.split("/")[0]] }, as(hb))],
      ["GET service", (name) => d.api("GET", `/services/${name}`, undefined, as(hb))],
      ["GET incidents", (name) => d.api("GET", `/services/${name}/incidents`, undefined, as(hb))],
      ["GET entries", (name) => d.api("GET", `/services/${name}/data`, undefined, as(hb))],
      ["GET stats", (name) => d.api("GET", `/services/${name}/stats`, undefined, as(hb))],
      ["GET all incidents of a server", (name) => d.api("GET", `/incidents?server=${name.split("/")[0]}`, undefined, as(hb))],
    ];
    for (const [what, ask] of pairs) {
      const real = await ask("secret/api");
      const made = await ask("ghost/api");
      assert.equal(real.status, 403, `${what}: ${JSON.stringify(real.body)}`);
      // The server's name is the one thing that differs: replaced, both answers are the same.
      assert.deepEqual(shape(real, "secret"), shape(made, "ghost"), what);
    }
    // A service of the token's own server that does not exist is still a plain 400 (it may know its own).
    const own = await d.api("PUT", "/services/hb/web", { check: { type: "heartbeat", periodSeconds: 60, dependsOn: ["hb/nope"] } }, as(hb));
    assert.equal(own.status, 400);

    // A pingKey taken by another server's service: refused, without naming it.
    const taken = await d.api("PUT", "/services/hb/copy", { check: { type: "heartbeat", periodSeconds: 60, pingKey } }, as(hb));
    assert.equal(taken.status, 409);
    assert.doesNotMatch(JSON.stringify(taken.body), /secret|api/);
    assert.match(taken.body.detail, /another server/);
    // The admin is told which.
    assert.match((await d.api("PUT", "/services/hb/copy", { check: { type: "heartbeat", periodSeconds: 60, pingKey } }, admin)).body.detail, /secret\/api/);

    // Nothing ties secret/api to hb: the admin's DELETE goes through.
    assert.equal((await d.api("DELETE", "/services/secret/api", undefined, admin)).status, 204);
  });

  test(`${engine}: a limited token keeps the references an admin gave its services, and is not told whose they are when it would break one`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    const hbDoc = { services: [{ id: "job", check: { type: "heartbeat", periodSeconds: 3600, dependsOn: ["db/main"] } }] };
    assert.equal((await d.api("PUT", "/services/db", { services: [{ id: "main", check: { type: "heartbeat", periodSeconds: 3600 } }] }, admin)).status, 201);
    assert.equal((await d.api("PUT", "/services/hb", hbDoc, admin)).status, 201);
    assert.equal((await d.api("PUT", "/services/other", { services: [{ id: "x", check: { type: "heartbeat", periodSeconds: 3600, dependsOn: ["hb/job"] } }] }, admin)).status, 201);
    const hb = await makeToken(d, { name: "hb-deploy", scope: "write", servers: ["hb"] });
    // Its own document sent back as it was: the admin's reference stays.
    assert.equal((await d.api("PUT", "/services/hb", { name: "HB", ...hbDoc }, as(hb))).status, 200);
    // Deleting what another server's service depends on: refused, without naming that service.
    const refused = await d.api("DELETE", "/services/hb/job", undefined, as(hb));
    assert.equal(refused.status, 409);
    assert.doesNotMatch(JSON.stringify(refused.body), /other\/x/);
  });

  test(`${engine}: announcements, silences and named pages of other servers answer a limited token as ones that do not exist`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    const doc = { services: [{ id: "job", check: { type: "heartbeat", periodSeconds: 3600 } }] };
    for (const id of ["hb", "secret"]) assert.equal((await d.api("PUT", `/services/${id}`, doc, admin)).status, 201);
    const hb = await makeToken(d, { name: "hb-deploy", scope: "write", servers: ["hb"] });
    const hbAdmin = await makeToken(d, { name: "hb-admin", scope: "admin", servers: ["hb"] });

    const theirs = (await d.api("POST", "/announcements", { title: "Secret maintenance", message: "m", servers: ["secret"] }, admin)).body.id;
    const none = String(Number(theirs) + 1000);
    for (const [method, suffix, body] of [["GET", "", undefined], ["PATCH", "", { ended: true }], ["DELETE", "", undefined], ["POST", "/updates", { message: "x" }]] as const) {
      const real = await d.api(method, `/announcements/${theirs}${suffix}`, body, as(hb));
      const made = await d.api(method, `/announcements/${none}${suffix}`, body, as(hb));
      assert.equal(real.status, 404, `${method} ${suffix}`);
      assert.deepEqual(shape(real, theirs), shape(made, none), `${method} ${suffix}`);
    }

    const silence = (await d.api("POST", "/silences", { server: "secret", durationSeconds: 600 }, admin)).body.id;
    const gone = String(Number(silence) + 1000);
    assert.deepEqual(shape(await d.api("DELETE", `/silences/${silence}`, undefined, as(hb)), silence), shape(await d.api("DELETE", `/silences/${gone}`, undefined, as(hb)), gone));

    assert.equal((await d.api("PUT", "/status-pages/secret-page", { title: "Secret", servers: ["secret"] }, admin)).status, 201);
    assert.equal((await d.api("PUT", "/status-pages/hb-page", { title: "HB", servers: ["hb"] }, admin)).status, 201);
    assert.deepEqual((await d.api("GET", "/status-pages", undefined, as(hbAdmin))).body.pages.map((p: { slug: string }) => p.slug), ["hb-page"]);
    assert.deepEqual(shape(await d.api("GET", "/status-pages/secret-page", undefined, as(hbAdmin)), "secret-page"), shape(await d.api("GET", "/status-pages/ghost-page", undefined, as(hbAdmin)), "ghost-page"));
    const realPage = await d.api("GET", "/status/p/secret-page", undefined, as(hb));
    assert.equal(realPage.status, 404);
    assert.deepEqual(shape(realPage, "secret-page"), shape(await d.api("GET", "/status/p/ghost-page", undefined, as(hb)), "ghost-page"));
    // Writing a page, a channel or a token serves every server: not for a limited admin.
    assert.equal((await d.api("PUT", "/status-pages/secret-page", { title: "Mine now", servers: ["hb"] }, as(hbAdmin))).status, 403);
    assert.equal((await d.api("POST", "/tokens", { name: "escalate", scope: "admin" }, as(hbAdmin))).status, 403);
    assert.equal((await d.api("GET", "/tokens", undefined, as(hbAdmin))).status, 403);
    assert.equal((await d.api("PUT", "/channels/hooks", { type: "webhook", url: "http://127.0.0.1:9/x" }, as(hbAdmin))).status, 403);
  });

  test(`${engine}: a read token sees checks with secret-looking headers and body fields masked and no pingKey; write and admin see them`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    const check = {
      url: "http://127.0.0.1:9/health?region=eu&api_key=k2",
      method: "POST",
      headers: { Authorization: "Bearer abc", Cookie: "s=1", "Proxy-Authorization": "Basic x", "X-Api-Key": "k1", "x-session-TOKEN": "t1", "x-trace": "visible" },
      body: JSON.stringify({ user: "ops", password: "hunter2", nested: { client_secret: "s3" }, note: "hello" }),
      intervalSeconds: 3600,
    };
    const doc = {
      services: [
        { id: "web", check },
        { id: "form", check: { ...check, headers: {}, body: "user=ops&password=hunter2&x=1" } },
        { id: "job", check: { type: "heartbeat", periodSeconds: 3600, pingKey, pushToken: "kumaPushToken7" } },
      ],
    };
    assert.equal((await d.api("PUT", "/services/s", doc, admin)).status, 201);
    const reader = await makeToken(d, { name: "grafana", scope: "read" });
    const writer = await makeToken(d, { name: "deploy", scope: "write" });

    for (const [who, headers] of [["read", as(reader)], ["write", as(writer)], ["admin", admin]] as const) {
      const server = (await d.api("GET", "/services/s", undefined, headers)).body;
      const service = (await d.api("GET", "/services/s/web", undefined, headers)).body;
      const job = (await d.api("GET", "/services/s/job", undefined, headers)).body;
      const form = server.services.find((s: { id: string }) => s.id === "form");
      const shown = [server.services.find((s: { id: string }) => s.id === "web").check, service.check];
      const text = JSON.stringify([server, service, job]);
      if (who === "read") {
        for (const c of shown) {
          assert.deepEqual(c.headers, { Authorization: "***", Cookie: "***", "Proxy-Authorization": "***", "X-Api-Key": "***", "x-session-TOKEN": "***", "x-trace": "visible" });
          assert.deepEqual(JSON.parse(c.body), { user: "ops", password: "***", nested: { client_secret: "***" }, note: "hello" });
          assert.equal(c.url, "http://127.0.0.1:9/health?region=eu&api_key=***");
        }
        assert.equal(form.check.body, "user=ops&password=***&x=1");
        assert.equal("pingKey" in job.check, false);
        assert.equal("pingKey" in server, false, "a server's ping key pings its heartbeats by slug: a read token does not see it");
        for (const secret of ["abc", "hunter2", "k1", "k2", "t1", "s3", pingKey, "kumaPushToken7"]) assert.ok(!text.includes(secret), `${who} sees ${secret}`);
      } else {
        for (const c of shown) assert.deepEqual([c.headers, c.url], [check.headers, check.url]);
        assert.equal(service.check.body, check.body);
        assert.equal(form.check.body, "user=ops&password=hunter2&x=1");
        assert.equal(job.check.pingKey, pingKey);
        assert.equal(job.check.pushToken, "kumaPushToken7");
        assert.match(server.pingKey, /^[a-z0-9]{22}$/);
      }
    }
  });
}
