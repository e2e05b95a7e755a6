/**
 * What differs between the engines, named in one place. The store itself (kysely-store.ts) and its queries
 * are shared; a backend supplies the connection and the few things each database does its own way.
 */
import type { Kysely, RawBuilder, SelectQueryBuilder } from "kysely";
import type { ScheduleChange } from "../domain/model.ts";
import type { Pulse } from "../platform/tick.ts";
import type { MigrationReport } from "./migrate.ts";
import type { BulkInsert } from "./queries/bulk.ts";
import type { StoreUnavailable } from "./errors.ts";
import type { Channel, Engine } from "./store.ts";
import type { Tables } from "./tables.ts";

/** What a transaction may have to do alone in the cluster: change the configuration, or rebalance the checks. */
export type Lock = "config" | "rebalance" | "storms";

export interface Backend {
  readonly engine: Engine;
  /**
   * One daemon serves the database at a time (SQLite's serve lock), so no other node is ever live beside the one
   * serving it: the rows of any other are of nodes that died.
   */
  readonly alone: boolean;
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
  /**
   * Hold the rows of these services until the transaction ends: on PostgreSQL several nodes may store results of
   * one service at once (several locations), and each must decide from the other's outcome. SQLite's write
   * transaction already holds everything.
   */
  lockServices(trx: Kysely<Tables>, keys: readonly number[]): Promise<void>;
  /** An aggregate joining a text column's values of each group with commas (group_concat or string_agg). */
  joinText(column: string): RawBuilder<string>;
  /** `column IN (keys)`, in the form the engine plans fastest. */
  keyIn(column: string, keys: readonly number[]): RawBuilder<boolean>;
  /** A claim of rows that several nodes may make at once: on PostgreSQL, rows another is claiming are skipped. */
  claiming<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** Insert `rows` (each the values of `spec.columns`, in order); answers the RETURNING rows in row order. */
  bulkInsert<T extends keyof Tables, R = Record<string, unknown>>(db: Kysely<Tables>, spec: BulkInsert<T>, rows: readonly (readonly unknown[])[]): Promise<R[]>;
  /** After rows were written with their ids (healthd copy): new rows get ids after them. */
  followIdentity(trx: Kysely<Tables>, table: keyof Tables, column: string): Promise<void>;
  /** The store's answer to a driver error that means "not now" (unreachable, read-only, full), if it is one. */
  unavailable(error: unknown): StoreUnavailable | undefined;
  /** See Store.watch. */
  watch(channel: Channel, listener: (change?: ScheduleChange) => void, pulse: Pulse): () => void;
  /**
   * Tell other processes' watchers of `channel` about this transaction's change, once it commits (PostgreSQL
   * NOTIFY; SQLite needs nothing), with which services it started and stopped when that is known.
   */
  announce(trx: Kysely<Tables>, channel: Channel, change?: ScheduleChange): Promise<void>;
  /** See Store.problems. */
  problems(): string[];
  migrate(target?: string): Promise<MigrationReport>;
  pendingMigrations(): Promise<string[]>;
  close(): Promise<void>;
}
