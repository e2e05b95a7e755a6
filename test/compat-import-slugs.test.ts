/**
 * `healthd import --from healthchecks` keeps slug URLs (issue 80): a job that pings
 * /ping/<project ping key>/<slug> keeps pinging that path on healthd, with only the base URL changed. The
 * built executable imports and applies; the daemon follows; a real curl pings as Healthchecks.io's docs do.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { parse } from "yaml";
import { parsePingUrl } from "../src/cli/pinger.ts";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

const projectKey = "Wq3lRUXe5ak1fPtB-zvOyA";

/** What curl prints for a ping URL with Healthchecks.io's flags: the body, then the status. */
async function curl(url: string, ...args: string[]): Promise<string> {
  const ran = await promisify(execFile)("curl", ["-sS", "-m", "10", "-o", "-", "-w", "\n%{http_code}", ...args, url]).catch((error: { code?: string }) => {
    if (error.code === "ENOENT") throw new Error("curl is not installed: apt-get install -y curl");
    throw error;
  });
  return ran.stdout;
}

/** The answer of Healthchecks.io's GET /api/v3/checks/ (a read-write key): ping_url is the UUID form. */
const exported = {
  checks: [
    {
      name: "Nightly backup",
      slug: "backup",
      tags: "",
      desc: "",
      grace: 3600,
      n_pings: 12,
      status: "up",
      manual_resume: true,
      methods: "",
      ping_url: "https://hc-ping.com/4a2b1a5e-8d5c-4b0e-9e3a-1d2c3b4a5f60",
      timeout: 86_400,
    },
    { name: "Certificates", slug: "certs-renew", grace: 600, status: "new", manual_resume: false, ping_url: "https://hc-ping.com/5b3c2b6f-9e6d-4c1f-8f4b-2e3d4c5b6a71", schedule: "0 3 * * *", tz: "UTC" },
    // Healthchecks.io lets two checks share a slug (pinging it is then 409): the second cannot keep it.
    { name: "Backup, again", slug: "backup", grace: 60, status: "up", ping_url: "https://hc-ping.com/6c4d3c70-af7e-4d20-905c-3f4e5d6c7b82", timeout: 60 },
  ],
};

test("import --from healthchecks --ping-key: after --apply, a curl to /ping/<key>/<slug> answers 200 and the ping is stored", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "checks.json");
  writeFileSync(file, JSON.stringify(exported));

  const printed = await runHealthd(["import", "--from", "healthchecks", file, "--ping-key", projectKey]);
  assert.equal(printed.code, 0, printed.stderr);
  const document = parse(printed.stdout).healthchecks;
  assert.equal(document.pingKey, projectKey);
  assert.deepEqual(
    document.services.map((s: { id: string; name?: string; check: { manualResume?: boolean } }) => [s.id, s.name, s.check.manualResume]),
    [
      ["backup", "Nightly backup", true],
      ["certs-renew", "Certificates", undefined],
      ["backup-again", "Backup, again", undefined],
    ],
  );
  assert.match(printed.stderr, /slugs: backup \(now backup-again\): taken by another check/);

  const d = await testDaemon(t);
  const applied = await runHealthd(["import", "--from", "healthchecks", file, "--ping-key", projectKey, "--apply", "--db", d.db]);
  assert.equal(applied.code, 0, applied.stderr);
  // The daemon follows another process's change within a second.
  await until(() => curl(`${d.url}/ping/${projectKey}/certs-renew/start`), (out) => out === "OK\n200", "the slug URL taking pings");
  assert.equal(await curl(`${d.url}/ping/${projectKey}/certs-renew/0`, "--data-binary", "renewed 2 certificates"), "OK\n200");
  assert.equal(await curl(`${d.url}/ping/${projectKey}/backup`), "OK\n200");
  // The UUID URL of the same check still works beside it.
  assert.equal(await curl(`${d.url}/ping/5b3c2b6f-9e6d-4c1f-8f4b-2e3d4c5b6a71/log`), "OK\n200");
  assert.equal(await curl(`${d.url}/ping/${projectKey}/nope`), "not found\n404");

  const entries = (await d.api("GET", "/services/healthchecks/certs-renew/data")).body.entries as { kind: string; exitCode: number | null; body: string | null; userAgent: string }[];
  assert.deepEqual(
    entries.map((e) => [e.kind, e.exitCode, e.body]),
    [
      ["log", null, null],
      ["exit", 0, "renewed 2 certificates"],
      ["start", null, null],
    ],
  );
  assert.match(entries[1]!.userAgent, /^curl\//);
  const backup = (await d.api("GET", "/services/healthchecks/backup")).body;
  assert.equal(backup.check.manualResume, true, "manual_resume carried over");

  // healthd run with the slug URL: the start, then the exit code and the output, as runitor's -slug sends them.
  const ran = await runHealthd(["run", `${d.url}/ping/${projectKey}/backup-again`, "--", "sh", "-c", "echo dumped; exit 4"], { HEALTHD_URL: "http://127.0.0.1:9" });
  assert.equal(ran.code, 4, ran.stderr);
  assert.equal(ran.stdout, "dumped\n");
  assert.equal(ran.stderr, "", "nothing to warn of");
  const run = (await d.api("GET", "/services/healthchecks/backup-again/data")).body.entries as { kind: string; exitCode: number | null; body: string | null }[];
  assert.deepEqual(run.map((e) => [e.kind, e.exitCode, e.body]), [["exit", 4, "dumped\n"], ["start", null, null]]);
});

test("healthd run reads a slug URL as the path after /ping/, and refuses one with a signal after it", () => {
  assert.deepEqual(parsePingUrl(`https://127.0.0.1:8443/healthd/ping/${projectKey}/backup/`), { url: "https://127.0.0.1:8443/healthd", key: `${projectKey}/backup` });
  for (const wrong of [`http://h/ping/${projectKey}/backup/start`, `http://h/ping/${projectKey}`, "http://h/ping/short/backup", `http://h/ping/${projectKey}/..`]) {
    assert.throws(() => parsePingUrl(wrong), /is not a ping URL: .* or in \/ping\/<server ping key>\/<slug>/, wrong);
  }
});

test("import --from healthchecks reads the project's ping key from ping URLs of the slug form, and says when slug URLs need --ping-key", async (t) => {
  const dir = tempDir(t);
  const slugForm = join(dir, "slug-form.json");
  writeFileSync(
    slugForm,
    JSON.stringify({ checks: [{ name: "Backup", slug: "backup", grace: 60, timeout: 3600, status: "up", ping_url: `https://hc.example.org/ping/${projectKey}/backup` }] }),
  );
  const read = await runHealthd(["import", "--from", "healthchecks", slugForm]);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(parse(read.stdout).healthchecks.pingKey, projectKey, "the key of the slug-form ping_url");
  const differs = await runHealthd(["import", "--from", "healthchecks", slugForm, "--ping-key", "x".repeat(22)]);
  assert.equal(differs.code, 2);
  assert.match(differs.stderr, new RegExp(`--ping-key x{22} is not the project ping key the export's ping URLs carry \\(${projectKey}\\)`));

  const uuidForm = join(dir, "uuid-form.json");
  writeFileSync(uuidForm, JSON.stringify(exported));
  const without = await runHealthd(["import", "--from", "healthchecks", uuidForm]);
  assert.equal(without.code, 0, without.stderr);
  assert.equal(parse(without.stdout).healthchecks.pingKey, undefined);
  assert.match(without.stderr, /slug URLs: \/ping\/<ping key>\/<slug> needs the project's ping key, which the export does not hold: give it with --ping-key/);

  for (const [args, message] of [
    [["--ping-key", "short"], /--ping-key must be the project's ping key from Healthchecks\.io .*22 characters of A-Z a-z 0-9 _ - \(got "short"\)/],
    [["--ping-key", "a/".repeat(11)], /--ping-key must be the project's ping key/],
  ] as const) {
    const refused = await runHealthd(["import", "--from", "healthchecks", uuidForm, ...args]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, message);
  }
  const elsewhere = await runHealthd(["import", "--from", "gatus", uuidForm, "--ping-key", projectKey]);
  assert.equal(elsewhere.code, 2);
  assert.match(elsewhere.stderr, /--ping-key goes with --from healthchecks/);
});
