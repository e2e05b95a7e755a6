/**
 * Healthchecks.io's `manual_resume` over its management API v3 is the heartbeat's `manualResume` (issue 80):
 * set on create and update, kept when an update leaves it out, answered from what healthd stores whichever API
 * set it, and doing what it says: a ping leaves the paused check paused. Over real HTTP, on both engines.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";

const adminToken = "the-daemons-own-token-0123";
const admin = { authorization: `Bearer ${adminToken}` };

for (const engine of engines) {
  test(`${engine}: manual_resume <-> manualResume, both ways, and a ping does not resume such a paused check`, async (t) => {
    const d = await testDaemon(t, { engine, token: adminToken });
    const key = (await d.api("POST", "/tokens", { name: "terraform", scope: "write" }, admin)).body.token as string;
    const hc = (method: string, path: string, body?: unknown) => d.api(method, `/api/v3${path}`, body, { "x-api-key": key });
    const stored = async () => (await d.api("GET", "/services/healthchecks/nightly", undefined, admin)).body.check.manualResume as boolean;

    const created = await hc("POST", "/checks/", { name: "Nightly", slug: "nightly", timeout: 3600, grace: 60, manual_resume: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.manual_resume, true);
    assert.equal(await stored(), true, "kept as the heartbeat's manualResume");
    const uuid = created.body.uuid as string;

    const renamed = await hc("POST", `/checks/${uuid}`, { name: "Nightly backup" });
    assert.equal(renamed.body.manual_resume, true, "an update that leaves it out keeps it");
    const cleared = await hc("POST", `/checks/${uuid}`, { manual_resume: false });
    assert.equal(cleared.body.manual_resume, false);
    assert.equal(await stored(), false);

    // Set through healthd's own API: HC's view says it.
    const service = (await d.api("GET", "/services/healthchecks/nightly", undefined, admin)).body;
    const put = await d.api("PUT", "/services/healthchecks/nightly", { name: service.name, check: { ...service.check, manualResume: true } }, admin);
    assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
    assert.equal((await hc("GET", `/checks/${uuid}`)).body.manual_resume, true);

    assert.equal((await hc("POST", `/checks/${uuid}/pause`)).status, 200);
    assert.equal((await fetch(`${d.url}/ping/${uuid}`)).status, 200);
    assert.equal((await hc("GET", `/checks/${uuid}`)).body.status, "paused", "the ping did not resume it");
    assert.equal((await hc("POST", `/checks/${uuid}/resume`)).status, 200);
    assert.notEqual((await hc("GET", `/checks/${uuid}`)).body.status, "paused");
  });
}
