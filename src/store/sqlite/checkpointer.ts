/**
 * WAL checkpoints on a worker thread. SQLite's automatic checkpoint runs inside whichever commit makes the
 * WAL long enough, and it writes pages back and fsyncs: on the daemon's one thread that stalled checks and
 * requests for up to hundreds of ms (bench:store measured a 376 ms retention batch). The daemon turns the
 * automatic checkpoint off and this worker, with its own connection, runs PASSIVE checkpoints: they never
 * block the writer or readers, and their fsyncs wait on another thread. How often follows the writes: on the
 * tenth commit since the last checkpoint if a second has passed (busy loads: one a second at most), else ten
 * seconds after the first commit since it. At everyday loads (a commit a second) a checkpoint every ten
 * seconds writes the same state and rollup pages back once instead of ten times, and the worker woke 21
 * times in 30 s instead of 162 (100 services at 20 s). Nothing written, no timer: an idle daemon is not woken
 * for it. The main thread says when, after the same look at the WAL index that guards its own statements
 * (shm-guard.ts).
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";
import type { Clock } from "../../platform/clock.ts";
import type { Logger } from "../../platform/log.ts";
import type { ShmGuard } from "./shm-guard.ts";

const workerSource = `
const { workerData, parentPort } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
parentPort.on("message", (message) => {
  if (message === "checkpoint") {
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
    } catch (error) {
      parentPort.postMessage({ error: String(error && error.message || error) });
    }
  } else if (message === "stop") {
    db.close();
    parentPort.close();
  }
});
`;

export interface Checkpointer {
  /**
   * A commit has grown the WAL: checkpoint it now or within `quietMs`. A commit that need not reach the disk
   * soon (`urgent` false: the heartbeat, every few seconds) only counts toward the tenth: an idle daemon's
   * WAL is checkpointed about once a minute, and the worker is not woken every ten seconds for it.
   */
  written(urgent?: boolean): void;
  /** Stop the worker; `touchable` false ends it without closing its connection (see shm-guard.ts). */
  stop(touchable?: boolean): Promise<void>;
}

/** Commits that make a checkpoint due at once, when the last one is at least `busyEveryMs` old. */
const busyCommits = 10;
const busyEveryMs = 1000;
/** Longest a commit waits for its checkpoint. */
const quietMs = 10_000;

export function startCheckpointer(sqlite: Database.Database, path: string, log: Logger, guard: ShmGuard, clock: Clock): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(workerSource, { eval: true, workerData: { path, driver } });
  sqlite.pragma("wal_autocheckpoint = 0");
  let timer: unknown;
  let commits = 0;
  let lastAt = -Infinity;
  const checkpoint = () => {
    clock.clearTimeout(timer);
    timer = undefined;
    commits = 0;
    lastAt = clock.monotonic();
    try {
      guard.check();
      worker.postMessage("checkpoint");
    } catch {
      // The WAL index cannot be touched now: no checkpoint either; the next commit asks again.
    }
  };
  let stopped = false;
  const fallBack = (why: string) => {
    if (stopped) return;
    log.warn("checkpoints are back on the main thread", { why });
    sqlite.pragma("wal_autocheckpoint = 1000");
  };
  worker.on("message", (message: { error?: string }) => message.error && log.warn("checkpoint failed", { error: message.error }));
  worker.on("error", (error) => fallBack(error.message || String(error)));
  // An exit of its own (it could not open the file, say) must not leave stop() waiting for one.
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", (code) => {
      if (code !== 0) fallBack(`the checkpoint worker exited with ${code}`);
      resolve();
    }),
  );
  return {
    written(urgent = true) {
      if (stopped) return;
      if (++commits >= busyCommits && clock.monotonic() - lastAt >= busyEveryMs) checkpoint();
      else if (urgent) timer ??= clock.setTimeout(checkpoint, quietMs);
    },
    async stop(touchable = true) {
      stopped = true;
      clock.clearTimeout(timer);
      if (!touchable) {
        await worker.terminate();
        return;
      }
      worker.postMessage("stop");
      await exited;
      sqlite.pragma("wal_autocheckpoint = 1000");
    },
  };
}
