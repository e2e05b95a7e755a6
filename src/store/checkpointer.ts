/**
 * WAL checkpoints on a worker thread. SQLite's automatic checkpoint runs inside whichever commit makes the
 * WAL long enough, and it writes pages back and fsyncs: on the daemon's one thread that stalled checks and
 * requests for up to hundreds of ms (bench:store measured a 376 ms retention batch). The daemon turns the
 * automatic checkpoint off and this worker, with its own connection, runs a PASSIVE checkpoint every second:
 * it never blocks the writer or readers, and its fsync waits on another thread.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Logger } from "../log.ts";
import type { Store } from "./db.ts";

const workerSource = `
const { workerData, parentPort } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
}, workerData.everyMs);
parentPort.on("message", (message) => {
  if (message === "stop") {
    clearInterval(timer);
    db.close();
    parentPort.close();
  }
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(store: Store, log: Logger, everyMs = 1000): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(workerSource, { eval: true, workerData: { path: store.path, driver, everyMs } });
  store.sqlite.pragma("wal_autocheckpoint = 0");
  let stopped = false;
  const fallBack = (why: string) => {
    if (stopped) return;
    log.warn("checkpoints are back on the main thread", { why });
    store.sqlite.pragma("wal_autocheckpoint = 1000");
  };
  worker.on("message", (message: { error?: string }) => message.error && log.warn("checkpoint failed", { error: message.error }));
  worker.on("error", (error) => fallBack(error.message));
  worker.on("exit", (code) => code !== 0 && fallBack(`the checkpoint worker exited with ${code}`));
  return {
    async stop() {
      stopped = true;
      worker.postMessage("stop");
      await new Promise((resolve) => worker.once("exit", resolve));
      store.sqlite.pragma("wal_autocheckpoint = 1000");
    },
  };
}
