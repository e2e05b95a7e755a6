/**
 * Following the entries a running daemon writes, from another process on the same SQLite file. WAL lets this
 * reader run beside the writer without blocking it; PRAGMA data_version tells, without reading any table,
 * whether anything was committed since the last look.
 */
import type { Store } from "./store/db.ts";
import { entriesAfter, lastEntryId, type NamedEntry } from "./store/entries.ts";

export interface FollowOptions {
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
  /** How often to look for new entries. Default 250 ms. */
  readonly intervalMs?: number;
  readonly onEntries: (entries: readonly NamedEntry[]) => void;
}

/** Call `onEntries` with every entry stored from now on; answers a function that stops following. */
export function followEntries(store: Store, options: FollowOptions): () => void {
  let after = lastEntryId(store);
  let version: unknown;
  const look = () => {
    const now = store.sqlite.pragma("data_version", { simple: true });
    if (now === version) return;
    version = now;
    for (;;) {
      const entries = entriesAfter(store, after, options);
      if (entries.length === 0) break;
      after = Number(entries.at(-1)!.id);
      options.onEntries(entries);
    }
  };
  const timer = setInterval(look, options.intervalMs ?? 250);
  return () => clearInterval(timer);
}
