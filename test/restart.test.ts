/** The daemon as users run it, stopped and killed in the middle of an incident. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { serveHealthd } from "./support/cli.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn, type NtfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

const titles = (ntfy: NtfyStandIn) => ntfy.messages("ops").map((m) => m.title);
const nextMessage = (ntfy: NtfyStandIn, title: string) => nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === title);

for (const signal of ["SIGTERM", "SIGKILL"] as const) {
  test(`${signal} in the middle of an incident: after the restart, no repeated DOWN, then one RECOVERED`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const target = await switchableTarget(t);
    const env = { HEALTHD_DB: tempDbPath(t), HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };
    const first = await serveHealthd(t, [], env);
    const down = nextMessage(ntfy, "DOWN: web-01/home");
    const put = await fetch(first.url + "/services/web-01", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 1 } }] }),
    });
    assert.equal(put.status, 201);
    await down;
    const code = await first.stop(signal);
    assert.equal(code, signal === "SIGTERM" ? 0 : null);

    await serveHealthd(t, [], env);
    // Two more failed checks by the restarted daemon.
    const hits = target.hits();
    await nextEvent(target.events, "hit", () => target.hits() >= hits + 2);
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/home"]);
    const recovered = nextMessage(ntfy, "RECOVERED: web-01/home");
    target.setUp(true);
    await recovered;
    await nextEvent(target.events, "hit");
    assert.deepEqual(titles(ntfy), ["DOWN: web-01/home", "RECOVERED: web-01/home"]);
  });
}

test("SIGKILL with a DOWN queued but not delivered: the restarted daemon delivers it once", async (t) => {
  const ntfy = await ntfyStandIn(t);
  await ntfy.stop();
  const target = await switchableTarget(t);
  const env = { HEALTHD_DB: tempDbPath(t), HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };
  const first = await serveHealthd(t, [], env);
  const queued = first.waitForLog(/notification not delivered; will retry/);
  await fetch(first.url + "/services/web-01", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ services: [{ id: "home", check: { url: target.url, intervalSeconds: 1, notifyThreshold: 0 } }] }),
  });
  await queued;
  assert.equal(await first.stop("SIGKILL"), null);

  await ntfy.start();
  const delivered = nextMessage(ntfy, "DOWN: web-01/home");
  await serveHealthd(t, [], env);
  await delivered;
  const hits = target.hits();
  await nextEvent(target.events, "hit", () => target.hits() >= hits + 2);
  assert.deepEqual(titles(ntfy), ["DOWN: web-01/home"]);
});
