/**
 * The status pages' memory of the services (src/status/memory.ts) is a cache of the database, never a second
 * authority: after results, a PUT and a DELETE it holds what a fresh read says, and a memory over another
 * connection (standing for another node) comes to hold the results this daemon stored. On both engines.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { test } from "node:test";
import { systemClock } from "../src/platform/clock.ts";
import { ServiceMemory } from "../src/status/memory.ts";
import type { StoredService } from "../src/store/store.ts";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent, until } from "./support/events.ts";
import { open } from "./support/raw.ts";
import { refusedUrl, switchableTarget } from "./support/targets.ts";

type Done = [{ service: { serviceId: string } }];

for (const engine of engines) {
  test(`${engine}: the memory of the services matches a fresh read after results, a PUT and a DELETE, and follows another node's results`, async (t) => {
    const d = await testDaemon(t, { engine });
    const target = await switchableTarget(t);
    target.setUp(true);
    // Wired as the daemon wires its own: told of each committed result and each change of configuration.
    const memory = new ServiceMemory(d.store, { clock: systemClock });
    d.events.on("check:done", (r) => memory.committed([r.service.key]));
    d.events.on("schedule:changed", () => memory.reload());
    // Another node's view: its own connection, told by the store only (as the daemon's watches tell it).
    const other = await open(d.db, { mode: "write" });
    t.after(() => other.close());
    const elsewhere = new ServiceMemory(other, { clock: systemClock, othersEveryMs: 200 });
    t.after(() => elsewhere.stop());
    t.after(other.watch(() => elsewhere.othersStored(), { of: "entries" }));
    t.after(other.watch(() => elsewhere.reload()));
    const same = async (what: string) => assert.deepEqual(await memory.services(), await d.store.services(), what);

    const first = (id: string) => nextEvent<Done>(d.events, "check:done", (r) => r.service.serviceId === id);
    const both = Promise.all([first("web"), first("api")]);
    const check = (url: string) => ({ url, intervalSeconds: 86_400, notifyThreshold: 0 });
    const put = await d.api("PUT", "/services/shop", { name: "Shop", services: [{ id: "web", name: "Web", check: check(target.url) }, { id: "api", name: "API", check: check(await refusedUrl()) }] });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.deepEqual(await memory.services(), await d.store.services(), "read whole");
    await elsewhere.services(); // read whole, before the results below
    await both;
    await same("after the first results");
    const statuses = (list: readonly StoredService[]) => list.map((s) => `${s.id}:${s.state?.status}:${s.lastEntry?.id}`).join(" ");
    assert.equal(statuses(await memory.services()).replace(/:\d+/g, ""), "web:up api:down");

    // A changed check (its URL now fails) runs again: the memory reads the configuration, then the result.
    target.setUp(false);
    const failed = first("web");
    assert.equal((await d.api("PUT", "/services/shop/web", { name: "Web shop", check: { ...check(target.url), timeoutMs: 4000 } })).status, 200);
    await same("after a PUT");
    await failed;
    await same("after the PUT's result");
    assert.match(statuses(await memory.services()), /^web:down:\d+ api:down:\d+$/);

    assert.equal((await d.api("DELETE", "/services/shop/api")).status, 204);
    await same("after a DELETE");
    assert.deepEqual((await memory.services()).map((s) => s.name), ["Web shop"]);

    // The other node's memory was never told of this daemon's results or changes but by the store.
    const fresh = await d.store.services();
    await until(() => elsewhere.services(), (list) => isDeepStrictEqual(list, fresh), "the other node's memory to read what this one stored");
  });
}
