/**
 * The shared engine: PostgreSQL through a `pg` pool. Several daemons may use one database; changes reach the
 * others through LISTEN/NOTIFY, and a transaction that decides from rows it read locks them first.
 */
import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient } from "kysely";
import { bulkInsert } from "../queries/bulk.ts";
import { postgresBulk } from "./bulk.ts";
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Backend, Lock } from "../backend.ts";
import { pendingMigrations, runMigrations } from "../migrate.ts";
import { StoreUnavailable } from "../errors.ts";
import type { Tables } from "../tables.ts";
import type { ScheduleChange } from "../../domain/model.ts";
import type { Clock } from "../../platform/clock.ts";
import { Backoff } from "./backoff.ts";
import { describe, type PostgresTarget } from "./target.ts";

/** Advisory lock keys, by what they guard: "healthd" in ASCII and a number, so they are recognisable in pg_locks. */
const locks: Record<Lock, number> = { rebalance: 0x6865616c746864, config: 0x6865616c746864 + 1, storms: 0x6865616c746864 + 2 };

/**
 * `column = ANY(keys)`: the keys as one array parameter. A list of 500 parameters cost PostgreSQL more to
 * parse, bind and plan than the read itself (profiled: the batch's two reads took 15.7 ms).
 */
const keyIn = (column: string, keys: readonly number[]) => sql<boolean>`${sql.ref(column)} = any(${keys}::bigint[])`;

/** The NOTIFY channels, by what they announce. */
const channels = { config: "healthd_config", entries: "healthd_entries", cluster: "healthd_cluster" } as const;

// bigint (int8) and the counts PostgreSQL answers as bigint: numbers, as on SQLite. Every value healthd keeps
// in a bigint (Unix ms, row ids, counts) stays far below 2^53.
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? (text: string) => Number(text) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * What means "not now", never "this can never be stored": a connection lost or refused, this client backing off
 * after failed connections, and these SQLSTATE classes and codes (a retry later may well succeed).
 */
const unavailableCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EBACKOFF"]);
const unavailableStates: readonly (readonly [prefix: string, name: string])[] = [
  ["08", "connection exception"],
  ["25006", "read-only transaction"],
  ["25P03", "idle-in-transaction timeout"],
  ["40", "transaction rollback (serialization failure or deadlock)"],
  ["53", "insufficient resources"],
  ["55P03", "lock not available"],
  ["57", "operator intervention (statement timeout, cancel or shutdown)"],
  ["58", "system error"],
];
const unavailableMessages = /Connection terminated|timeout exceeded when trying to connect|not queryable|connection is closed|Client was closed/i;
/**
 * What PostgreSQL answers when it turns everyone away: nothing listens on its port, or it is shutting down
 * (57P01, 57P02) or starting up (57P03). A timeout or a reset may be this process's link alone.
 */
const downCodes = new Set(["ECONNREFUSED", "57P01", "57P02", "57P03"]);

export interface PostgresOptions {
  /** Told of errors on idle connections (the server went away between queries). */
  readonly onIdleError?: (error: Error) => void;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
  /** For the waits between reconnects. */
  readonly clock: Clock;
}

export function postgresBackend(target: PostgresTarget, options: PostgresOptions): Backend {
  const { clock } = options;
  const now = () => clock.monotonic();
  const config: pg.PoolConfig = {
    connectionString: target.url,
    max: options.poolSize ?? 10,
    // Fail a query rather than wait forever for a server that is gone; the store reports itself unavailable.
    connectionTimeoutMillis: 5000,
    keepAlive: true,
    types,
    application_name: "healthd",
  };
  const pool = new pg.Pool(config);
  pool.on("error", (error) => options.onIdleError?.(error));
  // pg-pool listens for errors only on idle clients: a connection that dies during a query would emit an
  // 'error' nobody hears, which ends the process. The query itself fails with the error, which is what counts.
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: preparing(pool, new Backoff({ now })) }) });
  const location = describe(target);
  /** Who announces: every notification carries it, so that this process's watchers skip its own. */
  const origin = randomUUID();
  const listeners = new Set<{ client: pg.Client | undefined; stopped: boolean }>();

  return {
    engine: "postgres",
    alone: false,
    location,
    db,
    write: (fn) => db.transaction().execute(fn),
    writeAside: (fn) => fn(db),
    changeMark: async () => undefined,
    lock: async (trx, lock) => {
      await sql`select pg_advisory_xact_lock(${locks[lock]})`.execute(trx);
    },
    // Lock first, read after: a SELECT ... FOR UPDATE that waits for another transaction's lock re-reads only
    // the locked rows when it gets it, and would join them with the state as it was before that transaction.
    // FOR NO KEY UPDATE leaves foreign-key checks free.
    lockServices: async (trx, keys) => {
      await trx.selectFrom("services").select("key").where(keyIn("key", keys)).orderBy("key").forNoKeyUpdate().execute();
    },
    joinText: (column) => sql<string>`string_agg(${sql.ref(column)}, ',')`,
    keyIn,
    claiming: (query) => query.forUpdate().skipLocked(),
    bulkInsert: (trx, spec, rows) => bulkInsert(trx, postgresBulk, spec, rows),
    // Identities come from a sequence, which copied ids do not move: set it past them.
    followIdentity: async (trx, table, column) => {
      await sql`select setval(pg_get_serial_sequence(${table}, ${column}), (select max(${sql.ref(column)}) from ${sql.table(table)}))`.execute(trx);
    },
    unavailable(error) {
      const e = error as { code?: unknown; message?: unknown } | null;
      const code = typeof e?.code === "string" ? e.code : "";
      const message = typeof e?.message === "string" ? e.message : String(error);
      const state = unavailableStates.find(([prefix]) => code.startsWith(prefix));
      if (!state && !unavailableCodes.has(code) && !unavailableMessages.test(message)) return undefined;
      const why = state ? `${code}, ${state[1]}: ${message}` : code ? `${code}: ${message}` : message;
      return new StoreUnavailable(`PostgreSQL at ${target.host}:${target.port} cannot take this now (${why})`, code || "EUNAVAILABLE", {
        cause: error,
        down: downCodes.has(code),
      });
    },
    watch(channel, listener) {
      // One connection LISTENs. While it is down, it is retried after a second, backing off up to 30 s while
      // connecting fails; each (re)connect reloads once, which covers whatever was announced while nobody listened.
      const watch = { client: undefined as pg.Client | undefined, stopped: false };
      listeners.add(watch);
      const backoff = new Backoff({ baseMs: 1000, maxMs: 30_000, now });
      let retry: unknown;
      let first = true;
      const connect = async () => {
        if (watch.stopped) return;
        const client = new pg.Client({ ...config, types: undefined });
        watch.client = client;
        let over = false;
        // Called by 'error', 'end' and a failed connect, often two of them for one loss: one retry, not two
        // (two retries per loss doubled the connections every second, thousands within a minute).
        const lost = () => {
          if (over) return;
          over = true;
          client.removeAllListeners();
          client.on("error", () => {});
          void client.end().catch(() => {});
          if (watch.client === client) watch.client = undefined;
          if (!watch.stopped) retry = clock.setTimeout(() => void connect(), backoff.failed());
        };
        client.on("error", lost);
        client.on("end", lost);
        // What this process announced itself it has followed already (its own PUT, say): only others' changes.
        client.on("notification", (message) => {
          const announced = readAnnouncement(message.payload);
          if (announced.origin !== origin) listener(announced.change);
        });
        try {
          await client.connect();
          await client.query(`LISTEN ${channels[channel]}`);
          backoff.succeeded();
          if (!first) listener();
          first = false;
        } catch {
          lost();
        }
      };
      void connect();
      return () => {
        watch.stopped = true;
        clock.clearTimeout(retry);
        listeners.delete(watch);
        void watch.client?.end().catch(() => {});
      };
    },
    announce: async (trx, channel, change) => {
      await sql`select pg_notify(${channels[channel]}, ${announcement(origin, change)})`.execute(trx);
    },
    problems: () => [],
    // Kysely's Migrator runs the whole history in one transaction, under PostgreSQL's advisory lock.
    migrate: (target) => runMigrations(db, location, target, (run) => run()),
    pendingMigrations: () => pendingMigrations(db, location),
    close: async () => {
      for (const watch of listeners) {
        watch.stopped = true;
        await watch.client?.end().catch(() => {});
      }
      await db.destroy();
    },
  };
}

/**
 * Which texts are named: those with 1 to 32 parameters. An IN list (a parameter per value) makes a text per
 * length; a text without parameters may hold several statements, which a named statement cannot.
 */
const maxNamedParameters = 32;
/** A bound on the names kept, whatever the queries: past it, new texts run unnamed. */
const maxNamedTexts = 1000;

/**
 * The pool as Kysely sees it, with each query run as a named statement: pg parses a named statement once per
 * connection and PostgreSQL keeps its plan, where an unnamed one is parsed and planned on every execution
 * (the write path's read of a batch of 500 services took 13.6 ms, 7.8 named; storing batches of 500, measured:
 * 13,400 -> 16,000 entries/s, and PostgreSQL's own CPU 49 -> 35 us an entry).
 * The write path's lists travel as arrays, one parameter each; texts with long IN lists stay unnamed.
 * New connections wait out `backoff` after a failed one, so a failing server sees a few tries a second at most.
 */
function preparing(pool: pg.Pool, backoff: Backoff): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string, parameters: readonly unknown[]): string | undefined => {
    if (parameters.length === 0 || parameters.length > maxNamedParameters) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < maxNamedTexts) names.set(text, (name = `healthd_${names.size}`));
    return name;
  };
  // Kysely keeps its connection object per client: answer the same wrapper for the same pg client.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  let lastFailure: NodeJS.ErrnoException = new Error("none yet");
  return {
    async connect() {
      // After a failed connection no new one is tried until the backoff has passed; an idle one is still used.
      // The error says why, as the failed connection did (ECONNREFUSED, ...), in words that stay the same while
      // the outage lasts: the log and /healthz say an error once, until it changes (with the milliseconds left
      // in it, the recorder logged every retry as a new error).
      const waitMs = pool.idleCount === 0 ? backoff.waitMs : 0;
      if (waitMs > 0) {
        const message = `not connecting to PostgreSQL again until a short backoff after a failed connection has passed (${lastFailure.message})`;
        throw Object.assign(new Error(message), { code: lastFailure.code ?? "EBACKOFF" });
      }
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        backoff.failed();
        lastFailure = error as NodeJS.ErrnoException;
        throw error;
      }
      backoff.succeeded();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        // Kysely's two overloads (text and parameters, or a cursor of its stream()) in one function.
        const query = (text: string | pg.Submittable, parameters: unknown[] = []) =>
          typeof text === "string" ? client.query({ name: nameOf(text, parameters), text, values: parameters }) : client.query(text);
        wrapper = { query: query as unknown as PostgresPoolClient["query"], release: () => client.release() };
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/**
 * A notification's payload: who announced, and the services a change of configuration started and stopped
 * (so that the others read only those), left out when they do not fit in PostgreSQL's 8,000 bytes.
 */
function announcement(origin: string, change: ScheduleChange | undefined): string {
  const text = change ? JSON.stringify({ origin, started: change.started, stopped: change.stopped }) : "";
  return text && text.length <= 7900 ? text : JSON.stringify({ origin });
}

function readAnnouncement(payload: string | undefined): { origin?: string; change?: ScheduleChange } {
  try {
    const { origin, started, stopped } = JSON.parse(payload ?? "") as { origin?: string; started?: number[]; stopped?: number[] };
    return { origin, ...(Array.isArray(started) && Array.isArray(stopped) ? { change: { started, stopped } } : {}) };
  } catch {
    return {};
  }
}
