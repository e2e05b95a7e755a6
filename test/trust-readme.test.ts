/**
 * The guide's examples work as written on a fresh install: the heartbeat example's requests
 * (docs/guide/cron-jobs.md), run with curl as a reader would run them (only the host made the test daemon's),
 * answer what the guide says they answer.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { promisify } from "node:util";
import { testDaemon } from "./support/daemon.ts";

const guide = readFileSync(new URL("../docs/guide/cron-jobs.md", import.meta.url), "utf8");

/** The first sh block under `heading`, as commands (continued lines joined) each with the status its `# NNN` comment says. */
function exampleRequests(heading: string): { command: string; status: number }[] {
  const section = guide.slice(guide.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? assert.fail(`no sh block under ${heading}`);
  const lines = block.replace(/\\\n\s*/g, " ").split("\n");
  return lines.flatMap((line, i) => {
    if (!line.startsWith("curl ")) return [];
    const status = /^# (\d{3})\b/.exec(lines[i + 1] ?? "")?.[1];
    return [{ command: line, status: Number(status ?? assert.fail(`no "# status" line after ${line}`)) }];
  });
}

test("docs/guide/cron-jobs.md: the heartbeat example's requests answer as it says, on a fresh install", async (t) => {
  const d = await testDaemon(t);
  const requests = exampleRequests("# Watching cron jobs (heartbeats)");
  assert.ok(requests.some((r) => r.command.includes("/services/db1/backup")), "the example PUTs db1/backup");
  for (const { command, status } of requests) {
    const run = command.replaceAll("localhost:8080", new URL(d.url).host) + ` -sS -o /dev/null -w '%{http_code}'`;
    const { stdout } = await promisify(execFile)("sh", ["-c", run]);
    assert.equal(Number(stdout), status, `${command} answered ${stdout}`);
  }
  const backup = await d.api("GET", "/services/db1/backup");
  assert.equal(backup.status, 200);
  assert.deepEqual([backup.body.check.type, backup.body.check.graceSeconds], ["heartbeat", 3600], "the default grace the guide shows");
});
