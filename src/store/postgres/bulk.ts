/**
 * PostgreSQL's multi-row INSERT: one array per column, unnested. A handful of parameters instead of one per
 * value, which it parses, binds and plans several times faster than a VALUES list of hundreds of rows; one
 * text for every row count.
 */
import type { BulkDialect } from "../queries/bulk.ts";

export const postgresBulk: BulkDialect = {
  shape: () => "unnest",
  values: (spec) => `SELECT * FROM unnest(${spec.columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ")})`,
  parameters: (spec, rows) => spec.columns.map((_, i) => rows.map((row) => row[i] ?? null)),
};
