/**
 * The rules of the tree, held by the test run: the layers of .dependency-cruiser.cjs (no cycles; domain/ imports
 * nothing else of src; policy/ only domain/; only store/ reaches its engines and queries; ...), and small files.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cruise } from "dependency-cruiser";

const root = fileURLToPath(new URL("../", import.meta.url));

test("src/ keeps its layers: every import runs down the layers of .dependency-cruiser.cjs", async () => {
  const config = createRequire(import.meta.url)(join(root, ".dependency-cruiser.cjs"));
  const cwd = process.cwd();
  process.chdir(root); // dependency-cruiser reads paths, and the tsconfig, from where it runs
  try {
    const result = await cruise(["src"], { ruleSet: config, validate: true, ...config.options, outputType: "json" });
    const output = typeof result.output === "string" ? JSON.parse(result.output) : result.output;
    const violations = (output.summary.violations as { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[]).map(
      (v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle: ${v.cycle.map((c) => c.name).join(" → ")})` : ""}`,
    );
    assert.deepEqual(violations, [], "move the import, or the type it needs, to the layer where it belongs (docs/architecture.md)");
    assert.ok(output.summary.totalCruised > 200, `dependency-cruiser read ${output.summary.totalCruised} modules of src/: it could not resolve the imports`);
  } finally {
    process.chdir(cwd);
  }
});

test("no file of src/ is over 400 lines", () => {
  const long: string[] = [];
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (/\.tsx?$/.test(entry.name)) {
        const lines = readFileSync(path, "utf8").split("\n").length;
        if (lines > 400) long.push(`${relative(root, path)}: ${lines} lines`);
      }
    }
  };
  visit(join(root, "src"));
  assert.deepEqual(long, [], "split it by what its parts are for");
});
