/**
 * Text from outside made storable, the same on both engines: a ping's body, a check's error (an HTTP reason, a
 * TCP banner, a DNS answer, a run's output), a receiver's answer to a delivery. PostgreSQL refuses a NUL in
 * text ("invalid byte sequence for encoding UTF8: 0x00"), and in JSON ("unsupported Unicode escape sequence"),
 * after the sender was answered; SQLite takes it. A lone UTF-16 surrogate (from a JSON escape) has no UTF-8 at
 * all. Each becomes U+FFFD, as invalid UTF-8 already does when bytes are read as text. The store applies it on
 * its way in (KyselyStore), so no caller needs to remember it.
 */
import type { CheckRun } from "./batch.ts";

const unstorable = /[\0\p{Cs}]/u;
const unstorableAll = /[\0\p{Cs}]/gu;

/** `text` with each NUL and lone surrogate replaced by U+FFFD; the same string when it has none. */
export function storable<T extends string | null | undefined>(text: T): T {
  return typeof text === "string" && unstorable.test(text) ? (text.replace(unstorableAll, "\uFFFD") as T) : text;
}

/** A run with its text from outside storable (a ping's body, a check's error and answers); the same run when it is. */
export function storableRun(run: CheckRun): CheckRun {
  if (run.kind === "ping") {
    const body = storable(run.ping.body);
    return body === run.ping.body ? run : { ...run, ping: { ...run.ping, body } };
  }
  if (run.kind === "deadline") return run;
  const { outcome } = run;
  const answers = outcome.answers?.some((a) => unstorable.test(a)) ? outcome.answers.map((a) => storable(a)) : outcome.answers;
  const error = outcome.ok ? outcome.error : storable(outcome.error);
  if (error === outcome.error && answers === outcome.answers) return run;
  return { ...run, outcome: { ...outcome, ...(outcome.ok ? {} : { error }), ...(answers === undefined ? {} : { answers }) } as typeof outcome };
}
