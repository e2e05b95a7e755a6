/**
 * Opening the database for a subcommand: errors become usage errors (exit 2) whose message says what to do.
 */
import { UsageError } from "../config.ts";
import { policy } from "../policy/index.ts";
import { openStore, type OpenOptions } from "../store/open.ts";
import type { Store } from "../store/store.ts";

/** check, tail, export: never create or migrate (`writable` is for check --record, which writes entries). */
export function openForReading(target: string, { writable = false } = {}): Promise<Store> {
  return open(target, { mode: "read", writable });
}

/** apply, silence, copy's destination: create and migrate when needed, as serve does. */
export function openForWriting(target: string): Promise<Store> {
  return open(target, { mode: "write" });
}

async function open(target: string, options: Omit<OpenOptions, "policy">): Promise<Store> {
  try {
    return await openStore(target, { ...options, policy });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}
