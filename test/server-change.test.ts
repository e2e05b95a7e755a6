import assert from "node:assert/strict";
import { test } from "node:test";
import { serverDocument } from "../src/domain/schema/index.ts";
import { planServerChange } from "../src/store/server-change.ts";

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
