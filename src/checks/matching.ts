/**
 * Where a user's pattern runs. A match is linear (domain/pattern.ts): at most about the pattern's size in steps
 * per character. Up to `inlineSteps` (a few milliseconds at worst) it runs where it is asked, as most do: a
 * status line, a header, a small JSON body. Beyond, it runs on a worker thread, so that no pattern, however
 * shaped and on whatever body, holds the event loop that answers pings and times every other check: a costly
 * pattern costs its own check time, never a neighbour's (a[ab]{20}c on 1 MiB: ~3 s of one core, bench:patterns).
 *
 * The evaluators stay pure and synchronous: they ask a `Matches` and get an answer at once. A match too costly
 * to run inline answers false for now and is remembered; `judged` then runs those on the worker and evaluates
 * once more, when every answer is known. One worker for the process: the second core keeps the loop.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Pattern } from "../domain/pattern.ts";

type Compiled = Extract<Pattern, { ok: true }>;

/** What an evaluator asks: does this pattern match this text? */
export interface Matches {
  test(pattern: Compiled, text: string): boolean;
}

/** ~10 ms at worst on this engine's slowest path (about 100 ns a step, bench:patterns' worst case). */
export const inlineSteps = 100_000;

const inline = (pattern: Compiled, text: string) => pattern.size * text.length <= inlineSteps;

/** Every match where it is asked, whatever it costs: for tools and tests that judge one observation by hand. */
export const matchesHere: Matches = { test: (pattern, text) => pattern.test(text) };

/** The matches cheap enough to run at once; a costly one says no for now (a wait that `judged` ends later). */
export const cheapOnly: Matches = { test: (pattern, text) => inline(pattern, text) && pattern.test(text) };

/**
 * `judge` run with every pattern answered truly: once, when all its matches were cheap; else a second time,
 * after the costly ones ran on the worker thread.
 */
export async function judged<T>(judge: (matches: Matches) => T): Promise<T> {
  const known = new Map<string, Map<string, boolean>>();
  const costly: { source: string; text: string }[] = [];
  const matches: Matches = {
    test(pattern, text) {
      if (inline(pattern, text)) return pattern.test(text);
      const answer = known.get(pattern.source)?.get(text);
      if (answer !== undefined) return answer;
      costly.push({ source: pattern.source, text });
      return false;
    },
  };
  const first = judge(matches);
  if (costly.length === 0) return first;
  const answers = await onWorker(costly);
  costly.forEach(({ source, text }, i) => {
    let texts = known.get(source);
    if (!texts) known.set(source, (texts = new Map()));
    texts.set(text, answers[i]!);
  });
  costly.length = 0;
  return judge(matches);
}

export interface Job {
  readonly source: string;
  readonly text: string;
}
export interface Request {
  readonly id: number;
  readonly jobs: readonly Job[];
}
export type Reply = { readonly id: number; readonly answers: readonly boolean[] } | { readonly id: number; readonly error: string };

let worker: Worker | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (answers: readonly boolean[]) => void; reject: (error: Error) => void }>();

/** The matches on the worker, answered in order; started on first use, and not keeping the process alive idle. */
function onWorker(jobs: readonly Job[]): Promise<readonly boolean[]> {
  const id = nextId++;
  const thread = (worker ??= start());
  if (waiting.size === 0) thread.ref();
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    thread.postMessage({ id, jobs } satisfies Request);
  });
}

function start(): Worker {
  // Beside this module, in its own form: match-worker.ts under tsx, .js in dist/, .mjs in the single executable.
  const here = import.meta.url;
  const url = new URL(`./match-worker${extname(fileURLToPath(here))}`, here);
  // Run from source (the tests, tsx), a worker does not inherit the TypeScript loader: it registers it first.
  const thread = url.pathname.endsWith(".ts")
    ? new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`, { eval: true })
    : new Worker(url);
  thread.unref();
  thread.on("message", (reply: Reply) => {
    const waiter = waiting.get(reply.id);
    waiting.delete(reply.id);
    if (waiting.size === 0) thread.unref();
    if ("error" in reply) waiter?.reject(new Error(reply.error));
    else waiter?.resolve(reply.answers);
  });
  const stopped = (error: Error) => {
    // Told twice (error, then exit): the second time, a new worker may hold the waiting matches; not ours.
    if (worker !== thread) return;
    // The next costly match starts a new worker; these ones fail their checks saying why.
    worker = undefined;
    for (const waiter of waiting.values()) waiter.reject(error);
    waiting.clear();
  };
  thread.on("error", stopped);
  thread.on("exit", (code) => stopped(new Error(`the pattern worker stopped (exit code ${code})`)));
  return thread;
}
