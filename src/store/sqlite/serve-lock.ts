/**
 * One daemon per SQLite file. Two daemons on one file would both run every check and both send every
 * notification, so `serve` claims the file with a pid file beside it (as PostgreSQL's postmaster.pid does):
 * created exclusively, removed on a clean stop, and taken over when the pid in it is no longer alive (the
 * daemon was killed). The CLI commands do not take it: they may read and write beside the daemon.
 */
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";

export function serveLockPath(dbPath: string): string {
  return `${dbPath}.pid`;
}

/** Claim `dbPath` for this process; throws an Error naming the running daemon's pid when it is taken. */
export function acquireServeLock(dbPath: string): () => void {
  const file = serveLockPath(dbPath);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      return () => {
        try {
          if (readFileSync(file, "utf8").trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const pid = Number(readPid(file));
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
      throw new Error(
        `another healthd serve (pid ${pid}) is already running on ${dbPath}; stop it first (one daemon per SQLite file), ` +
          `or use PostgreSQL to run several nodes. If no healthd runs, delete ${file}`,
      );
    }
    // A daemon that died without cleaning up: its claim is stale.
    try {
      unlinkSync(file);
    } catch {
      // Someone else took it over meanwhile; try again.
    }
  }
  throw new Error(`cannot claim ${dbPath}: ${file} keeps changing; is another healthd starting at the same time?`);
}

function readPid(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
