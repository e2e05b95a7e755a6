/**
 * Imports carry alert timing over exactly, and say what they leave out: Kuma's maxretries N alerts on the
 * same check in healthd (notifyThreshold N); a retryInterval healthd cannot follow is said; a push monitor
 * alerts when Kuma would (its interval, Kuma's 1 s, and its retries as grace, not a whole extra period);
 * Healthchecks.io's tags are said to be left out. Through the built executable.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import type { CheckDone } from "../src/daemon.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { tempDir } from "./support/temp.ts";

test("import --from uptime-kuma: maxretries N is notifyThreshold N; a retryInterval healthd cannot follow is said", async (t) => {
  const dir = tempDir(t);
  const kuma = join(dir, "kuma.db");
  kumaDatabase(kuma, [
    { id: 1, name: "No retries", type: "http", url: "http://127.0.0.1:1/", interval: 60, maxretries: 0, retry_interval: 20 },
    { id: 2, name: "Retries at the interval", type: "port", hostname: "127.0.0.1", port: 1, interval: 60, maxretries: 2, retry_interval: 60 },
    { id: 3, name: "Retries sooner", type: "dns", hostname: "example.org", interval: 300, maxretries: 3, retry_interval: 30 },
    { id: 4, name: "Kuma's retry default", type: "http", url: "http://127.0.0.1:1/", interval: 60, maxretries: 1, retry_interval: 0 },
  ]);
  const run = await runHealthd(["import", "--from", "uptime-kuma", kuma]);
  assert.equal(run.code, 0, run.stderr);
  const services = parse(run.stdout)["uptime-kuma"].services as { id: string; check: { notifyThreshold: number } }[];
  assert.deepEqual(
    services.map((s) => [s.id, s.check.notifyThreshold]),
    [["no-retries", 0], ["retries-at-the-interval", 2], ["retries-sooner", 3], ["kuma-s-retry-default", 1]],
  );
  assert.match(
    run.stderr,
    /not carried over: monitor "Retries sooner" \(dns\): its retry interval \(30 s\) does not carry over: healthd has none and keeps checking every 300 s while it fails, so the alert on the same check comes after 3 × 300 s of retries rather than 3 × 30 s/,
  );
  assert.doesNotMatch(run.stderr, /"No retries".*retry interval|"Retries at the interval".*retry interval|"Kuma's retry default".*retry interval/, "said only where it changes when the alert comes");
});

test("import --from uptime-kuma: the alert comes on the same check as Kuma's (after maxretries retries), on the daemon", async (t) => {
  const dir = tempDir(t);
  const kuma = join(dir, "kuma.db");
  // Port 1 refuses: every check fails. Kuma alerts on failure maxretries + 1.
  kumaDatabase(kuma, [
    { id: 1, name: "zero", type: "port", hostname: "127.0.0.1", port: 1, interval: 1, maxretries: 0 },
    { id: 2, name: "two", type: "port", hostname: "127.0.0.1", port: 1, interval: 1, maxretries: 2 },
  ]);
  const d = await testDaemon(t);
  const failures = new Map<string, string[][]>();
  const seen = new Promise<void>((resolve) => {
    d.events.on("check:done", (done: CheckDone) => {
      const id = done.service.serviceId;
      failures.set(id, [...(failures.get(id) ?? []), [...done.notices]]);
      if ((failures.get("zero")?.length ?? 0) >= 3 && (failures.get("two")?.length ?? 0) >= 4) resolve();
    });
  });
  const applied = await runHealthd(["import", "--from", "uptime-kuma", kuma, "--apply", "--db", d.db]);
  assert.equal(applied.code, 0, applied.stderr);
  await seen;
  const firstDown = (id: string) => failures.get(id)!.findIndex((notices) => notices.includes("down")) + 1;
  assert.equal(firstDown("zero"), 1, "maxretries 0: DOWN on the first failed check, as in Kuma");
  assert.equal(firstDown("two"), 3, "maxretries 2: DOWN on the third failed check, as in Kuma");
});

test("import --from uptime-kuma: a push monitor alerts when Kuma would: its interval, Kuma's 1 s and its retries, not a day later", async (t) => {
  const dir = tempDir(t);
  const kuma = join(dir, "kuma.db");
  kumaDatabase(kuma, [
    { id: 1, name: "Daily", type: "push", push_token: "a", interval: 86400, maxretries: 0, retry_interval: 60 },
    { id: 2, name: "Daily, retried", type: "push", push_token: "b", interval: 86400, maxretries: 2, retry_interval: 600 },
    { id: 3, name: "Hourly, retried at the interval", type: "push", push_token: "c", interval: 3600, maxretries: 1, retry_interval: 0 },
  ]);
  const run = await runHealthd(["import", "--from", "uptime-kuma", kuma]);
  assert.equal(run.code, 0, run.stderr);
  const checks = (parse(run.stdout)["uptime-kuma"].services as { check: Record<string, unknown> }[]).map((s) => s.check);
  assert.deepEqual(checks, [
    { type: "heartbeat", periodSeconds: 86400, graceSeconds: 1, pushToken: "a" },
    { type: "heartbeat", periodSeconds: 86400, graceSeconds: 1 + 2 * 600, pushToken: "b" },
    { type: "heartbeat", periodSeconds: 3600, graceSeconds: 1 + 3600, pushToken: "c" },
  ]);
  assert.doesNotMatch(run.stderr, /retry interval/, "a push monitor's retries are carried over, in its grace");
});

test("import --from healthchecks: tags carry over; descriptions, which do not, are said check by check", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "checks.json");
  writeFileSync(
    file,
    JSON.stringify({
      checks: [
        { name: "Filesystem Backup", slug: "filesystem-backup", tags: "backup fs", desc: "Runs at night", grace: 600, timeout: 3600, ping_url: "https://hc-ping.com/31365bce-8da9-4729-8ff3-aaa71d56b712" },
        { name: "Untagged", tags: "", desc: "", grace: 60, timeout: 60 },
      ],
    }),
  );
  const run = await runHealthd(["import", "--from", "healthchecks", file]);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /its tags/);
  assert.match(run.stderr, /not carried over: check "Filesystem Backup": its description does not carry over/);
  assert.doesNotMatch(run.stderr, /"Untagged"/);
  const services = parse(run.stdout).healthchecks.services;
  assert.deepEqual(services.map((s: { tags?: string[] }) => s.tags ?? []), [["backup", "fs"], []]);
});
