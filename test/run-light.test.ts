/**
 * `healthd run` and `healthd ping` stand on crontab lines: what the built dist/main.js loads before it knows
 * the command is theirs must stay small (issue 80: 1 to 2 s and a second of CPU per job when it loaded the whole
 * program). Asserted on the bundle's static imports, not on time (bench/run.ts measures that): only node's own
 * modules and a few small files of dist/, never commander, undici or the store.
 */
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runHealthd } from "./support/cli.ts";

const dist = fileURLToPath(new URL("../dist/", import.meta.url));

/** The files dist/main.js loads before its first line runs, and the packages they name. */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(join(dist, file), "utf8");
    // Static imports only (`import x from "y"`, `import "y"`); import("y") loads later, when asked.
    for (const [, specifier] of text.matchAll(/^import\s+(?:[^"'()]*?\s+from\s+)?["']([^"']+)["'];?$/gms)) {
      if (specifier!.startsWith("./")) visit(specifier!.slice(2));
      else packages.add(specifier!);
    }
  };
  visit(entry);
  return { files, packages };
}

test("dist/main.js loads only node's modules and a few small files of its own before it dispatches run and ping", () => {
  const { files, packages } = staticGraph("main.js");
  const builtin = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  assert.deepEqual([...packages].filter((p) => !builtin.has(p)), [], "a package on the path of every crontab line: import it where it is used, with import()");
  const bytes = [...files].reduce((sum, f) => sum + statSync(join(dist, f)).size, 0);
  assert.ok(bytes < 40_000, `the run path is ${bytes} bytes of JavaScript in ${[...files].join(", ")}: move what only other commands need behind import()`);
});

test("what the light path does not read for certain goes to the whole program: help, a flag of another command, a bad value", async () => {
  const help = await runHealthd(["run", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: healthd run \[options\] \[target\] \[command\.\.\.\]/);
  const unknown = await runHealthd(["ping", "db1/backup", "--db", "x.db"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option '--db'/);
  const empty = await runHealthd(["run", "--ping-key", "nope", "--", "true"]);
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /--ping-key \(HEALTHD_PING_KEY\) must be a UUID/);
});
