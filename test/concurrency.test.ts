/** The daemon, `healthd check --record`, `healthd tail` and `healthd export` on one database at once. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { healthdBin, runHealthd, serveHealthd } from "./support/cli.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

test("no SQLITE_BUSY reaches anyone, and the daemon keeps writing beside the readers", async (t) => {
  const target = await httpTarget(t);
  const db = tempDbPath(t);
  const served = await serveHealthd(t, ["--db", db]);
  await fetch(served.url + "/services/s", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ services: Array.from({ length: 30 }, (_, i) => ({ id: `svc-${i}`, check: { url: `${target.url}/ok?${i}`, intervalSeconds: 1 } })) }),
  });
  const tail = spawn(process.execPath, [healthdBin, "tail", "--json", "--db", db]);
  t.after(() => tail.kill());
  let seen = 0;
  let tailErrors = "";
  const lines = new EventEmitter();
  tail.stdout.on("data", (d: Buffer) => {
    seen += String(d).split("\n").length - 1;
    lines.emit("line");
  });
  tail.stderr.on("data", (d: Buffer) => (tailErrors += d));
  await nextEvent(lines, "line", () => seen >= 30);

  const before = seen;
  const runs = await Promise.all([
    ...Array.from({ length: 4 }, () => runHealthd(["check", "--record", "--db", db])),
    ...Array.from({ length: 2 }, () => runHealthd(["check", "s/svc-1", "--json", "--db", db])),
    runHealthd(["export", "--db", db]),
  ]);
  for (const run of runs) {
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /SQLITE_BUSY|locked/i);
  }
  // The daemon went on writing all along: tail saw its entries and the four recorded runs (30 each).
  await nextEvent(lines, "line", () => seen >= before + 4 * 30 + 30);
  assert.equal(tailErrors, "");
  assert.doesNotMatch(served.log(), /cannot store|SQLITE_BUSY|locked/i);
  assert.equal(await served.stop(), 0);
});
