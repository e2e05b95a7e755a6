/**
 * Queries built with Kysely once per engine and shape, then run with each call's values. The write path and
 * the outbox run a few queries that Kysely would otherwise build as a tree and compile to the same text again
 * at every call: cold, as a heartbeat's lone missed deadline runs them minutes apart, building and compiling
 * the batch's read of its services took about 1.4 ms against 0.3 to 0.7 for running it (docs/benchmarks.md).
 * The values travel as parameters, as they would through Kysely.
 *
 * `build` is called once per shape with stand-ins for its values: a value, or each element of an array, that
 * the query only binds (an array bound whole, as PostgreSQL's `= any($1)`, is bound as the call's array). The
 * shape is the lengths of the array arguments; anything else that would change the text (a value the query
 * inlines, or one it branches on) must not be an argument.
 */
import { CompiledQuery, type Compilable, type Kysely, type QueryResult } from "kysely";
import type { Backend } from "../backend.ts";
import type { Tables } from "../tables.ts";

/** Stands in for argument `arg` (its element `element`, for an array) while the query is compiled. */
class Slot {
  constructor(
    readonly arg: number,
    readonly element: number,
  ) {}
}

type Compiled = { readonly sql: string; readonly parameters: readonly unknown[] };

/** Shapes kept per query: IN lists of every length up to a batch's 500 would make as many texts. */
const maxShapes = 64;

export function compiledOnce<A extends readonly unknown[], R>(
  build: (db: Kysely<Tables>, backend: Backend, ...args: A) => Compilable<R>,
): (db: Kysely<Tables>, backend: Backend, ...args: A) => Promise<QueryResult<R>> {
  const compiled = new Map<string, Compiled>();
  return (db, backend, ...args) => {
    const shape = `${backend.engine}${args.map((a) => (Array.isArray(a) ? `:${a.length}` : ":")).join("")}`;
    let query = compiled.get(shape);
    if (!query) {
      if (compiled.size >= maxShapes) compiled.clear();
      const slots = args.map((a, i) => (Array.isArray(a) ? a.map((_, j) => new Slot(i, j)) : new Slot(i, -1)));
      const { sql, parameters } = build(db, backend, ...(slots as unknown as A)).compile();
      compiled.set(shape, (query = { sql, parameters }));
    }
    const valueOf = (slot: Slot) => (slot.element < 0 ? args[slot.arg] : (args[slot.arg] as readonly unknown[])[slot.element]);
    const values = query.parameters.map((p) => (p instanceof Slot ? valueOf(p) : Array.isArray(p) && p[0] instanceof Slot ? p.map(valueOf) : p));
    return db.executeQuery<R>(CompiledQuery.raw(query.sql, values));
  };
}
