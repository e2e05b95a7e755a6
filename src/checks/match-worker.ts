/**
 * The worker thread that runs costly pattern matches (see matching.ts): it compiles each pattern as the
 * daemon does, answers each request's matches in order, and holds no state but the compiled patterns.
 */
import { parentPort } from "node:worker_threads";
import { compilePattern } from "../domain/pattern.ts";
import type { Reply, Request } from "./matching.ts";

parentPort!.on("message", ({ id, jobs }: Request) => {
  let reply: Reply;
  try {
    reply = {
      id,
      answers: jobs.map(({ source, text }) => {
        const pattern = compilePattern(source);
        return pattern.ok && pattern.test(text);
      }),
    };
  } catch (error) {
    reply = { id, error: `a pattern failed on the worker: ${(error as Error).message}` };
  }
  parentPort!.postMessage(reply);
});
