/**
 * A bound on the API's open connections that a slow client cannot fill. Node's server.maxConnections refuses
 * new connections once the bound is reached: 256 sockets that each send a header line a second (slowloris)
 * held every place until the 10 s head timeout, and /healthz went unanswered. Here a new connection at the
 * bound takes the place of the connection idle for longest: one still sending its request's head (a client
 * that means it sends it within milliseconds of connecting), or a keep-alive one between requests. A
 * connection whose request is being answered is never closed; when every place holds one, the new
 * connection is refused, as before.
 *
 * And the head's deadline: a connection that has not sent a whole request head `headMs` after connecting (or
 * after its last answer) is closed, at the daemon's tick. Node checks its headersTimeout with a timer of its
 * own (connectionsCheckingInterval), which woke an idle daemon every 2 s for connections it mostly did not have.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Clock } from "../platform/clock.ts";
import type { Pulse } from "../platform/tick.ts";

/** Answers a function that stops looking at the deadlines. */
export function boundConnections(server: Server, max: number, pulse: Pulse, clock: Clock, headMs = 10_000): () => void {
  /** Open connections, each with when it last became idle (connected, or answered a request); 0 while busy. */
  const idleSince = new Map<Socket, number>();
  const cut = () => {
    const late = clock.monotonic() - headMs;
    for (const [socket, since] of idleSince) {
      if (since !== 0 && since < late) socket.destroy();
    }
  };
  // The tick is listened to only while a connection is open: an idle daemon without clients has no deadline to keep.
  let stopCutting: (() => void) | undefined;
  let stopped = false;
  const closed = (socket: Socket) => {
    idleSince.delete(socket);
    if (idleSince.size > 0) return;
    stopCutting?.();
    stopCutting = undefined;
  };
  server.on("connection", (socket: Socket) => {
    if (idleSince.size >= max) {
      let oldest: Socket | undefined;
      let at = Infinity;
      for (const [open, since] of idleSince) {
        if (since !== 0 && since < at) [oldest, at] = [open, since];
      }
      if (!oldest) return void socket.destroy();
      oldest.destroy();
      idleSince.delete(oldest);
    }
    idleSince.set(socket, clock.monotonic());
    if (!stopped) stopCutting ??= pulse(cut);
    socket.once("close", () => closed(socket));
  });
  server.on("request", (req, res) => {
    const { socket } = req;
    if (!idleSince.has(socket)) return;
    idleSince.set(socket, 0);
    res.once("close", () => {
      if (idleSince.has(socket)) idleSince.set(socket, clock.monotonic());
    });
  });
  return () => {
    stopped = true;
    stopCutting?.();
    stopCutting = undefined;
  };
}
