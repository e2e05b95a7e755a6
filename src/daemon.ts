/**
 * The daemon: the store, the HTTP API and (in their issues) the scheduler and the notifier, wired together,
 * started and stopped in order.
 */
import { EventEmitter } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createListener } from "./http/router.ts";
import { serviceRoutes } from "./http/services.ts";
import { systemRoutes } from "./http/system.ts";
import type { Logger } from "./log.ts";
import { openStore, type Store } from "./store/db.ts";
import { migrate } from "./store/migrate.ts";
import type { ScheduleChange } from "./store/servers.ts";
import { UsageError } from "./config.ts";
import { version } from "./version.ts";

export interface DaemonOptions {
  /** SQLite file; created and migrated when needed. */
  readonly db: string;
  readonly host: string;
  /** 0 picks a free port; `Daemon.url` tells which. */
  readonly port: number;
  readonly log: Logger;
}

export interface DaemonEvents {
  "schedule:changed": [ScheduleChange];
}

export interface Daemon {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly store: Store;
  readonly events: EventEmitter<DaemonEvents>;
  /** Stop accepting requests, finish those in flight, close the database. */
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { log } = options;
  const store = openStore(options.db);
  const report = await migrate(store);
  if (!report.ok) {
    await store.close();
    throw new UsageError(report.error.message, { cause: report.error });
  }
  for (const name of report.applied) log.info("applied migration", { name });

  const events = new EventEmitter<DaemonEvents>();
  const routes = [
    ...serviceRoutes({
      store,
      now: Date.now,
      scheduleChanged: (change) => events.emit("schedule:changed", change),
    }),
    ...systemRoutes(version),
  ];
  const server = createServer({ keepAliveTimeout: 5000 }, createListener(routes, log.child({ part: "http" })));
  try {
    await listen(server, options.host, options.port);
  } catch (error) {
    await store.close();
    const e = error as NodeJS.ErrnoException;
    if (e.code === "EADDRINUSE") throw new UsageError(`${options.host}:${options.port} is in use; choose another --port`, { cause: e });
    if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND") throw new UsageError(`cannot listen on ${options.host}; check --host`, { cause: e });
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  log.info("listening", { url, db: options.db, version });

  let stopping: Promise<void> | undefined;
  return {
    url,
    store,
    events,
    stop: () =>
      (stopping ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await store.close();
        log.info("stopped");
      })()),
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
