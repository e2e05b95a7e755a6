/**
 * The API's HTTP server, listening before anything else starts so that a port in use is said first; it answers
 * 503 (starting) until the daemon hands it its listener.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { UsageError } from "../platform/config.ts";
import { boundConnections } from "./connections.ts";
import { problem } from "./problem.ts";
import type { Clock } from "../platform/clock.ts";
import type { Pulse } from "../platform/tick.ts";

export interface Listening {
  readonly url: string;
  /** Answer requests with `listener` from now on (until then: 503, starting). */
  serve(listener: (req: IncomingMessage, res: ServerResponse) => unknown): void;
  /** Stop accepting, finish the requests in flight. */
  close(): Promise<void>;
}

/**
 * The API's port, taken first: a port in use is said before anything starts. Until the daemon is ready its
 * requests are answered 503 (starting). A client gets 10 s to send its request's head (cut at the next `pulse`)
 * and 30 s for the whole request, and an idle keep-alive connection is closed after 5 s: silent sockets cannot
 * pile up (Node's defaults hold them 60 to 300 s).
 */
export async function listenFirst(options: {
  readonly host: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly pulse: Pulse;
  /** For the head deadline. */
  readonly clock: Clock;
}): Promise<Listening> {
  let listener = (_req: IncomingMessage, res: ServerResponse): unknown =>
    res.writeHead(503, { "content-type": "application/problem+json", "retry-after": "1" }).end(JSON.stringify(problem(503, "healthd is starting; try again in a moment")));
  const server = createServer(
    // Node's check of headersTimeout and requestTimeout, a timer of its own, wakes an idle daemon: at its
    // default of 30 s it is the backstop for the whole request; heads are cut by boundConnections at the tick.
    { keepAliveTimeout: 5000, headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 30_000 },
    (req, res) => listener(req, res),
  );
  const stopDeadlines = boundConnections(server, options.maxConnections, options.pulse, options.clock);
  try {
    await listen(server, options.host, options.port);
  } catch (error) {
    stopDeadlines();
    const e = error as NodeJS.ErrnoException;
    if (e.code === "EADDRINUSE") throw new UsageError(`${options.host}:${options.port} is in use; choose another --port`, { cause: e });
    if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND") throw new UsageError(`cannot listen on ${options.host}; check --host`, { cause: e });
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    serve: (next) => (listener = next),
    close: () =>
      new Promise<void>((resolve) => {
        stopDeadlines();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
