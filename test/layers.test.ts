/**
 * The rules of the tree, held by the test run: the layers of .dependency-cruiser.cjs (no cycles; domain/ imports
 * nothing else of src; policy/ only domain/; only store/ reaches its engines and queries; ...), small files, and
 * time read only through the clock.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cruise } from "dependency-cruiser";
import ts from "typescript";

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

/** Every .ts and .tsx file of src/, as a path relative to the root. */
function sources(dir = join(root, "src")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) ? [relative(root, path)] : [];
  });
}

const timers = new Set(["setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "clearImmediate"]);

/**
 * Where a file reads the time or sets a timer itself: `Date.now`, `new Date()` with no argument, `performance.now`,
 * Node's timer functions (bare or on globalThis) and imports of node:timers. Read from the syntax tree, so that
 * comments and the browser's script in a page's text do not count; `new Date(at)` formats a moment, and does not.
 */
function clockReads(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(join(root, path), "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => found.push(`${path}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}: ${what}`);
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && /^(node:)?timers(\/promises)?$/.test(node.moduleSpecifier.text)) {
      at(node, `imports ${node.moduleSpecifier.text}`);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === "globalThis" ? callee.name.text : "";
      if (timers.has(name)) at(node, `${name}()`);
    } else if (ts.isPropertyAccessExpression(node) && node.name.text === "now" && ts.isIdentifier(node.expression) && ["Date", "performance"].includes(node.expression.text)) {
      at(node, `${node.expression.text}.now`);
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "Date" && (node.arguments?.length ?? 0) === 0) {
      at(node, "new Date()");
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

test("time is read, and timers set, only through the clock (src/platform/clock.ts)", () => {
  const outside = sources().filter((path) => path !== join("src", "platform", "clock.ts")).flatMap(clockReads);
  assert.deepEqual(
    outside,
    [],
    "use the Clock the caller has or is handed (clock.now(), clock.monotonic(), clock.setTimeout(), sleep(clock, ms)), or nextTurn/yieldTurn for the next turn of the event loop, so that a fake clock can drive it",
  );
});
