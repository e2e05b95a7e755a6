/**
 * The SQLite change watch (src/store/sqlite/change-watch.ts): another process's commits are followed through the
 * WAL file's writes as the kernel reports them, and through the pulse wherever it reports none.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { FSWatcher } from "node:fs";
import { test } from "node:test";
import { sql } from "kysely";
import { watchChanges } from "../src/store/sqlite/change-watch.ts";
import type { Pulse } from "../src/platform/tick.ts";
import { until } from "./support/events.ts";
import { open, rawQuery } from "./support/raw.ts";
import { tempDbPath } from "./support/temp.ts";

/** A pulse that beats only when the test says. */
function manualPulse() {
  const listeners = new Set<() => void>();
  const on: Pulse = (listener) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  return {
    on,
    listening: () => listeners.size,
    beat() {
      for (const listener of listeners) listener();
    },
  };
}

test("SQLite: another connection's commit is followed through the WAL file's writes, with no pulse once one has been seen", async (t) => {
  const path = tempDbPath(t);
  const daemon = await open(path, { mode: "write" });
  t.after(() => daemon.close());
  const other = await open(path, { mode: "write" });
  t.after(() => other.close());
  const pulse = manualPulse();
  let heard = 0;
  let onHeard = () => {};
  const stop = daemon.watch(
    () => {
      heard++;
      onHeard();
    },
    { pulse: pulse.on },
  );
  t.after(stop);
  assert.equal(pulse.listening(), 1, "until the file is seen written, the pulse is read");
  // A commit of its own writes the WAL: the watch sees it working, and says nothing of it.
  await daemon.backend.write((trx) => sql`UPDATE rollup_revisions SET revision = revision + 1`.execute(trx));
  await until(async () => pulse.listening(), (n) => n === 0, "the file's write seen, the pulse let go");
  assert.equal(heard, 0, "its own commit is not a change of another's");
  // The guard only turns a hang into a clear failure.
  let guard: NodeJS.Timeout | undefined;
  const told = new Promise<void>((resolve, reject) => {
    onHeard = resolve;
    guard = setTimeout(() => reject(new Error("another connection's commit was not told within 15 s")), 15_000);
  });
  // Nothing beats the pulse in this test: only the file's write can tell it.
  await rawQuery(other, "UPDATE rollup_revisions SET revision = revision + 1");
  await told.finally(() => clearTimeout(guard));
  assert.equal(heard, 1);
});

test("where the WAL file gives no events the pulse is read; a commit of its own unseen for a second, or a write told while the file is not to be read, brings it back", () => {
  let version = 1;
  let heard = 0;
  let now = 0;
  let event = () => {};
  const pulse = manualPulse();
  const silentFile = (_path: string, onEvent: () => void) => {
    event = onEvent;
    return Object.assign(new EventEmitter(), { close: () => {} }) as unknown as FSWatcher;
  };
  const watch = watchChanges({ wal: "healthd.db-wal", look: () => version, listener: () => heard++, pulse: pulse.on, watch: silentFile, now: () => now });
  version = 2;
  pulse.beat();
  assert.equal(heard, 1, "no event yet: the pulse finds the change");
  event();
  assert.equal(pulse.listening(), 0, "an event: the file is watched, the pulse let go");
  version = 3;
  event();
  assert.equal(heard, 2);
  // The file goes silent: its own commits say so.
  watch.committed();
  now = 999;
  watch.committed();
  assert.equal(pulse.listening(), 0, "a commit's write may take a moment to be told");
  now = 1000;
  watch.committed();
  assert.equal(pulse.listening(), 1, "a commit unseen for a second: the pulse again");
  version = 4;
  pulse.beat();
  assert.equal(heard, 3);
  event();
  assert.equal(pulse.listening(), 0, "events again: the pulse let go again");
  // A write told while the file is not to be read: the pulse looks again until it may be.
  let readable = true;
  const guarded = watchChanges({ wal: "healthd.db-wal", look: () => (readable ? version : undefined), listener: () => heard++, pulse: pulse.on, watch: silentFile, now: () => now });
  event();
  assert.equal(pulse.listening(), 0, "both watches proven");
  readable = false;
  version = 5;
  event();
  assert.equal(pulse.listening(), 1, "a write told while the file is not to be read: the pulse again");
  readable = true;
  pulse.beat();
  assert.equal(heard, 4, "the pulse found the change once the file could be read");
  guarded.stop();
  watch.committed();
  now = 3000;
  watch.committed();
  assert.equal(pulse.listening(), 1, "silent again: the pulse again");
  watch.stop();
  assert.equal(pulse.listening(), 0, "stopped, it reads nothing");
});
