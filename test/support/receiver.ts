/**
 * An HTTP endpoint that stands in for a channel's destination (a webhook receiver, Slack, PagerDuty...): it
 * records every request and answers as the test says (a status and body, or never, to hang).
 */
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { TestContext } from "node:test";
import { serveOnLoopback } from "./targets.ts";

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
  /** The body as JSON, or undefined when it is not. */
  readonly json: any;
}

/** What to answer a request: a status and a body, or "hang" (hold it open until the receiver closes). */
export type Answer = { readonly status: number; readonly body?: string } | "hang";

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Emits "request" with each Received, once its body is read. */
  readonly events: EventEmitter;
  /** How to answer from now on; default 200 with "ok". */
  answer(how: (request: Received) => Answer): void;
  /** Answer every request held by "hang" now, with 200. */
  release(): void;
}

export async function receiver(t: TestContext): Promise<Receiver> {
  const received: Received[] = [];
  const events = new EventEmitter();
  const held: ServerResponse[] = [];
  let how: (request: Received) => Answer = () => ({ status: 200, body: "ok" });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const request: Received = { method: req.method!, path: req.url!, headers: req.headers, body, json };
      received.push(request);
      const answer = how(request);
      if (answer === "hang") held.push(res);
      else {
        res.statusCode = answer.status;
        res.setHeader("content-type", answer.body?.startsWith("{") ? "application/json" : "text/plain");
        res.end(answer.body ?? "");
      }
      events.emit("request", request);
    });
  });
  const port = await serveOnLoopback(t, server);
  t.after(() => {
    for (const res of held) res.destroy();
  });
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    events,
    answer: (next) => (how = next),
    release: () => {
      for (const res of held.splice(0)) res.end("ok");
    },
  };
}
