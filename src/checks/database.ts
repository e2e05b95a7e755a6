/**
 * A database check (postgres, mysql, redis): a fresh connection, the login, one query, its first row (redis:
 * its answer) judged as text, and the connection closed whatever happened. One deadline, `timeoutMs`, covers
 * it all; the clients are told never to retry or reconnect, so a server that stalls or sends garbage costs
 * this check its timeout and nothing more. The password is read from this node's environment (`${NAME}`, as a
 * channel's secrets are) when the check runs, never stored. What it judges is pure (evaluateDatabase).
 */
import type { MysqlCheck, Outcome, PostgresCheck, RedisCheck } from "../domain/model.ts";
import { readConnection } from "../domain/schema/database.ts";
import { fillSecrets } from "../domain/schema/secrets.ts";
import { systemClock } from "../platform/clock.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { firstHolding, latencyCondition, quote, textConditions, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { judged, type Matches } from "./matching.ts";
import { askMysql, loadMysql } from "./db-mysql.ts";
import { askPostgres, loadPostgres } from "./db-postgres.ts";
import { askRedis, loadRedis } from "./db-redis.ts";
import type { Row, Session } from "./db-session.ts";

export type DatabaseRequest = Pick<PostgresCheck | MysqlCheck | RedisCheck, "type" | "url" | "query" | "expect" | "timeoutMs">;

/** The most of an answer kept and judged: a first row is meant to be small. */
const answerChars = 65_536;
/** The most of it kept in the entry. */
const shownChars = 1000;

/** What a database check showed, as the evaluator needs it. */
export interface DatabaseObservation {
  /** The first row's values joined by "|" (as psql -At prints them, NULL as nothing); "" when no row came. */
  readonly text: string;
  readonly rowCame: boolean;
  /** From the start to the answer: connecting, logging in and the query. */
  readonly latencyMs: number;
}

const drivers = { postgres: askPostgres, mysql: askMysql, redis: askRedis };
const libraries = { postgres: loadPostgres, mysql: loadMysql, redis: loadRedis };
const names = { postgres: "PostgreSQL", mysql: "MySQL", redis: "Redis" };

export async function runDatabaseCheck(check: DatabaseRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  // The client library loads before the clock starts: its first load is the daemon's cost, not the server's latency.
  await libraries[check.type]().catch(() => {}); // a library that cannot load fails in the driver, said there
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "shortage">): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  const read = readOnce(check);
  if (!read.ok) return fail(new CheckFailure("internal", `the check's url ${read.problem}`));
  const { connection } = read;
  const where = `${connection.host.includes(":") ? `[${connection.host}]` : connection.host}:${connection.port}`;
  let password: string | null = null;
  if (connection.password !== null) {
    try {
      password = fillSecrets(connection.password, options.env ?? process.env);
    } catch (error) {
      return fail(new CheckFailure("auth", `no password to log in to ${where} with: ${(error as Error).message}`));
    }
  }
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  const session: Session = { stage: "connecting", close: () => {}, over: () => deadline.over };
  try {
    const row: Row = await deadline.until(drivers[check.type]({ ...connection, password, timeoutMs: check.timeoutMs }, check.query, session));
    const latencyMs = round(clock.monotonic() - started);
    const text = row === null ? "" : row.map((value) => value ?? "").join("|").slice(0, answerChars);
    const seen: DatabaseObservation = { text, rowCame: row !== null, latencyMs };
    const verdict = await judged((matches) => evaluateDatabase(check.type, check.expect, seen, matches));
    const answers = row === null ? [] : [text.slice(0, shownChars)];
    return verdict.ok
      ? { ok: true, status: null, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, answers }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error }), latencyMs, answers };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no answer from ${names[check.type]} at ${where} within ${check.timeoutMs} ms (timed out ${session.stage})`));
    return fail(classify(error, connection.host, where, session.stage));
  } finally {
    deadline.clear();
    try {
      session.close();
    } catch {
      // closed already
    }
  }
}

/**
 * The URL read once per check definition, not at each check: reading it (URL parsing, %-escapes, the
 * parameters) was a tenth of a database check's CPU. Kept by the definition, as its conditions are (conditionsOf),
 * so it goes with it.
 */
const readUrls = new WeakMap<DatabaseRequest, ReturnType<typeof readConnection>>();
function readOnce(check: DatabaseRequest): ReturnType<typeof readConnection> {
  let read = readUrls.get(check);
  if (read === undefined) readUrls.set(check, (read = readConnection(check.type, check.url)));
  return read;
}

/** Which alternative held, or why none did: pure. No alternatives: an answer without an error was enough. */
export function evaluateDatabase(type: DatabaseRequest["type"], expect: DatabaseRequest["expect"], seen: DatabaseObservation, matches: Matches): Verdict {
  if (expect.length === 0) return { ok: true, matched: 0 };
  return firstHolding(expect, (a) => conditionsOf(type, a), seen, matches);
}

const built = new WeakMap<object, Condition<DatabaseObservation>[]>();
function conditionsOf(type: DatabaseRequest["type"], a: DatabaseRequest["expect"][number]): Condition<DatabaseObservation>[] {
  let list = built.get(a);
  if (list) return list;
  const shown = (seen: DatabaseObservation) => (!seen.rowCame ? "the answer (no row came)" : `${type === "redis" ? "the answer" : "the first row"} ${quote(seen.text)}`);
  list = textConditions<DatabaseObservation>(a, (seen) => seen.text, shown);
  if (a.equals !== undefined) {
    const text = a.equals;
    list.push((seen) => (seen.text === text ? null : { kind: "answer", message: `${shown(seen)} is not ${quote(text)}` }));
  }
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  built.set(a, list);
  return list;
}
