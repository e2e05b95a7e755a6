/**
 * The daemon: the store, the scheduler, the recorder and the HTTP API, wired together, started and stopped
 * in order. Data flows one way: scheduler -> check controller -> recorder -> store -> events.
 */
import { EventEmitter } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bearerCheck, isLoopback } from "./http/access.ts";
import { boundConnections } from "./http/connections.ts";
import { alertingRoutes } from "./http/alerting.ts";
import { openApiDocument } from "./http/openapi.ts";
import { createListener, type Route } from "./http/router.ts";
import { serviceRoutes } from "./http/services.ts";
import { StatusViews, statusRoutes } from "./http/status.ts";
import { systemRoutes } from "./http/system.ts";
import { runCheck } from "./checks/http.ts";
import { defaults, UsageError } from "./config.ts";
import type { Logger } from "./log.ts";
import { createMetrics, type ServiceFacts } from "./metrics.ts";
import { Delivery } from "./notify/delivery.ts";
import { ntfyPublisher, type NtfyOptions, type PublishResult } from "./notify/ntfy.ts";
import { Recorder, type Recorded } from "./recorder.ts";
import { pushRoutes } from "./http/push.ts";
import type { Entry, ScheduleChange, ScheduledService } from "./model.ts";
import { Retention } from "./retention.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import { Shortages } from "./shortage.ts";
import { openStore } from "./store/open.ts";
import type { IncidentChange, Notification, Store } from "./store/store.ts";
import { duration } from "./notify/message.ts";
import { ClusterNode } from "./cluster/node.ts";
import { clusterRoutes } from "./http/nodes.ts";
import { hostname } from "node:os";
import { periodOf } from "./scheduler/plan.ts";
import { version } from "./version.ts";

export interface DaemonOptions {
  /** A SQLite file or a PostgreSQL URL; created (a file) and migrated when needed. */
  readonly db: string;
  readonly host: string;
  /** 0 picks a free port; `Daemon.url` tells which. */
  readonly port: number;
  readonly log: Logger;
  /** At most this many checks run at once. Default 256. */
  readonly maxInFlight?: number;
  /** At most this many API connections are open at once. Default 256. */
  readonly maxConnections?: number;
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
  /** /status, /status.json and /badges answer without the token, and show no URL or error text. Default false. */
  readonly publicStatus?: boolean;
  /** This node's name among the nodes sharing the database. Default: the host name. */
  readonly node?: string;
  /** Where this node probes from. Default "default". */
  readonly location?: string;
  /** A node not heard from for this long is dead and its checks are taken over. Default 15 s. */
  readonly leaseMs?: number;
}

export interface DaemonEvents {
  /** A PUT or DELETE changed which checks run; the scheduler has already followed it. */
  "schedule:changed": [ScheduleChange];
  /** A check started, `lagMs` after its planned time. */
  "check:started": [ScheduledService, number];
  /** A check's entry and the service's new state are committed to the store. */
  "check:done": [CheckDone];
  /** A notification was delivered to ntfy. */
  "notify:sent": [Notification, PublishResult];
  /** A delivery attempt failed (it is retried, or marked failed when ntfy refused the message). */
  "notify:failed": [Notification, PublishResult];
}

/** A committed check with its entry (results folded during a store outage have none and are not told). */
export type CheckDone = Recorded & { readonly entry: Entry };

export interface Daemon {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly store: Store;
  readonly retention: Retention;
  readonly events: EventEmitter<DaemonEvents>;
  /** This node in the cluster of daemons sharing the database. */
  readonly cluster: ClusterNode;
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
  let store: Store;
  try {
    store = await openStore(options.db, {
      mode: "serve",
      log: log.child({ part: "store" }),
      onMigrated: (applied) => applied.forEach((name) => log.info("applied migration", { name })),
    });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }

  const events = new EventEmitter<DaemonEvents>();
  // The default topic is the cluster's, so that any node can deliver any notification: --ntfy-topic makes it
  // the cluster's; a node started without it uses the one the cluster has. Followed on every reload.
  if (options.ntfy.topic !== undefined) await store.shareTopic(options.ntfy.topic);
  let defaultTopic = await store.clusterTopic();
  if (defaultTopic === null) {
    log.warn("no ntfy topic configured: notifications of services without notifyTopic are kept as unsent (set --ntfy-topic)");
  }
  const publisher = ntfyPublisher(options.ntfy);
  const cluster = new ClusterNode(store, {
    name: options.node ?? hostname(),
    location: options.location ?? defaults.location,
    leaseMs: options.leaseMs ?? defaults.leaseSeconds * 1000,
    version,
    log: log.child({ part: "cluster" }),
    onOwnership: () => reconcile(false),
  });
  const delivery = new Delivery(store, publisher, {
    log: log.child({ part: "notify" }),
    instance: cluster.instance,
    defaultTopic: () => defaultTopic,
    retryBaseMs: options.notifyRetryBaseMs,
    onAttempt: (row, result) => events.emit(result.ok ? "notify:sent" : "notify:failed", row, result),
  });
  // What was last seen of each service (the state the store decided, the last check): a cache for /metrics,
  // never an authority.
  const facts = new Map<number, ServiceFacts>([...(await store.serviceStates())].map(([key, state]) => [key, { state }]));
  const incidentLog = log.child({ part: "incidents" });
  const views = new StatusViews();
  const recorder = new Recorder(store, {
    log: log.child({ part: "recorder" }),
    location: cluster.location,
    onWriteFailed: () => metrics.storeWriteFailed(),
    onDropped: (count) => metrics.resultsDropped(count),
    onRecorded: (batch) => {
      for (const recorded of batch) {
        const known = facts.get(recorded.service.key);
        if (known?.state?.status !== recorded.state.status || recorded.incident) views.changed();
        facts.set(recorded.service.key, { ...known, state: recorded.state });
        if (recorded.incident) logIncident(incidentLog, recorded.service, recorded.incident, recorded.silenced);
        if (recorded.entry) events.emit("check:done", recorded as CheckDone);
      }
      if (batch.some((r) => r.notices.length > 0)) delivery.wake();
    },
  });
  // Every check says which healthd and which location asks (a site may answer one location differently).
  const userAgent = `healthd/${version} (location ${cluster.location})`;
  const shortages = new Shortages(log.child({ part: "scheduler" }));
  // The metrics read the scheduler only when scraped, so they can be made before it.
  const metrics = createMetrics({
    services: () => scheduler.services(),
    facts: (key) => facts.get(key),
    inFlight: () => scheduler.inFlight,
    notifications: () => store.notificationCounts(),
    storeWritable: () => recorder.writeError === null,
    nodes: () => cluster.live,
  }, version);
  const scheduler = new Scheduler({
    log: log.child({ part: "scheduler" }),
    maxInFlight: options.maxInFlight,
    run: async (service, signal) => {
      const outcome = await runCheck(service.check, { signal, userAgent });
      if (signal.aborted) return; // stopping: an interrupted check says nothing about the service
      if (!outcome.ok && outcome.shortage) {
        shortages.seen(outcome.shortage, outcome.error);
        metrics.shortage(outcome.shortage);
        return;
      }
      metrics.checked(outcome);
      facts.set(service.key, {
        ...facts.get(service.key),
        lastCheckedAt: outcome.checkedAt,
        latencyMs: outcome.latencyMs,
        ...(outcome.certExpiresAt === undefined ? {} : { certExpiresAt: outcome.certExpiresAt }),
      });
      recorder.push(service, outcome);
    },
    onStart: (service, lagMs) => {
      metrics.started(lagMs);
      events.emit("check:started", service, lagMs);
    },
    onSkip: () => metrics.skipped(),
    mayStart: (service) => cluster.mayRun(service.check.locations),
  });
  // What this node runs: the checks it owns, read again whenever ownership or the configuration changes. A
  // check new to this node runs soon when it is overdue (never checked, or it missed a run: its node died);
  // one handed over by a live node keeps its phase, so it is not run twice in an interval.
  let reconciling = Promise.resolve();
  const reconcile = (configChanged: boolean) =>
    (reconciling = reconciling
      .then(async () => {
        const owned = await store.scheduledServices(cluster.name);
        const keep = new Set(owned.map((s) => s.key));
        for (const s of scheduler.services()) if (!keep.has(s.key)) facts.delete(s.key);
        const now = Date.now();
        const overdue = (s: ScheduledService) => s.lastCheckedAt == null || now - s.lastCheckedAt > 1.5 * periodOf(s.check, now);
        scheduler.replaceAll(owned, { soon: (s, known) => (known ? configChanged : overdue(s)) });
      })
      .catch((error: unknown) => log.error("cannot read the checks this node runs; the schedule stays as it was", { error })));
  try {
    await cluster.start();
  } catch (error) {
    await store.close();
    throw error;
  }
  await reconcile(false);
  log.info("scheduled", { services: scheduler.size, node: cluster.name, location: cluster.location });
  // DOWNs kept unsent for want of a topic go out now that there is one (--ntfy-topic, or a notifyTopic given
  // since); then what was pending when the daemon last stopped.
  const requeue = async () => {
    try {
      const count = await store.requeueUnsent(defaultTopic !== null, Date.now());
      if (count > 0) log.info("notifications kept unsent now have a topic; sending them", { count });
    } catch (error) {
      // Not worth failing a PUT or the start for: the next change or start tries again.
      log.error("cannot look for unsent notifications that now have a topic", { error });
    }
    delivery.wake();
  };
  await requeue();

  // Another process (healthd apply, another node) may change the configuration. On a change the whole
  // schedule is reconciled, which keeps unchanged services on their phase.
  let reloading = Promise.resolve();
  const reload = () => {
    reloading = reloading
      .then(async () => {
        await cluster.rebalance(); // services created or deleted elsewhere get or lose their owners
        await reconcile(true);
        views.changed();
        const topic = await store.clusterTopic();
        if (topic !== defaultTopic) log.info("another node set the cluster's default ntfy topic", { topic });
        defaultTopic = topic;
        await requeue();
      })
      .catch((error: unknown) => log.error("cannot read the changed configuration; the schedule stays as it was", { error }));
  };
  const stopWatching = store.watch(reload, { everyMs: options.watchMs ?? 1000 });

  // What is wrong with the database without stopping it (its file deleted, say) is reported on /healthz when
  // asked; this says it in the log as soon as it is seen, once, and again when it is over.
  let known = new Set<string>();
  const problemWatch = setInterval(() => {
    const now = new Set(store.problems());
    for (const problem of now) if (!known.has(problem)) log.error("the database needs attention", { problem });
    for (const problem of known) if (!now.has(problem)) log.info("the database problem is over", { problem });
    known = now;
  }, 5000);

  const retention = new Retention(store, {
    isHousekeeper: () => cluster.isHousekeeper(),
    entriesDays: options.retentionDays ?? 30,
    rollupDays: options.rollupRetentionDays ?? 365,
    log: log.child({ part: "retention" }),
    onBatch: (ms, deleted) => metrics.retentionBatch(ms, deleted),
  });
  retention.start();

  const scheduleChanged = async (change: ScheduleChange) => {
    views.changed();
    scheduler.remove(change.stopped);
    for (const key of change.stopped) facts.delete(key);
    await cluster.rebalance().catch((error: unknown) => log.error("cannot rebalance the checks after a change", { error }));
    await reconcile(true);
    if (change.started.length > 0) await requeue(); // a notifyTopic may have been given
    events.emit("schedule:changed", change);
  };
  const problems = () => {
    const error = recorder.writeError;
    const writing = error ? [`cannot store check results (${error.message}); checks go on, results wait for a retry`] : [];
    const shortage = shortages.problem();
    const lease = cluster.problem();
    return [...writing, ...(lease ? [lease] : []), ...store.problems(), ...(shortage ? [shortage] : [])];
  };
  let document: Record<string, unknown> | undefined;
  const routes: Route[] = [
    ...serviceRoutes({ store, now: Date.now, scheduleChanged }),
    ...alertingRoutes({ store, now: Date.now }),
    ...pushRoutes(publisher, version),
    ...statusRoutes({ store, version, public: options.publicStatus ?? false, now: Date.now, views }),
    // The OpenAPI document describes the whole table, its own route included: made once, when first asked.
    ...clusterRoutes({ store, cluster, now: Date.now }),
    ...systemRoutes(version, metrics, problems, () => (document ??= openApiDocument(version, routes))),
  ];
  /** Stop everything but the HTTP server, in the order data flows: nothing is written after its store closes. */
  const stopWork = async () => {
    stopWatching();
    clearInterval(problemWatch);
    await reloading;
    await retention.stop();
    await reconciling;
    await scheduler.stop();
    await recorder.flushAll();
    // No check starts here any more, and the last results are stored: the others take over at once.
    await cluster.stop();
    await delivery.stop();
    await publisher.close();
    await store.close();
  };

  const listener = createListener(routes, log.child({ part: "http" }), { authorize: bearerCheck(options.token) });
  // A client gets 10 s to send its request's head and 30 s for the whole request, and an idle keep-alive
  // connection is closed after 5 s: silent sockets cannot pile up (Node's defaults hold them 60 to 300 s).
  const server = createServer(
    { keepAliveTimeout: 5000, headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 2_000 },
    listener,
  );
  boundConnections(server, options.maxConnections ?? defaults.maxConnections);
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
    cluster,
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

/** Every incident opened and closed goes to the log, with or without ntfy. */
function logIncident(log: Logger, service: ScheduledService, incident: IncidentChange, silenced: boolean): void {
  const fields = { server: service.serverId, service: service.serviceId, incident: incident.id, error: incident.error };
  if (incident.opened) log.warn("incident opened", { ...fields, ...(silenced ? { silenced: true } : {}) });
  if (incident.closedAt !== null) {
    log.info("incident closed", { ...fields, failures: incident.failures, duration: duration(incident.closedAt - incident.openedAt) });
  }
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
