/**
 * The daemon: the store, the scheduler, the recorder and the HTTP API, wired together, started and stopped
 * in order. Data flows one way: scheduler -> check controller -> recorder -> store -> events.
 */
import { EventEmitter } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bearerCheck, isLoopback } from "./http/access.ts";
import { createListener } from "./http/router.ts";
import { serviceRoutes } from "./http/services.ts";
import { systemRoutes } from "./http/system.ts";
import { runCheck } from "./checks/http.ts";
import { UsageError } from "./config.ts";
import type { Logger } from "./log.ts";
import { createMetrics } from "./metrics.ts";
import { Delivery } from "./notify/delivery.ts";
import { ntfyPublisher, type NtfyOptions, type PublishResult } from "./notify/ntfy.ts";
import { Recorder, type Recorded } from "./recorder.ts";
import { pushRoutes } from "./http/push.ts";
import { notificationCounts, type NotificationRow } from "./store/notifications.ts";
import { Retention } from "./retention.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import type { Store } from "./store/db.ts";
import { startCheckpointer } from "./store/checkpointer.ts";
import { openMigrated } from "./store/migrate.ts";
import { scheduledServices, type ScheduleChange, type ScheduledService } from "./store/servers.ts";
import { version } from "./version.ts";

export interface DaemonOptions {
  /** SQLite file; created and migrated when needed. */
  readonly db: string;
  readonly host: string;
  /** 0 picks a free port; `Daemon.url` tells which. */
  readonly port: number;
  readonly log: Logger;
  /** At most this many checks run at once. Default 256. */
  readonly maxInFlight?: number;
  /** Where notifications go. */
  readonly ntfy: NtfyOptions & {
    /** The topic of services without `notifyTopic`; none means such notifications are kept as unsent. */
    readonly topic?: string | undefined;
  };
  /** First retry delay of a failed notification. Default 1000 ms. */
  readonly notifyRetryBaseMs?: number;
  /** How often to look for changes other processes made to the database. Default 1000 ms. */
  readonly watchMs?: number;
  /** Entries older than this many days are deleted. Default 30. */
  readonly retentionDays?: number;
  /** Hourly rollups older than this many days are deleted. Default 365. */
  readonly rollupRetentionDays?: number;
  /** When set, every endpoint but GET /healthz needs `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** Listen on a non-loopback address without a token (refused otherwise). Default false. */
  readonly allowNoToken?: boolean;
}

export interface DaemonEvents {
  /** A PUT or DELETE changed which checks run; the scheduler has already followed it. */
  "schedule:changed": [ScheduleChange];
  /** A check started, `lagMs` after its planned time. */
  "check:started": [ScheduledService, number];
  /** A check's entry and the service's new state are committed to the store. */
  "check:done": [Recorded];
  /** A notification was delivered to ntfy. */
  "notify:sent": [NotificationRow, PublishResult];
  /** A delivery attempt failed (it is retried, or marked failed when ntfy refused the message). */
  "notify:failed": [NotificationRow, PublishResult];
}

export interface Daemon {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly store: Store;
  readonly retention: Retention;
  readonly events: EventEmitter<DaemonEvents>;
  /** Stop accepting requests, finish those in flight, close the database. */
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { log } = options;
  if (options.token === undefined && !isLoopback(options.host)) {
    if (!options.allowNoToken) {
      throw new UsageError(
        `refusing to listen on ${options.host} without a token: anyone who reaches it could change your checks. ` +
          "Set one with --token, --token-file or HEALTHD_TOKEN (clients send Authorization: Bearer <token>), " +
          "or pass --allow-no-token if something in front of healthd already guards it",
      );
    }
    log.warn(`LISTENING ON ${options.host} WITHOUT A TOKEN: anyone who can reach this port can change and delete checks`);
  }
  let opened: Awaited<ReturnType<typeof openMigrated>>;
  try {
    opened = await openMigrated(options.db);
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
  const { store } = opened;
  for (const name of opened.applied) log.info("applied migration", { name });
  const checkpointer = startCheckpointer(store, log.child({ part: "store" }));

  const events = new EventEmitter<DaemonEvents>();
  const defaultTopic = options.ntfy.topic ?? null;
  if (defaultTopic === null) {
    log.warn("no ntfy topic configured: notifications of services without notifyTopic are kept as unsent (set --ntfy-topic)");
  }
  const publisher = ntfyPublisher(options.ntfy);
  const delivery = new Delivery(store, publisher, {
    log: log.child({ part: "notify" }),
    retryBaseMs: options.notifyRetryBaseMs,
    onAttempt: (row, result) => events.emit(result.ok ? "notify:sent" : "notify:failed", row, result),
  });
  const recorder = new Recorder(store, {
    log: log.child({ part: "recorder" }),
    defaultTopic,
    onWriteFailed: () => metrics.storeWriteFailed(),
    onDropped: (count) => metrics.resultsDropped(count),
    onRecorded: (batch) => {
      for (const recorded of batch) events.emit("check:done", recorded);
      if (batch.some((r) => r.notify !== null)) delivery.wake();
    },
  });
  // The metrics read the scheduler only when scraped, so they can be made before it.
  const metrics = createMetrics({
    services: () => scheduler.services(),
    state: (key) => recorder.state(key),
    inFlight: () => scheduler.inFlight,
    notifications: () => notificationCounts(store),
    storeWritable: () => recorder.writeError === null,
  });
  const scheduler = new Scheduler({
    log: log.child({ part: "scheduler" }),
    maxInFlight: options.maxInFlight,
    run: async (service, signal) => {
      const outcome = await runCheck(service.check, { signal });
      if (signal.aborted) return; // stopping: an interrupted check says nothing about the service
      metrics.checked(outcome);
      recorder.push(service, outcome);
    },
    onStart: (service, lagMs) => {
      metrics.started(lagMs);
      events.emit("check:started", service, lagMs);
    },
    onSkip: () => metrics.skipped(),
  });
  scheduler.replaceAll(scheduledServices(store), { soon: false });
  log.info("scheduled", { services: scheduler.size });
  delivery.wake(); // what was pending when the daemon last stopped

  // Another process (healthd apply) may change the same file. SQLite's data_version moves only when another
  // connection commits, so polling it is cheap; on a change the whole schedule is reconciled, which keeps
  // unchanged services on their phase.
  let dataVersion = store.sqlite.pragma("data_version", { simple: true });
  const watcher = setInterval(() => {
    const version = store.sqlite.pragma("data_version", { simple: true });
    if (version === dataVersion) return;
    dataVersion = version;
    const services = scheduledServices(store);
    const keep = new Set(services.map((s) => s.key));
    recorder.forget(scheduler.services().filter((s) => !keep.has(s.key)).map((s) => s.key));
    scheduler.replaceAll(services);
  }, options.watchMs ?? 1000);

  const retention = new Retention(store, {
    entriesDays: options.retentionDays ?? 30,
    rollupDays: options.rollupRetentionDays ?? 365,
    log: log.child({ part: "retention" }),
    onBatch: (ms, deleted) => metrics.retentionBatch(ms, deleted),
  });
  retention.start();

  const scheduleChanged = (change: ScheduleChange) => {
    scheduler.remove(change.stopped);
    recorder.forget(change.stopped);
    scheduler.upsert(scheduledServices(store, change.started));
    events.emit("schedule:changed", change);
  };
  const routes = [
    ...serviceRoutes({ store, now: Date.now, scheduleChanged }),
    ...pushRoutes(publisher, version),
    ...systemRoutes(version, metrics, () => {
      const error = recorder.writeError;
      return error ? [`cannot store check results (${error.message}); checks go on, results wait for a retry`] : [];
    }),
  ];
  /** Stop everything but the HTTP server, in the order data flows: nothing is written after its store closes. */
  const stopWork = async () => {
    clearInterval(watcher);
    await retention.stop();
    await scheduler.stop();
    recorder.flushAll();
    await delivery.stop();
    await publisher.close();
    await checkpointer.stop();
    await store.close();
  };

  const listener = createListener(routes, log.child({ part: "http" }), { authorize: bearerCheck(options.token) });
  const server = createServer({ keepAliveTimeout: 5000 }, listener);
  try {
    await listen(server, options.host, options.port);
  } catch (error) {
    await stopWork();
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
    retention,
    events,
    stop: () =>
      (stopping ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await stopWork();
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
