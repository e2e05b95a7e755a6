/**
 * In WAL mode SQLite maps the WAL index, `<db>-shm`, into memory. If that file stops being writable under it
 * (chattr +i, a read-only remount) or is truncated, the next access to the mapping is a SIGBUS: the process
 * dies on the spot, with no log line, and no JavaScript can catch it. So every transaction, and every
 * statement outside one, first looks at the file (two syscalls): while it cannot be written, healthd does not
 * touch the database and reports the store unavailable instead (checks go on, results wait), and resumes when
 * the file is back.
 * A truncated file is given its size back: zeros are the state SQLite starts every WAL index from, and it
 * rebuilds the index from the WAL (nothing committed is lost; the index is derived data).
 */
import { accessSync, constants, statSync, truncateSync } from "node:fs";

export interface ShmGuard {
  /** Throws an error coded SQLITE_IOERR_SHMMAP when the database must not be touched now. */
  check(): void;
  /** Why the database is not touched, or undefined. */
  problem(): string | undefined;
}

export function shmGuard(dbPath: string, onRepair: (message: string) => void = () => {}): ShmGuard {
  const shm = `${dbPath}-shm`;
  let largest = 0;
  let problem: string | undefined;
  return {
    check() {
      problem = undefined;
      let size: number;
      try {
        accessSync(shm, constants.W_OK);
        size = statSync(shm).size;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // Not made yet (no WAL access so far), or unlinked: the mapping is of a file no one can truncate now.
        if (code === "ENOENT") return;
        problem = `${shm} cannot be written (${code}); healthd leaves the database alone until it can (make the file writable again)`;
        throw coded(problem);
      }
      if (size < largest) {
        try {
          truncateSync(shm, largest);
        } catch (error) {
          problem = `${shm} was truncated under the running daemon and cannot be restored (${(error as NodeJS.ErrnoException).code}); restart healthd`;
          throw coded(problem);
        }
        onRepair(`${shm} was truncated by another process; healthd gave it its size back and SQLite rebuilds the index from the WAL`);
        return;
      }
      largest = size;
    },
    problem: () => problem,
  };
}

function coded(message: string): Error {
  return Object.assign(new Error(message), { code: "SQLITE_IOERR_SHMMAP" });
}
