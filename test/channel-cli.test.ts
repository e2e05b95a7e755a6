/**
 * Channels from the command line, through the built executable: `channels:` in apply and export (secrets
 * masked, `$${NAME}` for a variable read at send time), `healthd channel list` and `healthd channel test`.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { open } from "./support/raw.ts";
import { runHealthd, serveHealthd } from "./support/cli.ts";
import { until } from "./support/events.ts";
import { receiver } from "./support/receiver.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";

test("apply takes channels:, export writes them back masked, and applying the export changes nothing; unknown names are refused by line", async (t) => {
  const db = tempDbPath(t);
  const dir = tempDir(t);
  const file = join(dir, "servers.yaml");
  writeFileSync(
    file,
    `channels:
  hook:
    type: webhook
    url: http://127.0.0.1:9/in
    secret: $\${HOOK_SECRET}
    events: [down, recovered]
  slack-ops:
    type: slack
    url: \${SLACK_URL}
web-01:
  channels: [slack-ops]
  services:
    - id: home
      check: {url: 'http://127.0.0.1:9/', intervalSeconds: 3600, channels: [hook, ntfy]}
`,
  );
  const applied = await runHealthd(["apply", file, "--db", db], { SLACK_URL: "https://hooks.slack.example/services/T/B/secret" });
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(applied.stdout, "channel hook: created\nchannel slack-ops: created\nweb-01: created (1 service)\n");

  const store = await open(db, { mode: "read" });
  const stored = Object.fromEntries((await store.channels()).map((c) => [c.name, c.doc as Record<string, unknown>]));
  await store.close();
  assert.equal(stored.hook!.secret, "${HOOK_SECRET}", "$${NAME} is kept as ${NAME}, read when a message is sent");
  assert.equal(stored["slack-ops"]!.url, "https://hooks.slack.example/services/T/B/secret", "${NAME} is filled when applied");

  const exported = await runHealthd(["export", "--db", db]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, /^channels:\n {2}hook:\n {4}type: webhook\n {4}url: http:\/\/127\.0\.0\.1:9\/in\n/);
  assert.match(exported.stdout, /^ {4}secret: \$\$\{HOOK_SECRET\}$/m);
  assert.match(exported.stdout, /^ {4}url: "\*\*\*"$/m, "a Slack webhook URL is a secret");
  assert.match(exported.stdout, /^ {2}channels:\n {4}- slack-ops$/m);
  writeFileSync(join(dir, "exported.yaml"), exported.stdout);
  const again = await runHealthd(["apply", join(dir, "exported.yaml"), "--db", db]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, "web-01: unchanged\n");

  const listed = await runHealthd(["channel", "list", "--db", db]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^NAME +TYPE +EVENTS +UPDATED\nntfy +ntfy +all +built in: serve's --ntfy-\* flags\nhook +webhook +down,recovered +\d{4}-/);
  const json = JSON.parse((await runHealthd(["channel", "list", "--json", "--db", db])).stdout);
  assert.equal(json.channels.find((c: { name: string }) => c.name === "slack-ops").url, "***");

  writeFileSync(join(dir, "bad.yaml"), "web-01:\n  services:\n    - id: home\n      check:\n        url: 'http://127.0.0.1:9/'\n        channels: [hoook]\n");
  const bad = await runHealthd(["apply", join(dir, "bad.yaml"), "--db", db]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /bad\.yaml:6:19: \/web-01\/services\/0\/check\/channels: names hoook, which is not a channel; add it under channels: or fix the name/);
  writeFileSync(join(dir, "badchannel.yaml"), "channels:\n  x:\n    type: webhook\n    url: nope\n");
  const invalid = await runHealthd(["apply", join(dir, "badchannel.yaml"), "--db", db]);
  assert.equal(invalid.code, 2);
  assert.match(invalid.stderr, /badchannel\.yaml:4:10: \/channels\/x\/url: must be an http:\/\/ or https:\/\/ URL/);

  // serve --channel (here from the environment, comma-separated) says which of its names no channel has.
  const served = await serveHealthd(t, ["--db", db], { HEALTHD_CHANNELS: "hook, missing" });
  await until(async () => served.log(), (log) => log.includes("--channel missing names no channel"), "the warning");
  assert.doesNotMatch(served.log(), /--channel hook names no channel/);
  assert.equal(await served.stop(), 0);
  const badFlag = await runHealthd(["serve", "--db", db, "--channel", "no/pe"]);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /--channel must be/);

  // --prune deletes channels the file does not name, unless something names them.
  writeFileSync(join(dir, "pruned.yaml"), "channels: {}\nweb-01:\n  services:\n    - id: home\n      check: {url: 'http://127.0.0.1:9/', intervalSeconds: 3600}\n");
  const pruned = await runHealthd(["apply", join(dir, "pruned.yaml"), "--prune", "--db", db]);
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.match(pruned.stdout, /^channel hook: deleted\nchannel slack-ops: deleted\n/);
});

test("channel test sends with this command's environment: exit 0 with the destination's answer, 1 when it refuses", async (t) => {
  const db = tempDbPath(t);
  const hook = await receiver(t);
  const file = join(tempDir(t), "channels.yaml");
  writeFileSync(file, `channels:\n  hook:\n    type: webhook\n    url: ${hook.url}/in\n    secret: $\${HOOK_SECRET}\n`);
  assert.equal((await runHealthd(["apply", file, "--db", db])).code, 0);

  const missing = await runHealthd(["channel", "test", "hook", "--db", db]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot send to hook: this node's environment has no HOOK_SECRET/);

  const ok = await runHealthd(["channel", "test", "hook", "--db", db], { HOOK_SECRET: "s3cret" });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, "hook took the test message (HTTP 200)\n");
  const [req] = hook.received;
  assert.equal(req!.json.event, "test");
  const expected = createHmac("sha256", "s3cret").update(`${req!.headers["x-healthd-timestamp"]}.${req!.body}`).digest("hex");
  assert.equal(req!.headers["x-healthd-signature"], `sha256=${expected}`);

  hook.answer(() => ({ status: 410, body: "gone" }));
  const refused = await runHealthd(["channel", "test", "hook", "--db", db], { HOOK_SECRET: "s3cret" });
  assert.equal(refused.code, 1);
  assert.equal(refused.stderr, "healthd: hook did not take the test message: webhook answered 410: gone\n");
  const unknown = await runHealthd(["channel", "test", "nope", "--db", db]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no channel named nope; healthd channel list shows them/);
});
