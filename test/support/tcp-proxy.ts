/**
 * A TCP proxy on 127.0.0.1 in front of a real server (PostgreSQL), which a test can turn hostile: the way to
 * make a database "go away" (or a pooler in front of it misbehave) while the daemon runs, without stopping a
 * server other tests share.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * How the proxy treats connections:
 * - pass: forwards both ways (after `delayMs` each way, when set);
 * - refuse: not listening, every open connection dropped (the database is gone);
 * - close: accepts and closes at once (HAProxy or PgBouncer whose backend is down);
 * - blackhole: accepts and never answers.
 */
export type ProxyMode = "pass" | "refuse" | "close" | "close-late" | "blackhole";

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted since the proxy started, whatever became of them. */
  readonly accepted: number;
  /** Refuse new connections and drop every open one. */
  cut(): Promise<void>;
  /** Accept connections again, on the same port, and pass them on. */
  restore(): Promise<void>;
  /** Switch to `mode`; every open connection is dropped unless the mode is pass. */
  set(mode: ProxyMode, options?: { delayMs?: number }): Promise<void>;
}

/** `t` is a test's context, or anything that runs a function at the end (the benchmarks use it too). */
export async function tcpProxy(t: { after(fn: () => unknown): void }, to: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  let mode: ProxyMode = "pass";
  let delayMs = 0;
  let accepted = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  const forward = (from: Socket, to: Socket) =>
    from.on("data", (chunk) => {
      if (delayMs === 0) to.write(chunk);
      else setTimeout(() => to.writable && to.write(chunk), delayMs);
    });
  const listen = async () => {
    const s = createServer((client) => {
      accepted++;
      track(client);
      client.on("error", () => client.destroy());
      if (mode === "close") return void client.destroy();
      if (mode === "close-late") return void client.once("data", () => client.destroy());
      if (mode === "blackhole") return;
      const upstream = createConnection(to);
      track(upstream);
      for (const socket of [client, upstream]) {
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
        socket.on("close", () => (socket === client ? upstream : client).destroy());
      }
      forward(client, upstream);
      forward(upstream, client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  const cut = async () => {
    mode = "refuse";
    const s = server;
    server = undefined;
    dropAll();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  const set = async (next: ProxyMode, options: { delayMs?: number } = {}) => {
    if (next === "refuse") return cut();
    if (next !== "pass") dropAll();
    mode = next;
    delayMs = options.delayMs ?? 0;
    if (!server) await listen();
  };
  await listen();
  t.after(cut);
  return {
    port,
    get accepted() {
      return accepted;
    },
    cut,
    restore: () => set("pass"),
    set,
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(proxy.port);
  return u.toString();
}
