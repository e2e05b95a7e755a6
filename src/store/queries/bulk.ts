/**
 * Multi-row INSERTs on the write path, the one place where the engines are written differently for speed,
 * and where the SQL is written out rather than built with Kysely: they run for every batch of results, and
 * building 500 rows of values as a Kysely tree and compiling it cost more than SQLite's own work (profiled).
 * The text is made once per shape and the values travel as parameters, through the transaction's connection.
 * - SQLite: a VALUES list of placeholders, its text cached per row count (and its statement with it).
 * - PostgreSQL: one array per column, unnested: a handful of parameters instead of one per value, which it
 *   parses, binds and plans several times faster than a VALUES list of hundreds of rows.
 */
import { CompiledQuery, type Kysely } from "kysely";
import type { Engine } from "../store.ts";
import type { Tables } from "../tables.ts";

export interface BulkInsert<T extends keyof Tables> {
  readonly table: T;
  /** Every column written, with its PostgreSQL type (the arrays' element type). */
  readonly columns: readonly (readonly [keyof Tables[T] & string, string])[];
  /** ON CONFLICT (key) DO UPDATE SET each of `update` to the new row's value. */
  readonly upsert?: { readonly key: readonly string[]; readonly update: readonly string[] };
  readonly returning?: keyof Tables[T] & string;
}

const quote = (name: string) => `"${name}"`;
const texts = new WeakMap<object, Map<string, string>>();

/** Rows per statement: far below SQLite's 32,766 and PostgreSQL's 65,535 parameters. */
export const chunkSize = 1000;

/**
 * Insert `rows` (each the values of `spec.columns`, in order), a statement per thousand; answers the
 * RETURNING rows in row order (both engines answer a multi-row insert's in the order of its rows).
 */
export async function bulkInsert<T extends keyof Tables, R = Record<string, unknown>>(
  db: Kysely<Tables>,
  engine: Engine,
  spec: BulkInsert<T>,
  rows: readonly (readonly unknown[])[],
): Promise<R[]> {
  if (rows.length <= chunkSize) return insertChunk<T, R>(db, engine, spec, rows);
  const returned: R[] = [];
  for (let i = 0; i < rows.length; i += chunkSize) {
    for (const row of await insertChunk<T, R>(db, engine, spec, rows.slice(i, i + chunkSize))) returned.push(row);
  }
  return returned;
}

async function insertChunk<T extends keyof Tables, R>(
  db: Kysely<Tables>,
  engine: Engine,
  spec: BulkInsert<T>,
  rows: readonly (readonly unknown[])[],
): Promise<R[]> {
  if (rows.length === 0) return [];
  const key = engine === "sqlite" ? String(rows.length) : "postgres";
  let cache = texts.get(spec);
  if (!cache) texts.set(spec, (cache = new Map()));
  let text = cache.get(key);
  if (!text) cache.set(key, (text = render(spec, engine, rows.length)));
  const parameters = engine === "sqlite" ? flatten(rows) : spec.columns.map((_, i) => rows.map((row) => row[i] ?? null));
  const result = await db.executeQuery<R>(CompiledQuery.raw(text, parameters));
  return result.rows;
}

function render<T extends keyof Tables>(spec: BulkInsert<T>, engine: Engine, count: number): string {
  const columns = spec.columns.map(([name]) => quote(name)).join(", ");
  const row = `(${spec.columns.map(() => "?").join(", ")})`;
  const values =
    engine === "sqlite"
      ? `VALUES ${Array.from({ length: count }, () => row).join(", ")}`
      : `SELECT * FROM unnest(${spec.columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})`;
  const upsert = spec.upsert
    ? ` ON CONFLICT (${spec.upsert.key.map(quote).join(", ")}) DO UPDATE SET ${spec.upsert.update.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(", ")}`
    : "";
  const returning = spec.returning ? ` RETURNING ${quote(spec.returning)}` : "";
  return `INSERT INTO ${quote(spec.table)} (${columns}) ${values}${upsert}${returning}`;
}

/** rows.flat(), which V8 runs several times slower than this loop (a tenth of the write path, profiled). */
function flatten(rows: readonly (readonly unknown[])[]): unknown[] {
  // Sized once: pushing grew the array by copies, thousands of values per statement.
  const out = new Array<unknown>(rows.length * rows[0]!.length);
  let i = 0;
  for (const row of rows) for (const value of row) out[i++] = value;
  return out;
}
