/** healthd import: Uptime Kuma (kuma.db, JSON backup), Gatus and Healthchecks.io, through the built executable. */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { runHealthd } from "./support/cli.ts";
import { engines, testDatabase } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { until } from "./support/events.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { open } from "./support/raw.ts";
import { httpTarget } from "./support/targets.ts";
import { tempDbPath, tempDir } from "./support/temp.ts";

/** Monitors as Kuma stores them: a group, kinds healthd has and kinds it does not. */
const kumaMonitors = (url: string) => [
  { id: 1, name: "Production", type: "group", interval: 60 },
  { id: 2, name: "Homepage", type: "keyword", url: `${url}/ok`, keyword: "Welcome", interval: 30, maxretries: 2, retry_interval: 20, resend_interval: 10, parent: 1, timeout: 24 },
  { id: 3, name: "API health", type: "json-query", url: `${url}/json`, json_path: "status", expected_value: "up", json_path_operator: "==", parent: 1, accepted_statuscodes_json: '["200-299","304"]' },
  { id: 4, name: "Postgres", type: "port", hostname: "127.0.0.1", port: 5432, interval: 60 },
  { id: 5, name: "Resolver", type: "dns", hostname: "example.org", dns_resolve_type: "MX", dns_resolve_server: "127.0.0.1", port: 5353 },
  { id: 6, name: "Nightly backup", type: "push", push_token: "Xk2w9QpL0aZb", interval: 86400, retry_interval: 600, maxretries: 1, active: 0 },
  { id: 7, name: "Router", type: "ping", hostname: "127.0.0.1" },
  { id: 8, name: "Login", type: "http", url: `${url}/echo`, method: "post", body: '{"user":"a","note":"${literal} $$"}', http_body_encoding: "json", headers: '{"X-Trace": "1"}', basic_auth_user: "bob", basic_auth_pass: "pa$$word", maxredirects: 0, ignore_tls: 1 },
  { id: 9, name: "Inverted", type: "http", url: `${url}/ok`, upside_down: 1 },
  { id: 10, name: "Fancy query", type: "json-query", url: `${url}/json`, json_path: "$sum(checks.ok)", expected_value: "1" },
];

/** Kuma's notification settings: kinds healthd has (one invalid, one off) and one it has not. */
const kumaNotifications = [
  { name: "Ops Slack", config: { type: "slack", slackwebhookURL: "https://hooks.slack.example/services/T0/B0/x", slackchannel: "#ops" }, monitors: [2, 4] },
  {
    name: "On-call mail",
    config: { type: "smtp", smtpHost: "smtp.example.org", smtpPort: 465, smtpSecure: true, smtpUsername: "kuma", smtpPassword: "s3cr$$et", smtpFrom: "kuma@example.org", smtpTo: "ops@example.org, boss@example.org" },
    monitors: [2],
  },
  { name: "LINE", config: { type: "line", lineChannelAccessToken: "x" }, monitors: [3] },
  { name: "ntfy", config: { type: "ntfy", ntfyserverurl: "https://ntfy.example.org" }, monitors: [4] },
  { name: "Old pager", active: false, config: { type: "slack", slackwebhookURL: "https://hooks.slack.example/old" }, monitors: [2] },
];

for (const engine of engines) {
  test(`${engine}: import --from uptime-kuma reads kuma.db: groups become servers, what cannot come over is said, --apply applies it`, async (t) => {
    const target = await httpTarget(t);
    const dir = tempDir(t);
    const kuma = join(dir, "kuma.db");
    kumaDatabase(kuma, kumaMonitors(target.url), { notifications: kumaNotifications });
    const printed = await runHealthd(["import", "--from", "uptime-kuma", kuma]);
    assert.equal(printed.code, 0, printed.stderr);
    const doc = parse(printed.stdout);
    assert.deepEqual(Object.keys(doc), ["channels", "production", "uptime-kuma"]);
    // Kuma's notification settings, where healthd has the kind, are channels named by the monitors that used them.
    assert.deepEqual(doc.channels, {
      "ops-slack": { type: "slack", url: "https://hooks.slack.example/services/T0/B0/x" },
      "on-call-mail": {
        type: "email", host: "smtp.example.org", port: 465, secure: "tls", user: "kuma", password: "s3cr$$$et", from: "kuma@example.org",
        to: ["ops@example.org", "boss@example.org"],
      },
    });
    assert.equal(doc.production.name, "Production");
    assert.deepEqual(doc.production.services, [
      {
        id: "homepage",
        name: "Homepage",
        check: {
          url: `${target.url}/ok`, expect: [{ status: "2xx", bodyContains: "Welcome" }], intervalSeconds: 30, timeoutMs: 24_000, notifyThreshold: 2, remindEveryMinutes: 5,
          channels: ["ops-slack", "on-call-mail"],
        },
      },
      {
        id: "api-health",
        name: "API health",
        check: { url: `${target.url}/json`, expect: [{ status: ["2xx", 304], json: { path: "$.status", equals: "up" } }], intervalSeconds: 20, timeoutMs: 16_000, notifyThreshold: 0 },
      },
    ]);
    const [postgres, resolver, backup, router, login] = doc["uptime-kuma"].services;
    assert.deepEqual(postgres.check, { type: "tcp", host: "127.0.0.1", port: 5432, intervalSeconds: 60, timeoutMs: 48_000, notifyThreshold: 0, channels: ["ops-slack"] });
    assert.deepEqual(resolver.check, { type: "dns", name: "example.org", recordType: "MX", server: "127.0.0.1:5353", intervalSeconds: 20, timeoutMs: 16_000, notifyThreshold: 0 });
    assert.deepEqual(router.check, { type: "icmp", host: "127.0.0.1", count: 1, intervalSeconds: 20, timeoutMs: 16_000, notifyThreshold: 0 });
    assert.deepEqual(backup.check, { type: "heartbeat", periodSeconds: 86400, graceSeconds: 601, pushToken: "Xk2w9QpL0aZb", paused: true });
    assert.deepEqual(login.check.headers, { "x-trace": "1", authorization: `Basic ${Buffer.from("bob:pa$$word").toString("base64")}`, "content-type": "application/json" });
    // Kuma's values are literal: a "${" or "$$" in them is written "$${" and "$$$$", which apply reads back as they were.
    assert.deepEqual([login.check.method, login.check.body, login.check.followRedirects, login.check.verifyTls], ["POST", '{"user":"a","note":"$${literal} $$$"}', false, false]);
    for (const line of [
      /not carried over: notification "LINE" \(line\): healthd has no channel of this kind/,
      /not carried over: notification "Old pager" \(slack\): it is turned off in Kuma/,
      /not carried over: channel ntfy-imported: left out: \/topic /,
      /not carried over: monitor "Inverted" \(http\): upside-down mode/,
      /not carried over: monitor "Fancy query" \(json-query\): its JSON query "\$sum\(checks\.ok\)" is a JSONata expression/,
      /7 services on 2 servers carried over/,
    ]) {
      assert.match(printed.stderr, line);
    }

    const db = await testDatabase(t, engine);
    const applied = await runHealthd(["import", "--from", "uptime-kuma", kuma, "--apply", "--db", db]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal(applied.stdout, "channel ops-slack: created\nchannel on-call-mail: created\nproduction: created (2 services)\nuptime-kuma: created (5 services)\n");
    // What was carried over works: the checks pass against the same target Kuma watched.
    const checked = await runHealthd(["check", "production", "--db", db, "--json"]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    const pinged = await runHealthd(["check", "uptime-kuma/router", "--db", db, "--json"]);
    assert.equal(pinged.code, 0, pinged.stdout + pinged.stderr);
    assert.deepEqual(JSON.parse(pinged.stdout).answers.slice(0, 1), ["sent 1, received 1, loss 0%"], "Kuma 1 sent one echo a beat, as healthd does now");
    const stored = (await runHealthd(["export", "--db", db, "--json"])).stdout.replaceAll("$$", "$");
    assert.equal(JSON.parse(stored)["uptime-kuma"].services.find((s: any) => s.id === "login").check.body, '{"user":"a","note":"${literal} $$"}');
    const store = await open(db, { mode: "read" });
    const mail = (await store.channels("on-call-mail"))[0]!.doc as { password: string };
    await store.close();
    assert.equal(mail.password, "s3cr$$et", "Kuma's literal password, as it was");
  });
}

test("import --from uptime-kuma reads Kuma's JSON backup too, and says when a database is newer than it knows", async (t) => {
  const dir = tempDir(t);
  const backup = join(dir, "backup.json");
  writeFileSync(
    backup,
    JSON.stringify({
      version: "1.23.16",
      notificationList: [{ id: 3, name: "Shop team", active: true, config: JSON.stringify({ type: "discord", discordWebhookUrl: "https://discord.example/api/webhooks/1/x" }) }],
      monitorList: [
        { id: 1, name: "Shop", type: "http", notificationIDList: { "3": true }, url: "http://127.0.0.1:1/shop", interval: 120, retryInterval: 60, resendInterval: 0, maxretries: 0, accepted_statuscodes: ["200-299", "300-399"], ignoreTls: false, upsideDown: false, maxredirects: 10, expiryNotification: false, active: true, tags: [] },
        { id: 2, name: "Shop", type: "keyword", url: "http://127.0.0.1:1/shop", keyword: "Sold out", invertKeyword: true, interval: 60, maxretries: 4, accepted_statuscodes: ["200-299"] },
      ],
    }),
  );
  const run = await runHealthd(["import", "--from", "uptime-kuma", backup, "--server", "shop-01"]);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(parse(run.stdout), {
    channels: { "shop-team": { type: "discord", url: "https://discord.example/api/webhooks/1/x" } },
    "shop-01": {
      services: [
        { id: "shop", name: "Shop", check: { url: "http://127.0.0.1:1/shop", expect: [{ status: ["2xx", "3xx"] }], intervalSeconds: 120, timeoutMs: 48_000, notifyThreshold: 0, channels: ["shop-team"] } },
        { id: "shop-2", name: "Shop", check: { url: "http://127.0.0.1:1/shop", expect: [{ status: "2xx", bodyNotContains: "Sold out" }], intervalSeconds: 60, timeoutMs: 48_000, notifyThreshold: 4 } },
      ],
    },
  });

  const newer = join(dir, "newer.db");
  kumaDatabase(newer, [{ name: "Site", type: "http", url: "http://127.0.0.1:1/" }], { migrations: ["2025-10-15-0000-stat-table-fix.js", "2027-01-01-0000-something-new.js"] });
  const read = await runHealthd(["import", "--from", "uptime-kuma", newer]);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stderr, /kuma\.db: its schema is newer than healthd knows \(migration 2027-01-01-0000-something-new\.js/);
  assert.equal(parse(read.stdout)["uptime-kuma"].services[0].id, "site");
});

test("import --from gatus: conditions become one alternative, groups servers, ${VAR} stays for apply to fill", async (t) => {
  const target = await httpTarget(t);
  const dir = tempDir(t);
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    `storage: {type: sqlite, path: /data/gatus.db}
endpoints:
  - name: front-end
    group: core
    url: "${target.url}/json"
    interval: 5m
    client: {timeout: 3s, insecure: true}
    conditions:
      - "[STATUS] == 200"
      - "[BODY].status == UP"
      - "[BODY].load < 2"
      - "[RESPONSE_TIME] < 300"
      - "[CERTIFICATE_EXPIRATION] > 48h"
      - "[DOMAIN_EXPIRATION] > 720h"
      - "len([BODY].checks) == 1"
    alerts:
      - type: ntfy
        failure-threshold: 4
        success-threshold: 3
  - name: homepage
    group: core
    url: "\${HOME_URL}/ok"
    conditions: ["[STATUS] < 400", "[BODY] == pat(*Welcome*)"]
    alerts: [{type: slack}]
  - name: redis
    group: databases
    url: "tcp://127.0.0.1:6379"
    conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 50"]
    alerts: [{type: slack}]
  - name: git
    url: "ssh://127.0.0.1:2222"
    enabled: false
    alerts: [{type: slack}]
  - name: resolver
    group: dns
    url: "127.0.0.1:5353"
    dns: {query-name: example.org, query-type: AAAA}
    conditions: ["[DNS_RCODE] == NOERROR", "[BODY] == 2001:db8::1"]
    alerts: [{type: slack}]
  - name: pinger
    url: "icmp://192.0.2.1"
  - name: signalling
    url: "sctp://127.0.0.1:9"
  - name: odd
    url: "http://127.0.0.1:1/"
    interval: "every minute"
    alerts: [{type: slack}]
external-endpoints:
  - name: backup
    group: core
    token: secret
    heartbeat: {interval: 1h}
`,
  );
  const run = await runHealthd(["import", "--from", "gatus", config]);
  assert.equal(run.code, 0, run.stderr);
  const doc = parse(run.stdout);
  assert.deepEqual(Object.keys(doc), ["core", "databases", "gatus", "dns"]);
  const [front, home, backup] = doc.core.services;
  assert.deepEqual(front.check, {
    url: `${target.url}/json`,
    verifyTls: false,
    expect: [{ status: 200, json: { path: "$.status", equals: "UP" }, maxLatencyMs: 300, certValidDays: 2 }],
    intervalSeconds: 300,
    timeoutMs: 3000,
    notifyThreshold: 4,
    recoverThreshold: 3,
    domainWarnDays: 30,
  });
  assert.deepEqual(home.check, { url: "${HOME_URL}/ok", expect: [{ bodyContains: "Welcome", status: ["2xx", "3xx"] }], intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2 });
  assert.deepEqual(backup.check, { type: "heartbeat", periodSeconds: 3600, graceSeconds: 60, gatusKey: "core_backup" });
  assert.deepEqual(doc.databases.services[0].check, { type: "tcp", host: "127.0.0.1", port: 6379, expect: [{ maxLatencyMs: 50 }], intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2 });
  // icmp:// is one echo, as Gatus sends (no alerts in Gatus: notify false).
  assert.deepEqual(doc.gatus.services[1].check, { type: "icmp", host: "192.0.2.1", count: 1, intervalSeconds: 60, notify: false });
  assert.deepEqual(doc.gatus.services[2].check, { url: "http://127.0.0.1:1/", intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2 });
  assert.deepEqual(doc.gatus.services[0].check, { type: "tcp", host: "127.0.0.1", port: 2222, expect: [{ banner: { contains: "SSH-" } }], intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2, paused: true });
  assert.deepEqual(doc.dns.services[0].check, { type: "dns", name: "example.org", recordType: "AAAA", server: "127.0.0.1:5353", expect: [{ rcode: "NOERROR", answers: { includes: "2001:db8::1" } }], intervalSeconds: 60, notifyThreshold: 3, recoverThreshold: 2 });
  for (const line of [
    /endpoint "front-end": condition "\[BODY\]\.load < 2" is a second json condition/,
    /endpoint "front-end": condition "\[DOMAIN_EXPIRATION\] > 720h" became domainWarnDays: 30/,
    /endpoint "front-end": condition "len\(\[BODY\]\.checks\) == 1" is not \[PLACEHOLDER\] OP VALUE/,
    /endpoint "signalling": its url "sctp:\/\/127\.0\.0\.1:9" is a kind healthd does not check/,
    /external endpoint "backup": its Gatus token does not carry over: .*; its key core_backup does/,
    /endpoint "odd": its interval "every minute" is not a duration such as 30s or 5m; it is checked every 60 s/,
  ]) {
    assert.match(run.stderr, line);
  }

  // Applied, the variable is filled from the environment (and its absence said), as Gatus did.
  const db = tempDbPath(t);
  const unset = await runHealthd(["import", "--from", "gatus", config, "--apply", "--db", db]);
  assert.equal(unset.code, 2);
  assert.match(unset.stderr, /config\.yaml \(imported\):\d+:\d+: \$\{HOME_URL\} is not set/);
  const applied = await runHealthd(["import", "--from", "gatus", config, "--apply", "--db", db], { HOME_URL: target.url });
  assert.equal(applied.code, 0, applied.stderr);
  const checked = await runHealthd(["check", "core/homepage", "--db", db]);
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
});

test("import --from healthchecks keeps ping keys: a job's ping reaches the new heartbeat at the same path", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "checks.json");
  writeFileSync(
    file,
    JSON.stringify({
      checks: [
        { name: "Filesystem Backup", slug: "filesystem-backup", tags: "backup fs", grace: 600, status: "up", ping_url: "https://hc-ping.com/31365bce-8da9-4729-8ff3-aaa71d56b712", timeout: 3600 },
        { name: "Database Backup", slug: "database-backup", grace: 1200, status: "paused", ping_url: "https://hc-ping.com/803f680d-e89b-492b-82ef-2be7b774a92d", schedule: "15 5 * * *", tz: "Europe/Riga" },
        { name: "Read-only", grace: 60, unique_key: "a6c7b0a8a66bed0df66abfdab3c77736861703ee", timeout: 60 },
        { name: "Systemd timer", grace: 60, schedule: "Mon *-*-* 02:00", tz: "UTC", uuid: "0d9c3a41-0000-4000-8000-000000000001" },
      ],
    }),
  );
  const run = await runHealthd(["import", "--from", "healthchecks", file]);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(parse(run.stdout).healthchecks.services, [
    { id: "filesystem-backup", name: "Filesystem Backup", tags: ["backup", "fs"], check: { type: "heartbeat", periodSeconds: 3600, graceSeconds: 600, pingKey: "31365bce-8da9-4729-8ff3-aaa71d56b712" } },
    { id: "database-backup", name: "Database Backup", check: { type: "heartbeat", cron: "15 5 * * *", timezone: "Europe/Riga", graceSeconds: 1200, pingKey: "803f680d-e89b-492b-82ef-2be7b774a92d", paused: true } },
    { id: "read-only", name: "Read-only", check: { type: "heartbeat", periodSeconds: 60, graceSeconds: 60 } },
  ]);
  assert.match(run.stderr, /check "Systemd timer": its schedule "Mon \*-\*-\* 02:00" is not a cron expression healthd reads/);
  assert.match(run.stderr, /ping keys: 1 check has no ping_url or uuid/);

  const d = await testDaemon(t);
  const applied = await runHealthd(["import", "--from", "healthchecks", file, "--apply", "--db", d.db]);
  assert.equal(applied.code, 0, applied.stderr);
  // The daemon follows the change (another process's, within a second); the job's old path is taken.
  await until(async () => (await fetch(`${d.url}/ping/31365bce-8da9-4729-8ff3-aaa71d56b712`)).status, (status) => status === 200, "the imported key taking pings");
});

test("import refuses a file that is not what --from says, saying what it looked like; nothing is written", async (t) => {
  const dir = tempDir(t);
  const json = join(dir, "checks.json");
  writeFileSync(json, JSON.stringify({ checks: [] }));
  const yaml = join(dir, "config.yaml");
  writeFileSync(yaml, "endpoints: []\n");
  const healthdDb = tempDbPath(t);
  assert.equal((await runHealthd(["migrate", "--db", healthdDb])).code, 0);
  for (const [from, file, message] of [
    ["gatus", json, /checks\.json is not what --from gatus reads: it is YAML without endpoints \(it has: checks\)/],
    ["healthchecks", yaml, /is not what --from healthchecks reads: it is text \(YAML, perhaps\), not the JSON of Healthchecks\.io's GET \/api\/v3\/checks\//],
    ["uptime-kuma", json, /is not what --from uptime-kuma reads: it is JSON without a monitorList \(it has: checks\)/],
    ["uptime-kuma", healthdDb, /it is a SQLite database without a monitor table \(its tables: .*http_check_configs/],
    ["gatus", healthdDb, /it is a SQLite database, not a Gatus configuration/],
    ["gatus", join(dir, "missing.yaml"), /cannot read .*missing\.yaml: ENOENT/],
    ["nagios", yaml, /--from.*Allowed choices are uptime-kuma, gatus, healthchecks/],
  ] as const) {
    const run = await runHealthd(["import", "--from", from, file, "--apply", "--db", join(dir, "never.db")]);
    assert.equal(run.code, 2, `${from} ${file}: ${run.stderr}`);
    assert.match(run.stderr, message);
  }
  assert.equal((await runHealthd(["import", "--from", "gatus", yaml, "--dry-run"])).code, 2, "--dry-run needs --apply");
  assert.equal((await runHealthd(["import", "--from", "gatus", yaml, "--server", "a/b"])).code, 2);
});
