/**
 * Following the entries a running daemon stores, from another process on the same database: the store says
 * when another process may have committed (SQLite's data_version, PostgreSQL's notifications), and each
 * look reads what came after the last entry seen.
 */
import type { NamedEntry, ResultStore, Store } from "../store/store.ts";
import type { Clock } from "../platform/clock.ts";
import { every } from "../platform/tick.ts";

export interface FollowOptions {
  readonly serverId?: string | undefined;
  readonly serviceId?: string | undefined;
  /** How often to look for new entries. Default 250 ms. */
  readonly intervalMs?: number;
  /** What the looks are timed by. */
  readonly clock: Clock;
  readonly onEntries: (entries: readonly NamedEntry[]) => void;
  /** Told when a look fails (the database went away); following goes on. */
  readonly onError?: (error: Error) => void;
}

/** Call `onEntries` with every entry stored after `afterId`; answers a function that stops following. */
export function followEntries(store: ResultStore & Pick<Store, "watch">, afterId: number, options: FollowOptions): () => void {
  let after = afterId;
  let looking = false;
  const look = async () => {
    if (looking) return;
    looking = true;
    try {
      for (;;) {
        const entries = await store.entriesAfter(after, options);
        if (entries.length === 0) break;
        after = entries.at(-1)!.id;
        options.onEntries(entries);
      }
    } catch (error) {
      options.onError?.(error as Error);
    } finally {
      looking = false;
    }
  };
  return store.watch(() => void look(), { of: "entries", pulse: every(options.clock, options.intervalMs ?? 250) });
}
