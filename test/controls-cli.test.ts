/**
 * The alerting controls through the built executable: `healthd silence` against the database, and a daemon
 * restarted with a topic delivering what it had kept unsent. Both engines.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { parseDuration } from "../src/cli/silence.ts";
import { healthdBin, runHealthd, serveHealthd, type Served } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { nextEvent, until } from "./support/events.ts";
import { ntfyStandIn, type StoredMessage } from "./support/ntfy.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

async function applied(t: TestContext, db: string): Promise<void> {
  const file = join(tempDir(t), "servers.yaml");
  writeFileSync(file, "web-01:\n  services:\n    - id: db\n      check: {url: 'http://127.0.0.1:9/', intervalSeconds: 3600}\n");
  const run = await runHealthd(["apply", file, "--db", db]);
  assert.equal(run.code, 0, run.stderr);
}

const listed = async (db: string) => {
  const run = await runHealthd(["silence", "--list", "--json", "--db", db]);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout).silences as { id: string; server: string; service: string | null; reason: string | null }[];
};

/** healthd_notifications{status="pending"} of a running daemon. */
async function pending(served: Served): Promise<number> {
  const text = await (await fetch(served.url + "/metrics")).text();
  return Number(/^healthd_notifications\{status="pending"\} (\d+)$/m.exec(text)?.[1] ?? NaN);
}

test("silence --for durations: 90s, 30m, 2h, 1d, combined; anything else is a usage error naming the flag", () => {
  assert.equal(parseDuration("90s"), 90);
  assert.equal(parseDuration("30m"), 1800);
  assert.equal(parseDuration("2h"), 7200);
  assert.equal(parseDuration("1d"), 86_400);
  assert.equal(parseDuration("1h30m"), 5400);
  for (const bad of ["", "0s", "90", "2 h", "1x", "h", "367d", "1h 30m"]) assert.throws(() => parseDuration(bad), /--for takes a duration/, bad);
});

for (const engine of engines) {
  test(`${engine}: healthd silence adds, lists and ends silences; with a command it lasts while the command runs and exits with its code`, async (t) => {
    const db = await testDatabase(t, engine);
    await applied(t, db);
    const added = await runHealthd(["silence", "web-01/db", "--for", "2h", "--reason", "backup", "--json", "--db", db]);
    assert.equal(added.code, 0, added.stderr);
    const silence = JSON.parse(added.stdout);
    assert.deepEqual([silence.server, silence.service, silence.reason], ["web-01", "db", "backup"]);
    assert.equal(Date.parse(silence.endsAt) - Date.parse(silence.startsAt), 2 * 3_600_000);
    assert.deepEqual((await listed(db)).map((s) => s.id), [silence.id]);
    const table = await runHealthd(["silence", "--list", "--db", db]);
    assert.match(table.stdout, /^ID +TARGET +STARTS +ENDS +REASON\n\d+ +web-01\/db +\S+ +\S+ +backup\n$/);
    assert.equal((await runHealthd(["silence", "--end", silence.id, "--db", db])).code, 0);
    assert.deepEqual(await listed(db), []);

    // The wrapped command runs inside the silence: it sees it listed.
    const inside = await runHealthd(["silence", "web-01", "--for", "1h", "--db", db, "--", process.execPath, healthdBin, "silence", "--list", "--json", "--db", db]);
    assert.equal(inside.code, 0, inside.stderr);
    assert.deepEqual(JSON.parse(inside.stdout).silences.map((s: { server: string; service: string | null }) => [s.server, s.service]), [["web-01", null]]);
    assert.deepEqual(await listed(db), [], "over when the command exits");

    const three = await runHealthd(["silence", "web-01", "--for", "1h", "--db", db, "--", "sh", "-c", "exit 3"]);
    assert.equal(three.code, 3);
    assert.deepEqual(await listed(db), [], "no active silence left");

    const missing = await runHealthd(["silence", "web-01/nope", "--for", "1h", "--db", db]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^healthd: server web-01 has no service nope; healthd export lists its services$/m);
    const noDuration = await runHealthd(["silence", "web-01", "--db", db]);
    assert.equal(noDuration.code, 2);
    assert.match(noDuration.stderr, /--for is required/);
    const gone = await runHealthd(["silence", "--end", silence.id, "--db", db]);
    assert.equal(gone.code, 2);
    assert.match(gone.stderr, /no silence "\d+" that has not ended; healthd silence --list shows them/);
  });

  test(`${engine}: a signal to healthd silence reaches the wrapped command; healthd exits with its code and ends the silence`, async (t) => {
    const db = await testDatabase(t, engine);
    await applied(t, db);
    const script = 'trap "exit 7" TERM; echo ready; while :; do sleep 0.05; done';
    const child = spawn(process.execPath, [healthdBin, "silence", "web-01", "--for", "1h", "--db", db, "--", "sh", "-c", script]);
    t.after(() => child.kill("SIGKILL"));
    const exited = once(child, "exit");
    await nextEvent(child.stdout, "data", (chunk: Buffer) => String(chunk).includes("ready"));
    assert.equal((await listed(db)).length, 1);
    child.kill("SIGTERM");
    const [code] = await exited;
    assert.equal(code, 7);
    assert.deepEqual(await listed(db), []);
  });

  test(`${engine}: DOWNs kept unsent for want of a topic are delivered after a restart with one, for incidents still open; incidents are logged`, async (t) => {
    const ntfy = await ntfyStandIn(t);
    const stays = await switchableTarget(t);
    const recovers = await switchableTarget(t);
    const db = await testDatabase(t, engine);
    const first = await serveHealthd(t, ["--db", db], { HEALTHD_NTFY_URL: ntfy.url });
    const put = await fetch(first.url + "/services/web-01", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        services: [
          { id: "stays", check: { url: stays.url, intervalSeconds: 1, notifyThreshold: 0 } },
          { id: "recovers", check: { url: recovers.url, intervalSeconds: 1, notifyThreshold: 0 } },
        ],
      }),
    });
    assert.equal(put.status, 201);
    // Opened incidents are logged without ntfy, each line with its time.
    const opened = (service: string) => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z warn  incident opened part=incidents server=web-01 service=${service} incident=\\d+ error="status 500 `, "m");
    await until(async () => first.log(), (log) => opened("stays").test(log) && opened("recovers").test(log), "both incidents logged");
    await until(async () => first.log(), (log) => (log.match(/notification kept unsent/g) ?? []).length >= 2, "both DOWNs kept unsent");
    recovers.setUp(true);
    await until(async () => first.log(), (log) => /info  incident closed part=incidents server=web-01 service=recovers incident=\d+ error="status 500 [^\n]* failures=\d+ duration=\d+s$/m.test(log), "the closed incident logged");
    assert.equal(await first.stop(), 0);
    assert.equal(ntfy.messages("ops").length, 0);

    const delivered = nextEvent<[StoredMessage]>(ntfy.events, "message", (m) => m.title === "DOWN: web-01/stays");
    const second = await serveHealthd(t, ["--db", db], { HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" });
    const [message] = await delivered;
    assert.equal(message.topic, "ops");
    assert.match(second.log(), /info  notifications kept unsent now have a topic; sending them count=1$/m);
    // Idle: the outbox drained and both services checked again. Nothing more was sent.
    const hits = stays.hits();
    await until(() => pending(second), (n) => n === 0, "the outbox drained");
    await nextEvent(stays.events, "hit", () => stays.hits() >= hits + 2);
    assert.deepEqual(ntfy.messages("ops").map((m) => m.title), ["DOWN: web-01/stays"]);
    assert.equal(await second.stop(), 0);
  });
}

test("healthd apply refuses a file whose dependsOn names nothing or makes a cycle, at its line, applying nothing", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "healthd.db");
  const file = join(dir, "servers.yaml");
  writeFileSync(
    file,
    ["web-01:", "  services:", "    - id: db", "      check: {url: 'http://127.0.0.1:9/', dependsOn: [app]}", "    - id: app", "      check: {url: 'http://127.0.0.1:9/', dependsOn: [db, nope]}", ""].join("\n"),
  );
  const run = await runHealthd(["apply", file, "--db", db]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /servers\.yaml:6:\d+: \/web-01\/services\/1\/check\/dependsOn\/1: names nope, which does not exist/);
  assert.match(run.stderr, /servers\.yaml:\d+:\d+: \/web-01\/services\/\d\/check\/dependsOn: makes a cycle: web-01\/(db|app) -> /);
  // Nothing was applied: a refused command leaves no database behind.
  assert.ok(!existsSync(db), "the refused apply left no healthd.db");
});
