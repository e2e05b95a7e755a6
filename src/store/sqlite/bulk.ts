/**
 * SQLite's multi-row INSERT: a VALUES list of placeholders, its text kept per row count, and its prepared
 * statement with it (src/store/sqlite/connection.ts), which grows with its rows (150 kB for 100 rows of 22
 * columns, measured). Up to 16 rows a statement takes the exact count, which covers a batch at everyday
 * loads; more go in statements of a power of two (45 as 32 and 13), so a daemon keeps at most 22 texts a
 * table rather than one for each batch size it has seen (at 10,000 services, 75 a table after 80 s).
 */
import { chunkSize, type BulkDialect } from "../queries/bulk.ts";

const exact = 16;

export const sqliteBulk: BulkDialect = {
  take: (left) => (left <= exact ? left : Math.min(chunkSize, 2 ** Math.floor(Math.log2(left)))),
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
