/** SQLite's multi-row INSERT: a VALUES list of placeholders, its text kept per row count (and its statement with it). */
import type { BulkDialect } from "../queries/bulk.ts";

export const sqliteBulk: BulkDialect = {
  shape: (count) => String(count),
  values: (spec, count) => {
    const row = `(${spec.columns.map(() => "?").join(", ")})`;
    return `VALUES ${Array.from({ length: count }, () => row).join(", ")}`;
  },
  parameters: flatten,
};

/** rows.flat(), which V8 runs several times slower than this loop (a tenth of the write path, profiled). */
function flatten(_spec: unknown, rows: readonly (readonly unknown[])[]): unknown[] {
  // Sized once: pushing grew the array by copies, thousands of values per statement.
  const out = new Array<unknown>(rows.length * (rows[0]?.length ?? 0));
  let i = 0;
  for (const row of rows) for (const value of row) out[i++] = value;
  return out;
}
