/**
 * The daemon: the HTTP API, the store, this node of the cluster, the checks it runs and the delivery of
 * notifications, started and stopped in order. Data flows one way: scheduler -> check controller -> recorder
 * -> store (which asks the policy) -> events. Start-up is a few steps, in the order a failure should be met:
 * the port (a port in use fails before anything runs), the database, the cluster, then the checks.
 */
import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { Checking } from "./checking.ts";
import { systemClock, type Clock } from "./clock.ts";
import { ClusterNode } from "./cluster/node.ts";
import { defaults, UsageError } from "./config.ts";
import { authenticator, isLoopback, type Access } from "./http/access.ts";
import { alertingRoutes } from "./http/alerting.ts";
import { announcementRoutes } from "./http/announcements.ts";
import { reportRoutes } from "./http/reports.ts";
import { clusterRoutes } from "./http/nodes.ts";
import { openApiDocument } from "./http/openapi.ts";
import { pingRoutes, type PingBuckets } from "./http/ping.ts";
import { pushRoutes } from "./http/push.ts";
import { createListener, type Route } from "./http/router.ts";
import { serviceRoutes } from "./http/services.ts";
import { StatusViews, statusRoutes } from "./http/status.ts";
import { sessionRoutes, signInPage } from "./http/session.ts";
import { tokenRoutes } from "./http/tokens.ts";
import { listenFirst } from "./http/server.ts";
import { systemRoutes } from "./http/system.ts";
import type { Logger } from "./log.ts";
import { createMetrics } from "./metrics.ts";
import type { Entry, ScheduleChange, ScheduledService } from "./model.ts";
import type { IncidentChange } from "./batch.ts";
import { Delivery, type Outcome } from "./notify/delivery.ts";
import { ChannelDirectory } from "./notify/channels.ts";
import { channelRoutes } from "./http/channels.ts";
import type { SendResult } from "./notify/outgoing.ts";
import { ntfyPublisher, type NtfyOptions } from "./notify/ntfy.ts";
import { policy } from "./policy/index.ts";
import { duration } from "./policy/message.ts";
import type { Recorded } from "./recorder.ts";
import { pingResuming, provision, trustedProxies } from "./pinging.ts";
import { Retention } from "./retention.ts";
import { shippedBootstrap, type Bootstrap } from "./domains/rdap.ts";
import { DomainWatcher } from "./domains/watcher.ts";
import { openStore } from "./store/open.ts";
import type { Notification, Store } from "./store/store.ts";
import { Alarm, Tick, type SharedTick } from "./tick.ts";
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
  /** A delivery still failing this long after its notification was written is given up. Default 24 h. */
  readonly notifyGiveUpAfterMs?: number;
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
  /** What the time is. Default the system's. */
  readonly clock?: Clock;
  /** Which RDAP server answers for each TLD (--rdap-bootstrap). Default IANA's file, shipped with healthd. */
  readonly rdapBootstrap?: Bootstrap;
  /** Where notifications of services that name no channel go (serve --channel); shared with the cluster. Default: ntfy. */
  readonly channels?: readonly string[];
  /** Where people reach this daemon (serve --public-url), for the status page link in notifications. */
  readonly publicUrl?: string;
  /** Peers whose X-Forwarded-For and X-Forwarded-Proto a ping's stored address and scheme come from (serve --trust-proxy), as CIDRs. Default none. */
  readonly trustProxy?: readonly string[];
  /** The environment `${NAME}`s in channels are read from. Default process.env. */
  readonly env?: NodeJS.ProcessEnv;
}

export interface DaemonEvents {
  /** A PUT or DELETE changed which checks run; the scheduler has already followed it. */
  "schedule:changed": [ScheduleChange];
  /** A check started, `lagMs` after its planned time. */
  "check:started": [ScheduledService, number];
  /** A check's entry and the service's new state are committed to the store. */
  "check:done": [CheckDone];
  /** A notification was delivered to a channel (the row says which). */
  "notify:sent": [Notification, SendResult];
  /** A delivery attempt failed (it is retried, given up, or marked failed when the destination refused it). */
  "notify:failed": [Notification, SendResult, Outcome];
}

/** A committed check with its entry (results folded during a store outage have none and are not told). */
export type CheckDone = Recorded & { readonly entry: Entry };

export interface Daemon {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly store: Store;
  readonly retention: Retention;
  /** What looks up the registrations of the checks' domains (domainWarnDays). */
  readonly domains: DomainWatcher;
  readonly events: EventEmitter<DaemonEvents>;
  /** This node in the cluster of daemons sharing the database. */
  readonly cluster: ClusterNode;
  /** Stop accepting requests, finish those in flight, close the database. */
  stop(): Promise<void>;
}

export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  refuseExposure(options);
  const tick = new Tick();
  const http = await listenFirst({ host: options.host, port: options.port, maxConnections: options.maxConnections ?? defaults.maxConnections, pulse: tick.on });
  let store: Store;
  try {
    store = await openDatabase(options);
  } catch (error) {
    await http.close();
    throw error;
  }
  let running: Running;
  try {
    running = await startWork(store, tick, options);
  } catch (error) {
    await store.close();
    await http.close();
    throw error;
  }
  http.serve(
    createListener(running.routes, options.log.child({ part: "http" }), {
      authenticate: running.access.authenticate,
      signIn: (next) => signInPage(401, next),
    }),
  );
  options.log.info("listening", { url: http.url, db: store.location, version });
  options.log.info(`open ${http.url}/status to see every service`);

  let stopping: Promise<void> | undefined;
  return {
    url: http.url,
    store,
    retention: running.retention,
    domains: running.domains,
    events: running.events,
    cluster: running.cluster,
    stop: () =>
      (stopping ??= (async () => {
        await http.close();
        await running.stop();
        options.log.info("stopped");
      })()),
  };
}

/** Anyone who reaches a non-loopback address could change the checks: a token is needed, unless waived. */
function refuseExposure(options: DaemonOptions): void {
  if (options.token !== undefined || isLoopback(options.host)) return;
  if (!options.allowNoToken) {
    throw new UsageError(
      `refusing to listen on ${options.host} without a token: anyone who could reach it could change your checks. ` +
        "Set one with --token, --token-file or HEALTHD_TOKEN (clients send Authorization: Bearer <token>), " +
        "or pass --allow-no-token if something in front of healthd already guards it",
    );
  }
  options.log.warn(`LISTENING ON ${options.host} WITHOUT A TOKEN: anyone who can reach this port can change and delete checks`);
}

/** Open (and create, and migrate) the database, saying in one line what the migrations did. */
async function openDatabase(options: DaemonOptions): Promise<Store> {
  const { log } = options;
  try {
    return await openStore(options.db, {
      mode: "serve",
      log: log.child({ part: "store" }),
      policy,
      onMigrated: (applied) => {
        if (applied.length > 0) log.info(`applied ${applied.length} migration${applied.length === 1 ? "" : "s"}`, { last: applied.at(-1) });
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

interface Running {
  readonly routes: Route[];
  readonly access: Access;
  readonly events: EventEmitter<DaemonEvents>;
  readonly retention: Retention;
  readonly domains: DomainWatcher;
  readonly cluster: ClusterNode;
  stop(): Promise<void>;
}

/** Everything but the HTTP server, started in the order data flows; `stop` stops it in the same order. */
async function startWork(store: Store, tick: Tick, options: DaemonOptions): Promise<Running> {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const now = () => clock.now();
  const events = new EventEmitter<DaemonEvents>();

  // The default topic is the cluster's, so that any node can deliver any notification: --ntfy-topic makes it
  // the cluster's; a node started without it uses the one the cluster has. Followed on every reload.
  if (options.ntfy.topic !== undefined) await store.shareTopic(options.ntfy.topic);
  let defaultTopic = await store.clusterTopic();
  // --channel makes the cluster's default channels, as --ntfy-topic its topic.
  if (options.channels !== undefined) await store.shareChannels(options.channels.length > 0 ? options.channels : null);
  const defaultChannels = await store.clusterChannels();
  const storedChannels = new Set((await store.channels()).map((c) => c.name));
  for (const name of defaultChannels ?? []) {
    if (name !== "ntfy" && !storedChannels.has(name)) log.warn(`--channel ${name} names no channel: notifications that go there are kept unsent until it is created (PUT /channels/${name})`);
  }
  if (defaultTopic === null) log.warn("no ntfy topic configured: notifications of services without notifyTopic are kept as unsent (set --ntfy-topic)");
  else if (new URL(options.ntfy.url).origin === new URL(defaults.ntfyUrl).origin && !options.ntfy.token && options.ntfy.user === undefined) {
    log.warn(
      `notifications go to the public server ${defaults.ntfyUrl}, topic ${defaultTopic}: anyone who knows or guesses the topic can read them; ` +
        "use a long random topic, or your own ntfy server (--ntfy-url) with a token",
    );
  }

  const cluster = new ClusterNode(store, {
    name: options.node ?? hostname(),
    location: options.location ?? defaults.location,
    leaseMs: options.leaseMs ?? defaults.leaseSeconds * 1000,
    version,
    log: log.child({ part: "cluster" }),
    clock,
    tick,
  });
  const publisher = ntfyPublisher(options.ntfy);
  const statusPage = options.publicUrl === undefined ? null : new URL("status", options.publicUrl.replace(/\/?$/, "/")).toString();
  // Every channel's sends have the ntfy publisher's deadline (10 s unless a test makes it shorter).
  const channels = new ChannelDirectory({ ntfy: options.ntfy, defaultTopic: () => defaultTopic, env: options.env ?? process.env, now, timeoutMs: options.ntfy.timeoutMs });
  const delivery = new Delivery(store, {
    log: log.child({ part: "notify" }),
    instance: cluster.instance,
    clock,
    channels,
    statusPage,
    retryBaseMs: options.notifyRetryBaseMs,
    giveUpAfterMs: options.notifyGiveUpAfterMs,
    onAttempt: (row, result, outcome) => {
      metrics.deliveryAttempt(row.channel, outcome);
      if (result.ok) events.emit("notify:sent", row, result);
      else events.emit("notify:failed", row, result, outcome);
    },
  });
  const checking = new Checking(store, cluster, { clock, log, maxInFlight: options.maxInFlight, tick }, version);
  const pingBuckets: PingBuckets = new Map();
  const metrics = createMetrics(
    {
      loopDelays: tick.delays,
      services: () => checking.services(),
      facts: (key) => checking.facts.get(key),
      inFlight: () => checking.inFlight,
      notifications: () => store.notificationCounts(),
      storeWritable: () => checking.writeError === null,
      nodes: () => cluster.live,
      pingBuckets: () => pingBuckets.size,
    },
    version,
  );
  metrics.observe(checking.events);
  // What the status page and its JSON show is built again when a service changes state.
  const views = new StatusViews();
  const incidentLog = log.child({ part: "incidents" });
  checking.events.on("check:started", (service, lagMs) => events.emit("check:started", service, lagMs));
  checking.events.on("recorded", (batch, changed) => {
    if (changed) views.changed();
    for (const recorded of batch) {
      if (recorded.incident) logIncident(incidentLog, recorded.service, recorded.incident, recorded.silenced);
      if (recorded.entry) events.emit("check:done", recorded as CheckDone);
    }
    if (batch.some((r) => r.notices.length > 0)) delivery.wake();
  });

  await cluster.start(() => checking.reconcile(false));
  await checking.reconcile(false);
  log.info("scheduled", { services: checking.services().length, node: cluster.name, location: cluster.location });
  // DOWNs kept unsent for want of a topic go out once there is one (--ntfy-topic, or a notifyTopic given since).
  const requeue = async () => {
    try {
      const count = await store.requeueUnsent(defaultTopic !== null, clock.now());
      if (count === 0) return;
      log.info("notifications kept unsent now have a topic; sending them", { count });
      delivery.wake();
    } catch (error) {
      // Not worth failing a PUT or the start for: the next change or start tries again.
      log.error("cannot look for unsent notifications that now have a topic", { error });
    }
  };
  await requeue();
  delivery.wake(); // what was pending when the daemon last stopped

  // Another process (healthd apply, another node) may change the configuration (the services it changed got
  // their owners in its transaction). A change that says which services it started and stopped is followed by
  // reading those; any other by reconciling the whole schedule, which keeps unchanged services on their phase.
  const reload = coalesced(async (change) => {
    log.info(
      "the configuration changed in the database (healthd apply, or another node's API); following it",
      change ? { started: change.started.length, stopped: change.stopped.length } : {},
    );
    if (change) await checking.follow(change);
    else {
      await checking.reconcile(true);
      const topic = await store.clusterTopic();
      if (topic !== defaultTopic) log.info("another node set the cluster's default ntfy topic", { topic });
      defaultTopic = topic;
    }
    views.changed();
    if (!change || change.stopped.length > 0) cluster.rebalanceSoon();
    await requeue();
    domains.soon(change?.started);
  }, (error) => log.error("cannot read the changed configuration; the schedule stays as it was", { error }));
  const stopWatching = store.watch(reload.run, { pulse: tick.on });
  const stopProblemWatch = watchProblems(store, log, clock, tick);

  const retention = new Retention(store, {
    isHousekeeper: () => cluster.isHousekeeper(),
    entriesDays: options.retentionDays ?? 30,
    rollupDays: options.rollupRetentionDays ?? 365,
    log: log.child({ part: "retention" }),
    clock,
    onBatch: (ms, deleted) => metrics.retentionBatch(ms, deleted),
  });
  retention.start();
  const domains = new DomainWatcher(store, { bootstrap: options.rdapBootstrap ?? shippedBootstrap, node: cluster.name, clock, log: log.child({ part: "domains" }) });
  domains.start();

  /** A change made through this node's API: followed at once, before the answer is sent. */
  const scheduleChanged = async (change: ScheduleChange) => {
    views.changed();
    await checking.follow(change);
    // Services created go round the nodes; those deleted leave holes in some nodes' shares.
    if (change.stopped.length > 0) cluster.rebalanceSoon();
    if (change.started.length > 0) await requeue(); // a notifyTopic may have been given
    if (change.started.length > 0) domains.soon(change.started); // a domainWarnDays may have been given
    events.emit("schedule:changed", change);
  };
  const problems = () => {
    const error = checking.writeError;
    const writing = error ? [`cannot store check results (${error.message}); checks go on, results wait for a retry`] : [];
    return [...writing, cluster.problem(), ...store.problems(), checking.shortage()].filter((p): p is string => p !== undefined);
  };
  const pinging = { store, checking, clock, scheduleChanged };
  const access = authenticator(options.token, store, { hadTokens: await store.hasTokens(), now });
  let document: Record<string, unknown> | undefined;
  const routes: Route[] = [
    ...serviceRoutes({ store, now, scheduleChanged }),
    ...alertingRoutes({ store, now }),
    ...pushRoutes(publisher, version),
    ...pingRoutes(
      {
        knows: (pingKey) => checking.heartbeat(pingKey) !== undefined,
        ping: (pingKey, ping, at) => pingResuming(pinging, pingKey, ping, at),
        pingKeyOf: (server, service) => checking.pingKeyOf(server, service),
        serverOf: (pingKey) => store.serverByPingKey(pingKey),
        provision: (serverId, serviceId) => provision(pinging, serverId, serviceId),
        trusted: trustedProxies(options.trustProxy ?? []),
        clock,
      },
      pingBuckets,
    ),
    ...statusRoutes({ store, version, public: options.publicStatus ?? false, now, views, publicUrl: options.publicUrl ?? null }),
    ...announcementRoutes({ store, now, changed: () => views.changed() }),
    ...reportRoutes({ store, now }),
    ...clusterRoutes({ store, cluster, now }),
    ...tokenRoutes({ store, now }),
    ...channelRoutes({
      store, channels, now, statusPage,
      ntfy: { url: options.ntfy.url, topic: () => defaultTopic, token: Boolean(options.ntfy.token ?? options.ntfy.password) },
    }),
    ...sessionRoutes({ store, access, now }),
    // The OpenAPI document describes the whole table, its own route included: made once, when first asked.
    ...systemRoutes(version, metrics, problems, () => (document ??= openApiDocument(version, routes))),
  ];
  return {
    routes,
    access,
    events,
    retention,
    domains,
    cluster,
    // In the order data flows: nothing is written after its store closes.
    async stop() {
      stopWatching();
      stopProblemWatch();
      await reload.settled();
      await retention.stop();
      await domains.stop();
      await checking.stop();
      // No check starts here any more, and the last results are stored: the others take over at once.
      await cluster.stop();
      await delivery.stop();
      await channels.close();
      await publisher.close();
      await store.close();
    },
  };
}

/**
 * Changes followed one at a time by `work`: those that come while it runs are merged and followed once after
 * it. A change that does not say what it changed (undefined) stands for any.
 */
function coalesced(work: (change: ScheduleChange | undefined) => Promise<void>, onError: (error: unknown) => void) {
  let running: Promise<void> | undefined;
  let pending: ScheduleChange | "any" | undefined;
  const merge = (a: typeof pending, b: ScheduleChange | undefined): typeof pending =>
    a === "any" || b === undefined ? "any" : a === undefined ? b : { started: [...a.started, ...b.started], stopped: [...a.stopped, ...b.stopped] };
  const start = (): void => {
    const next = pending;
    pending = undefined;
    running = work(next === "any" ? undefined : next)
      .catch(onError)
      .finally(() => {
        running = undefined;
        if (pending !== undefined) start();
      });
  };
  const run = (change?: ScheduleChange): void => {
    pending = merge(pending, change);
    if (!running) start();
  };
  return { run, settled: async () => { while (running) await running; } };
}

/**
 * What is wrong with the database without stopping it (its file deleted, say) is reported on /healthz when
 * asked; this says it in the log as soon as it is seen, once, and again when it is over.
 */
function watchProblems(store: Store, log: Logger, clock: Clock, tick: SharedTick): () => void {
  let known = new Set<string>();
  // Every five seconds is soon enough for a log line, up to two seconds early with a wake-up that comes anyway.
  const alarm = new Alarm(clock, () => {
    const now = new Set(store.problems());
    for (const problem of now) if (!known.has(problem)) log.error("the database needs attention", { problem });
    for (const problem of known) if (!now.has(problem)) log.info("the database problem is over", { problem });
    known = now;
    arm();
  }, tick);
  const arm = () => {
    const now = clock.now();
    alarm.set(now + 5000, now + 3000);
  };
  arm();
  return () => alarm.clear();
}

/** Every incident opened and closed goes to the log, with or without ntfy. */
function logIncident(log: Logger, service: ScheduledService, incident: IncidentChange, silenced: boolean): void {
  const fields = { server: service.serverId, service: service.serviceId, incident: incident.id, error: incident.error };
  if (incident.opened) log.warn("incident opened", { ...fields, ...(silenced ? { silenced: true } : {}) });
  if (incident.closedAt !== null) {
    // Down for as long as the RECOVERED says: from the first failure, not from when the incident opened.
    log.info("incident closed", { ...fields, failures: incident.failures, duration: duration(incident.closedAt - incident.failingSince) });
  }
}
