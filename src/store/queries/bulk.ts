/**
 * Multi-row INSERTs on the write path: what a backend's bulkInsert is asked to write. They run for every batch
 * of results, and building 500 rows of values as a Kysely tree and compiling it cost more than SQLite's own
 * work (profiled): each engine writes the SQL out once per shape (src/store/sqlite/bulk.ts,
 * src/store/postgres/bulk.ts) and the values travel as parameters, through the transaction's connection.
 */
import { CompiledQuery, type Kysely } from "kysely";
import type { Tables } from "../tables.ts";

export interface BulkInsert<T extends keyof Tables> {
  readonly table: T;
  /** Every column written, with its PostgreSQL type (the arrays' element type). */
  readonly columns: readonly (readonly [keyof Tables[T] & string, string])[];
  /** ON CONFLICT (key) DO UPDATE SET each of `update` to the new row's value. */
  readonly upsert?: { readonly key: readonly string[]; readonly update: readonly string[] };
  readonly returning?: keyof Tables[T] & string;
}

/** Rows per statement: far below SQLite's 32,766 and PostgreSQL's 65,535 parameters. */
export const chunkSize = 1000;

/** How an engine writes a chunk of rows: the statement for `count` rows (kept per shape), and its parameters. */
export interface BulkDialect {
  /** How many of the `left` rows to write the next statement takes (at most chunkSize). */
  take(left: number): number;
  /** A name for the statement's text among the texts of one spec: the same for every count where the text is. */
  shape(count: number): string;
  values(spec: BulkInsert<keyof Tables>, count: number): string;
  parameters(spec: BulkInsert<keyof Tables>, rows: readonly (readonly unknown[])[]): unknown[];
}

const quote = (name: string) => `"${name}"`;
const texts = new WeakMap<object, Map<string, string>>();

/**
 * Insert `rows` (each the values of `spec.columns`, in order), in statements of the sizes the dialect takes; answers the
 * RETURNING rows in row order (both engines answer a multi-row insert's in the order of its rows).
 */
export async function bulkInsert<T extends keyof Tables, R>(
  db: Kysely<Tables>,
  dialect: BulkDialect,
  spec: BulkInsert<T>,
  rows: readonly (readonly unknown[])[],
): Promise<R[]> {
  const returned: R[] = [];
  for (let i = 0; i < rows.length; ) {
    const count = dialect.take(rows.length - i);
    const chunk = count === rows.length ? rows : rows.slice(i, i + count);
    i += count;
    const general = spec as unknown as BulkInsert<keyof Tables>;
    let cache = texts.get(spec);
    if (!cache) texts.set(spec, (cache = new Map()));
    const shape = dialect.shape(chunk.length);
    let text = cache.get(shape);
    if (!text) cache.set(shape, (text = render(general, dialect.values(general, chunk.length))));
    const result = await db.executeQuery<R>(CompiledQuery.raw(text, dialect.parameters(general, chunk)));
    for (const row of result.rows) returned.push(row);
  }
  return returned;
}

function render(spec: BulkInsert<keyof Tables>, values: string): string {
  const columns = spec.columns.map(([name]) => quote(name)).join(", ");
  const upsert = spec.upsert
    ? ` ON CONFLICT (${spec.upsert.key.map(quote).join(", ")}) DO UPDATE SET ${spec.upsert.update.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(", ")}`
    : "";
  const returning = spec.returning ? ` RETURNING ${quote(spec.returning)}` : "";
  return `INSERT INTO ${quote(spec.table)} (${columns}) ${values}${upsert}${returning}`;
}
