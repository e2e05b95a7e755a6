/**
 * A TCP proxy on 127.0.0.1 in front of a real server (PostgreSQL), which a test can cut and restore: the way
 * to make a database "go away" while the daemon runs, without stopping a server other tests share.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { TestContext } from "node:test";

export interface TcpProxy {
  readonly port: number;
  /** Refuse new connections and drop every open one. */
  cut(): Promise<void>;
  /** Accept connections again, on the same port. */
  restore(): Promise<void>;
}

export async function tcpProxy(t: TestContext, to: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    const s = createServer((client) => {
      const upstream = createConnection(to);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };
  const cut = async () => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  t.after(cut);
  return { port, cut, restore: listen };
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(proxy.port);
  return u.toString();
}
