/**
 * WAL checkpoints on a worker thread. SQLite's automatic checkpoint runs inside whichever commit makes the
 * WAL long enough, and it writes pages back and fsyncs: on the daemon's one thread that stalled checks and
 * requests for up to hundreds of ms (bench:store measured a 376 ms retention batch). The daemon turns the
 * automatic checkpoint off and this worker, with its own connection, runs a PASSIVE checkpoint a second after
 * a commit (at most one a second): it never blocks the writer or readers, and its fsync waits on another
 * thread. Nothing written, no timer: an idle daemon is not woken for it. The main thread says when, after the
 * same look at the WAL index that guards its own statements (shm-guard.ts).
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";
import type { Logger } from "../../log.ts";
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
  /** A commit has grown the WAL: checkpoint it within `everyMs`. */
  written(): void;
  /** Stop the worker; `touchable` false ends it without closing its connection (see shm-guard.ts). */
  stop(touchable?: boolean): Promise<void>;
}

export function startCheckpointer(sqlite: Database.Database, path: string, log: Logger, guard: ShmGuard, everyMs = 1000): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(workerSource, { eval: true, workerData: { path, driver } });
  sqlite.pragma("wal_autocheckpoint = 0");
  let timer: NodeJS.Timeout | undefined;
  const checkpoint = () => {
    timer = undefined;
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
    written() {
      if (!stopped) timer ??= setTimeout(checkpoint, everyMs);
    },
    async stop(touchable = true) {
      stopped = true;
      clearTimeout(timer);
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
