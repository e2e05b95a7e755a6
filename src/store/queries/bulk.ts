/**
 * Multi-row INSERTs, the one place where the engines are written differently for speed. SQLite takes a VALUES
 * list. PostgreSQL gets one array per column, unnested: a handful of parameters instead of one per value,
 * which it parses, binds and plans several times faster than a VALUES list of hundreds of rows.
 */
import { sql, type InsertQueryBuilder, type Kysely } from "kysely";
import type { Engine } from "../store.ts";
import type { Tables } from "../tables.ts";

/** A column and its PostgreSQL type, for the array it travels in. */
export type Columns<T extends keyof Tables> = readonly (readonly [keyof Tables[T] & string, string])[];

type Row<T extends keyof Tables> = { readonly [K in keyof Tables[T] & string]?: unknown };

export function insertMany<T extends keyof Tables>(
  db: Kysely<Tables>,
  engine: Engine,
  table: T,
  columns: Columns<T>,
  rows: readonly Row<T>[],
): InsertQueryBuilder<Tables, T, object> {
  const names = columns.map(([name]) => name);
  const insert = db.insertInto(table).columns(names as never);
  if (engine === "sqlite") {
    return insert.values(rows.map((row) => Object.fromEntries(names.map((n) => [n, row[n] ?? null]))) as never) as never;
  }
  const arrays = columns.map(([name, type]) => sql`${rows.map((row) => row[name] ?? null)}::${sql.raw(type)}[]`);
  return insert.expression(sql`select * from unnest(${sql.join(arrays)})` as never) as never;
}
