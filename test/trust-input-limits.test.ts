/**
 * Files for `healthd apply` and `healthd import` within bounds: over 10 MiB, or nested deeper than 64, refused
 * (exit 2, naming the limit) before they are parsed; and a refused command leaves no new database file behind.
 * Through the built executable, run in a folder of its own so that its default ./healthd.db would show.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runHealthd } from "./support/cli.ts";
import { kumaDatabase } from "./support/kuma.ts";
import { tempDir } from "./support/temp.ts";

const mib = 1024 * 1024;
/** A valid servers file padded with comments to `bytes`. */
const padded = (bytes: number) => {
  const head = "web-01:\n  services:\n    - id: backup\n      check: {type: heartbeat, periodSeconds: 3600}\n";
  const line = "# " + "x".repeat(1021) + "\n";
  return head + line.repeat(Math.ceil((bytes - head.length) / line.length));
};
/** `levels` of block mappings, one inside the next. */
const deepYaml = (levels: number) => Array.from({ length: levels }, (_, i) => `${" ".repeat(i)}k${i}:`).join("\n") + " 1\n";
const deepJson = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

test("apply: a file over 10 MiB is refused unparsed (exit 2, the limit named), and no healthd.db appears", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "big.yaml"), padded(11 * mib));
  const run = await runHealthd(["apply", "big.yaml"], {}, dir);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /big\.yaml is larger than 10 MiB, the limit of a file for apply or import; it was not parsed: split it into several files/);
  assert.deepEqual(readdirSync(dir), ["big.yaml"], "no database was made");

  writeFileSync(join(dir, "fits.yaml"), padded(9 * mib));
  const fits = await runHealthd(["apply", "fits.yaml", "--dry-run"], {}, dir);
  assert.equal(fits.code, 0, fits.stderr);
  assert.match(fits.stdout, /web-01: would be created \(1 service\)/);
});

test("apply: a file nested deeper than 64 is refused unparsed, YAML or JSON, naming the line; 64 levels are read", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "deep.yaml"), deepYaml(65));
  const yaml = await runHealthd(["apply", "deep.yaml"], {}, dir);
  assert.equal(yaml.code, 2, yaml.stderr);
  assert.match(yaml.stderr, /deep\.yaml:65: nests deeper than 64 levels, the limit of a file for apply or import/);
  writeFileSync(join(dir, "deep.json"), `{"web-01": ${deepJson(100_000)}}`);
  const json = await runHealthd(["apply", "deep.json"], {}, dir);
  assert.equal(json.code, 2, json.stderr);
  assert.match(json.stderr, /deep\.json:1: nests deeper than 64 levels/);
  assert.doesNotMatch(json.stderr, /internal error|stack/);
  assert.deepEqual(readdirSync(dir).sort(), ["deep.json", "deep.yaml"], "no database was made");

  writeFileSync(join(dir, "64.yaml"), deepYaml(64));
  const read = await runHealthd(["apply", "64.yaml"], {}, dir);
  assert.equal(read.code, 2, "refused by validation, as any unknown server document is");
  assert.doesNotMatch(read.stderr, /nests deeper/);
  assert.match(read.stderr, /64\.yaml:\d+:\d+: \/k0\/k1: is not a known field/);
});

test("import: Gatus, Healthchecks and Kuma's JSON backup over 10 MiB or deeper than 64 are refused unparsed; kuma.db is read whatever its size", async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "config.yaml"), "endpoints:\n" + padded(11 * mib).split("\n").slice(4).join("\n"));
  const big = await runHealthd(["import", "--from", "gatus", "config.yaml", "--apply"], {}, dir);
  assert.equal(big.code, 2, big.stderr);
  assert.match(big.stderr, /config\.yaml is larger than 10 MiB/);
  writeFileSync(join(dir, "hc.json"), `{"checks": ${deepJson(65)}}`);
  const deep = await runHealthd(["import", "--from", "healthchecks", "hc.json", "--apply"], {}, dir);
  assert.equal(deep.code, 2, deep.stderr);
  assert.match(deep.stderr, /hc\.json:1: nests deeper than 64 levels/);
  writeFileSync(join(dir, "backup.json"), `{"version": "1.23.0", "monitorList": ${deepJson(65)}}`);
  const backup = await runHealthd(["import", "--from", "uptime-kuma", "backup.json"], {}, dir);
  assert.equal(backup.code, 2, backup.stderr);
  assert.match(backup.stderr, /backup\.json:1: nests deeper than 64 levels/);
  assert.deepEqual(readdirSync(dir).sort(), ["backup.json", "config.yaml", "hc.json"], "no database was made");

  // Kuma's database is read table by table: its heartbeats may make it any size.
  const kuma = join(dir, "kuma.db");
  kumaDatabase(kuma, [{ id: 1, name: "Shop", type: "http", url: "https://shop.example/" }]);
  writeFileSync(kuma, Buffer.alloc(11 * mib), { flag: "a" });
  const read = await runHealthd(["import", "--from", "uptime-kuma", kuma], {}, dir);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /url: https:\/\/shop\.example\//);
});

test("a refused apply leaves no new database behind, and never removes one that was there", async (t) => {
  const dir = tempDir(t);
  const reference = "web-01:\n  services:\n    - id: a\n      check: {type: heartbeat, periodSeconds: 3600, dependsOn: [nope/x]}\n";
  writeFileSync(join(dir, "refused.yaml"), reference);
  const refused = await runHealthd(["apply", "refused.yaml"], {}, dir);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /names nope\/x, which does not exist/);
  assert.deepEqual(readdirSync(dir), ["refused.yaml"], "the database it made is gone, with its -wal and -shm");

  writeFileSync(join(dir, "good.yaml"), "web-01:\n  services:\n    - id: backup\n      check: {type: heartbeat, periodSeconds: 3600}\n");
  assert.equal((await runHealthd(["apply", "good.yaml"], {}, dir)).code, 0);
  const again = await runHealthd(["apply", "refused.yaml"], {}, dir);
  assert.equal(again.code, 2);
  assert.ok(existsSync(join(dir, "healthd.db")), "a database that was there stays");
  const exported = await runHealthd(["export"], {}, dir);
  assert.match(exported.stdout, /id: backup/, "with what it held");
});
