/**
 * PostgreSQL's multi-row INSERT: one array per column, unnested. A handful of parameters instead of one per
 * value, which it parses, binds and plans several times faster than a VALUES list of hundreds of rows; one
 * text for every row count.
 */
import { chunkSize, type BulkDialect } from "../queries/bulk.ts";

export const postgresBulk: BulkDialect = {
  take: (left) => Math.min(left, chunkSize),
  shape: () => "unnest",
  values: (spec) => `SELECT * FROM unnest(${spec.columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})`,
  parameters: (spec, rows) => spec.columns.map((_, i) => arrayLiteral(rows, i)),
};

/**
 * Column `i` of the rows as PostgreSQL's array text, `{1,NULL,"a \"b\""}`, which the statement casts to the
 * column's type. Written here, not left to pg's array serializer: that one builds the text a value at a time,
 * and was a quarter of everything the write path allocated on PostgreSQL.
 */
export function arrayLiteral(rows: readonly (readonly unknown[])[], i: number): string {
  const items = new Array<string>(rows.length);
  for (let r = 0; r < rows.length; r++) items[r] = element(rows[r]![i]);
  return `{${items.join(",")}}`;
}

function element(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`a value to store is not a finite number (${value})`);
    return String(value);
  }
  if (typeof value === "boolean") return value ? "t" : "f";
  if (typeof value === "string") return `"${value.replace(/[\\"]/g, "\\$&")}"`;
  throw new TypeError(`a value to store is neither a number, a boolean, a string nor null (${typeof value})`);
}
