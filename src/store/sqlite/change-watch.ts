/**
 * Following other processes' commits to a SQLite file (healthd apply, healthd silence, a daemon seen from
 * healthd tail): data_version moves with each of them. Read at every pulse, it cost an idle daemon a wake-up a
 * second, most of what an idle daemon spent (docs/benchmarks.md). Every commit of every process writes the WAL
 * file, and those processes share one machine (a WAL's index is shared memory), whose kernel says when the file
 * is written (inotify): so data_version is read when the WAL is written, and no wake-up comes while nothing is.
 *
 * The watch proves itself rather than being trusted: the pulse is read until the file's first event, and again
 * once a commit of this connection's goes unseen for a second (a filesystem that gives no events). So a change
 * is followed within a pulse whatever the filesystem, and without one where the kernel tells.
 */
import { watch as watchFile, type FSWatcher } from "node:fs";
import type { Pulse } from "../../platform/tick.ts";

export interface ChangeWatch {
  /** This connection committed: its write of the WAL should be seen within a second. */
  committed(): void;
  stop(): void;
}

export interface ChangeWatchOptions {
  /** The WAL file. */
  readonly wal: string;
  /** data_version now, or undefined when the file is not to be read now. */
  readonly look: () => number | undefined;
  readonly listener: () => void;
  readonly pulse: Pulse;
  /** For tests: a watch that gives no events stands for a filesystem without them. */
  readonly watch?: (path: string, onEvent: () => void) => FSWatcher;
  /** Monotonic ms (Clock.monotonic): how long a commit has gone unseen. */
  readonly now: () => number;
}

const unseenMs = 1000;

export function watchChanges(options: ChangeWatchOptions): ChangeWatch {
  const { look, listener, pulse, now } = options;
  let version = look();
  const changed = () => {
    const seen = look();
    // Not to be read now: the pulse looks again, since the next write of the file may be long in coming.
    if (seen === undefined) return poll();
    if (seen === version) return;
    version = seen;
    listener();
  };
  let polling: (() => void) | undefined = pulse(changed);
  const poll = () => void (polling ??= pulse(changed));
  /** When the oldest commit of this connection not yet followed by an event was made. */
  let unseenSince: number | undefined;
  let watcher: FSWatcher | undefined;
  const onEvent = () => {
    unseenSince = undefined;
    polling?.();
    polling = undefined;
    changed();
  };
  try {
    watcher = (options.watch ?? watchEvents)(options.wal, onEvent);
    // The file gone from under the watch (deleted, or the watch refused): the pulse again, for good.
    watcher.on("error", () => {
      watcher?.close();
      watcher = undefined;
      poll();
    });
  } catch {
    // No such file yet, or no inotify watches left (fs.inotify.max_user_watches): the pulse it is.
  }
  return {
    committed() {
      if (!watcher) return;
      const at = now();
      if (unseenSince === undefined) unseenSince = at;
      else if (at - unseenSince >= unseenMs) poll();
    },
    stop() {
      watcher?.close();
      watcher = undefined;
      polling?.();
      polling = undefined;
    },
  };
}

/**
 * fs.watch; a rename (the file replaced or deleted) is the watch's end. It keeps the process up until it is
 * stopped, as a timer of its own did (healthd tail -f has nothing else to wait for).
 */
function watchEvents(path: string, onEvent: () => void): FSWatcher {
  const watcher = watchFile(path);
  watcher.on("change", (type) => {
    if (type === "rename") watcher.emit("error", new Error(`${path} was renamed or deleted`));
    else onEvent();
  });
  return watcher;
}
