/**
 * What differs between the engines, named in one place. The store itself (kysely-store.ts) and its queries
 * are shared; a backend supplies the connection and the few things each database does its own way.
 */
import type { Kysely } from "kysely";
import type { MigrationReport } from "./migrate.ts";
import type { Channel, Engine, StoreUnavailable } from "./store.ts";
import type { Tables } from "./tables.ts";

/** What a transaction may have to do alone in the cluster. */
export type Lock = "config";

export interface Backend {
  readonly engine: Engine;
  /** The file, or the URL without its password. */
  readonly location: string;
  readonly db: Kysely<Tables>;
  /**
   * Run `fn` in one write transaction. SQLite takes the write lock at BEGIN (IMMEDIATE), so that a
   * transaction that reads before it writes never fails with SQLITE_BUSY beside another process.
   */
  write<T>(fn: (trx: Kysely<Tables>) => Promise<T>): Promise<T>;
  /**
   * Run `fn`, a write to tables no batch of results reads (the node's heartbeat, every few seconds), without
   * moving changeMark. SQLite runs it in a write transaction and counts the rows it changed; its commit does
   * not hurry a checkpoint (see Checkpointer.written).
   */
  writeAside<T>(fn: (db: Kysely<Tables>) => Promise<T>): Promise<T>;
  /**
   * A mark that moves whenever the database may have changed since this connection last wrote to it (but for
   * writeAside), read in a write transaction; undefined where the engine cannot tell (PostgreSQL: other nodes
   * write beside it). It lets the write path keep what it read between batches (see ServiceMemo).
   */
  changeMark(trx: Kysely<Tables>): Promise<string | undefined>;
  /**
   * Hold the cluster-wide lock named `lock` until the transaction ends: PostgreSQL takes an advisory lock;
   * SQLite's write transaction is already the only one.
   */
  lock(trx: Kysely<Tables>, lock: Lock): Promise<void>;
  /** The store's answer to a driver error that means "not now" (unreachable, read-only, full), if it is one. */
  unavailable(error: unknown): StoreUnavailable | undefined;
  /** See Store.watch. */
  watch(channel: Channel, listener: () => void, everyMs: number): () => void;
  /** Tell other processes' watchers of `channel` about this transaction's change, once it commits (PostgreSQL NOTIFY; SQLite needs nothing). */
  announce(trx: Kysely<Tables>, channel: Channel): Promise<void>;
  /** See Store.problems. */
  problems(): string[];
  migrate(target?: string): Promise<MigrationReport>;
  pendingMigrations(): Promise<string[]>;
  close(): Promise<void>;
}
