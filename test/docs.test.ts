/**
 * The docs a reader meets stay true and short: the reference pages are what `npm run docs` makes from the code
 * today, and the README and the benchmark page keep to their length.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { referencePages } from "../scripts/docs.ts";

const root = new URL("../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

test("docs/reference/ is what `npm run docs` makes from the code", async () => {
  for (const [path, made] of await referencePages()) {
    assert.ok(read(path) === made, `${path} is stale: run \`npm run docs\` and commit the result`);
  }
});

test("the README is a guide of at most 400 lines, and docs/benchmarks.md at most 200", () => {
  const lines = (path: string) => read(path).split("\n").length;
  assert.ok(lines("README.md") <= 400, `README.md has ${lines("README.md")} lines: move how-tos to docs/guide/ and reference to docs/reference/`);
  assert.ok(lines("docs/benchmarks.md") <= 200, `docs/benchmarks.md has ${lines("docs/benchmarks.md")} lines: keep today's figure per target; the history is in git`);
});
