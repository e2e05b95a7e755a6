/** kill -9 of the daemon in the middle of its work, for real: nothing committed is lost, nothing queued is lost. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import Database from "better-sqlite3";
import { healthdBin, serveHealthd } from "./support/cli.ts";
import { nextEvent } from "./support/events.ts";
import { ntfyStandIn } from "./support/ntfy.ts";
import { switchableTarget } from "./support/targets.ts";
import { tempDbPath } from "./support/temp.ts";

const services = 40;
const rounds = 3;

test(`kill -9 while writing entries with notifications queued, ${rounds} rounds: integrity, committed entries and the outbox survive`, async (t) => {
  const ntfy = await ntfyStandIn(t);
  await ntfy.stop(); // every DOWN stays queued until the last round
  const target = await switchableTarget(t);
  const db = tempDbPath(t);
  const env = { HEALTHD_DB: db, HEALTHD_NTFY_URL: ntfy.url, HEALTHD_NTFY_TOPIC: "ops" };

  for (let round = 1; round <= rounds; round++) {
    const served = await serveHealthd(t, [], env);
    if (round === 1) {
      const put = await fetch(served.url + "/services/fleet", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          groupThreshold: 0, // each service's DOWN is what this counts, not one for the storm
          services: Array.from({ length: services }, (_, i) => ({ id: `svc-${i}`, check: { url: `${target.url}?${i}`, intervalSeconds: 1, notifyThreshold: 0 } })),
        }),
      });
      assert.equal(put.status, 201);
    }
    // What `healthd tail` prints has been committed: remember it, then kill the daemon mid-stream.
    const tail = spawn(process.execPath, [healthdBin, "tail", "--json", "--db", db]);
    const seen: string[] = [];
    const lines = new EventEmitter();
    let buffer = "";
    tail.stdout.on("data", (d: Buffer) => {
      buffer += d;
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        seen.push(JSON.parse(buffer.slice(0, i)).id);
        buffer = buffer.slice(i + 1);
        lines.emit("line");
      }
    });
    await nextEvent(lines, "line", () => seen.length >= 2 * services);
    assert.equal(await served.stop("SIGKILL"), null);
    tail.kill();

    const check = new Database(db, { readonly: true });
    assert.deepEqual(check.pragma("integrity_check"), [{ integrity_check: "ok" }], `round ${round}`);
    assert.deepEqual(check.pragma("foreign_key_check"), []);
    const present = new Set((check.prepare("SELECT id FROM health_check_data_entries").all() as { id: number }[]).map((r) => String(r.id)));
    const missing = seen.filter((id) => !present.has(id));
    assert.deepEqual(missing, [], `round ${round}: entries tail had seen are gone`);
    const queued = check.prepare("SELECT count(*) AS n FROM notifications WHERE kind = 'down' AND status = 'pending'").get() as { n: number };
    assert.equal(queued.n, services, `round ${round}: one queued DOWN per service`);
    check.close();
    t.diagnostic(`round ${round}: ${seen.length} committed entries seen before kill -9, all present; ${queued.n} DOWN queued`);
  }

  await ntfy.start();
  const all = nextEvent(ntfy.events, "message", () => ntfy.messages("ops").length >= services, 30_000);
  const served = await serveHealthd(t, [], env);
  await all;
  await nextEvent(target.events, "hit");
  await nextEvent(target.events, "hit");
  const titles = ntfy.messages("ops").map((m) => m.title);
  assert.equal(titles.length, services);
  assert.equal(new Set(titles).size, services, "each service's DOWN exactly once");
  assert.equal(await served.stop(), 0);
});
