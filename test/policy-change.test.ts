/**
 * What a change of configuration changes (src/policy/change.ts), without a database: which services a server's
 * document creates, keeps and deletes, and which fields of a kept service's check changed (when it did, the
 * service is started again). The store's part is tested through the API (test/api.test.ts, commands.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { StoredCheck } from "../src/domain/model.ts";
import { serverDocument, serviceDocument } from "../src/domain/schema/index.ts";
import { checkChange, planServerChange } from "../src/policy/change.ts";

const check = { url: "http://127.0.0.1:9/" };
const doc = (services: { id: string; name?: string }[], name?: string) =>
  serverDocument.parse({ ...(name ? { name } : {}), services: services.map((s) => ({ ...s, check })) });

test("planServerChange: a new server creates every service", () => {
  const plan = planServerChange("web", undefined, doc([{ id: "a" }, { id: "b" }]));
  assert.deepEqual([plan.name, plan.renamed, plan.create.map((s) => s.id), plan.keep, plan.delete], ["web", false, ["a", "b"], [], []]);
});

test("planServerChange: the document is the whole truth; names default to ids", () => {
  const stored = { name: "Web", services: [{ key: 1, id: "a", name: "a" }, { key: 2, id: "b", name: "B" }, { key: 3, id: "c", name: "c" }] };
  const plan = planServerChange("web", stored, doc([{ id: "a" }, { id: "b" }, { id: "d" }]));
  assert.equal(plan.name, "web");
  assert.equal(plan.renamed, true);
  assert.deepEqual(plan.create.map((s) => s.id), ["d"]);
  assert.deepEqual(plan.keep.map((k) => [k.key, k.doc.id, k.renamed]), [[1, "a", false], [2, "b", true]]);
  assert.deepEqual(plan.delete, [{ key: 3, id: "c" }]);
  assert.equal(planServerChange("web", stored, doc([], "Web")).renamed, false);
});

/** A check as the store reads it back: the schema's defaults filled in. */
const stored = (check: object): StoredCheck => ({ ...serviceDocument.parse({ id: "a", check }).check, notify: true, notifyThreshold: 0 });

test("checkChange: a check written again as it was changes nothing, even when the document spells out a default", () => {
  const before = stored({ url: "http://127.0.0.1:9/" });
  assert.deepEqual(checkChange(before, stored({ url: "http://127.0.0.1:9/", method: "GET", intervalSeconds: 60 }), false), { fields: [], checkChanged: false });
});

test("checkChange: the fields that differ are named, and the service is started again", () => {
  const before = stored({ url: "http://127.0.0.1:9/", intervalSeconds: 60 });
  const after = stored({ url: "http://127.0.0.1:9/v2", intervalSeconds: 30, expect: [{ status: 200 }] });
  assert.deepEqual(checkChange(before, after, false), { fields: ["check.url", "check.expect", "check.intervalSeconds"], checkChanged: true });
});

test("checkChange: a rename alone changes the name, not the check: the service keeps its schedule", () => {
  const check = stored({ url: "http://127.0.0.1:9/" });
  assert.deepEqual(checkChange(check, check, true), { fields: ["name"], checkChanged: false });
  assert.deepEqual(checkChange(check, stored({ url: "http://127.0.0.1:9/x" }), true), { fields: ["name", "check.url"], checkChanged: true });
});

test("checkChange: a service that had no check stored gets one whole", () => {
  assert.deepEqual(checkChange(undefined, stored({ url: "http://127.0.0.1:9/" }), false), { fields: ["check"], checkChanged: true });
});
