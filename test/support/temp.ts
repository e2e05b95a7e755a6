/** Temporary folders for test databases, removed when the test ends. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "healthd-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function tempDbPath(t: TestContext): string {
  return join(tempDir(t), "healthd.db");
}
