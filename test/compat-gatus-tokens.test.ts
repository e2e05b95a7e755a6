/**
 * `healthd import --from gatus --apply --keep-tokens` (issue 80): a job that reports to a Gatus external endpoint
 * keeps its whole line, the Authorization header too: the endpoint's token becomes a healthd ping token limited
 * to the heartbeat's server. The built executable imports; the daemon follows; a real curl reports.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { runHealthd } from "./support/cli.ts";
import { testDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";
import { tempDir } from "./support/temp.ts";

async function curl(url: string, token: string): Promise<{ status: number; body: string }> {
  const ran = await promisify(execFile)("curl", ["-sS", "-m", "10", "-o", "-", "-w", "\n%{http_code}", "-X", "POST", "-H", `Authorization: Bearer ${token}`, url]).catch(
    (error: { code?: string }) => {
      if (error.code === "ENOENT") throw new Error("curl is not installed: apt-get install -y curl");
      throw error;
    },
  );
  const at = ran.stdout.lastIndexOf("\n");
  return { status: Number(ran.stdout.slice(at + 1)), body: ran.stdout.slice(0, at) };
}

test("import --from gatus --apply --keep-tokens: the job's Bearer token keeps working, limited to its server; said on stderr", async (t) => {
  const dir = tempDir(t);
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    [
      "external-endpoints:",
      "  - name: ext-ep-test",
      "    group: core",
      '    token: "potato-salad-2026"',
      "    heartbeat:",
      "      interval: 30m",
      "  - name: backup",
      "    group: core",
      '    token: "potato-salad-2026"',
      "    heartbeat:",
      "      interval: 1h",
      "  - name: sync",
      "    group: edge",
      '    token: "${SYNC_TOKEN}"',
      "    heartbeat:",
      "      interval: 1h",
    ].join("\n") + "\n",
  );
  const d = await testDaemon(t);
  const refused = await runHealthd(["import", "--from", "gatus", config, "--keep-tokens"]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--keep-tokens goes with --from gatus and --apply/);

  const applied = await runHealthd(["import", "--from", "gatus", config, "--apply", "--keep-tokens", "--db", d.db], { SYNC_TOKEN: "" });
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stderr, /the token of external endpoints core_ext-ep-test, core_backup is kept as healthd token gatus-core_ext-ep-test \(scope ping, server core\)/);
  assert.match(applied.stderr, /the token of external endpoint edge_sync is \$\{SYNC_TOKEN\}, and SYNC_TOKEN is not set/);
  assert.match(applied.stderr, /the API had no tokens, so it was open; it now asks every request for one/);
  assert.doesNotMatch(applied.stderr, /potato/, "a secret is never printed");

  // The daemon follows another process's change within a second; the job's own line, unchanged.
  const url = (key: string) => `${d.url}/api/v1/endpoints/${key}/external?success=true&error=&duration=2s`;
  const taken = await until(() => curl(url("core_backup"), "potato-salad-2026"), (r) => r.status === 200, "the Gatus token taking results");
  assert.equal(taken.body, "");
  assert.deepEqual(await curl(url("core_ext-ep-test"), "wrong"), { status: 401, body: "invalid token" });
  const tokens = (await d.api("GET", "/tokens", undefined, { authorization: "Bearer potato-salad-2026" })).status;
  assert.equal(tokens, 403, "a ping token, not an API key");

  const again = await runHealthd(["import", "--from", "gatus", config, "--apply", "--keep-tokens", "--db", d.db], { SYNC_TOKEN: "sync-secret" });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /the token of external endpoints core_ext-ep-test, core_backup is already healthd token gatus-core_ext-ep-test\n/);
  assert.match(again.stderr, /the token of external endpoint edge_sync is kept as healthd token gatus-edge_sync \(scope ping, server edge\)/);
  await until(() => curl(url("edge_sync"), "sync-secret"), (r) => r.status === 200, "the token filled from the environment");
});
