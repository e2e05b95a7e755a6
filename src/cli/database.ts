/**
 * Opening the database for a subcommand: errors become usage errors (exit 2) whose message says what to do.
 */
import { existsSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { UsageError } from "../platform/config.ts";
import { policy } from "../policy/index.ts";
import { isPostgresUrl, openStore, type OpenOptions } from "../store/open.ts";
import type { Store } from "../store/store.ts";

/** check, tail, export: never create or migrate (`writable` is for check --record, which writes entries). */
export function openForReading(target: string, { writable = false } = {}): Promise<Store> {
  return open(target, { mode: "read", writable });
}

/** apply, silence, copy's destination: create and migrate when needed, as serve does. */
export function openForWriting(target: string): Promise<Store> {
  return open(target, { mode: "write" });
}

let defaulted = false;

/**
 * Told by the program before a command runs: --db was left out (neither the flag nor HEALTHD_DB). A command
 * that opens the database then says which file it is, so nobody works on ./healthd.db of the wrong folder.
 */
export function databaseDefaulted(value: boolean): void {
  defaulted = value;
}

/** SQLite files this command made, to be removed if it is refused (an apply with a bad reference, say). */
const created: string[] = [];

/**
 * Told by the program when a command has ended. A refused command leaves no new database behind: the SQLite
 * files it created are removed, their stores closed by then (commands close them before their error reaches
 * the program). A file that was there before is never touched; a command that ran keeps what it made.
 */
export function commandEnded({ refused }: { refused: boolean }): void {
  for (const file of created.splice(0)) {
    if (refused) for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true });
  }
}

async function open(target: string, options: Omit<OpenOptions, "policy">): Promise<Store> {
  if (defaulted) process.stderr.write(`healthd: using ${resolve(target)} (no --db or HEALTHD_DB given)\n`);
  if (options.mode === "write" && !isPostgresUrl(target) && !existsSync(target)) created.push(resolve(target));
  try {
    return await openStore(target, { ...options, policy });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

/** Run `work` on the store being opened, and close it whatever happens. */
export async function withStore<T>(opening: Promise<Store>, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await opening;
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
