/**
 * The daemon: the HTTP API, the store, this node of the cluster, the checks it runs and the delivery of
 * notifications, started and stopped in order. Data flows one way: scheduler -> check controller -> recorder
 * -> store (which asks the policy) -> events. Start-up is a few steps, in the order a failure should be met:
 * the port (a port in use fails before anything runs), the database, the cluster, then the checks.
 */
import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { Checking } from "./runtime/checking.ts";
import { systemClock, type Clock } from "./platform/clock.ts";
import { ClusterNode } from "./runtime/cluster/node.ts";
import { defaults } from "./platform/config.ts";
import { authenticator, describeAccess, type Access } from "./http/access.ts";
import { alertingRoutes } from "./http/alerting.ts";
import { acknowledgeRoutes } from "./http/acknowledge.ts";
import { announcementRoutes } from "./http/announcements.ts";
import { statusPageRoutes } from "./http/status-pages.ts";
import { consoleRoutes } from "./http/console.ts";
import { reportRoutes } from "./http/reports.ts";
import { clusterRoutes } from "./http/nodes.ts";
import { openApiDocument } from "./http/openapi.ts";
import { healthchecksRoutes } from "./http/healthchecks-api.ts";
import { pingRoutes, type PingBuckets } from "./http/ping.ts";
import { kumaPushRoutes, type CompatContext } from "./http/kuma-push.ts";
import { gatusExternalRoutes } from "./http/gatus-external.ts";
import { pushRoutes } from "./http/push.ts";
import { createListener, type Route } from "./http/router.ts";
import { serviceRoutes } from "./http/services.ts";
import { StatusViews, statusRoutes } from "./http/status.ts";
import { ServiceMemory } from "./status/memory.ts";
import { sessionRoutes, signInPage } from "./http/session.ts";
import { tokenRoutes } from "./http/tokens.ts";
import { listenFirst } from "./http/server.ts";
import { systemRoutes } from "./http/system.ts";
import { createMetrics } from "./runtime/metrics.ts";
import type { ScheduleChange } from "./domain/model.ts";
import { Delivery } from "./notify/delivery.ts";
import { ChannelDirectory } from "./notify/channels.ts";
import { channelRoutes, sendTest } from "./http/channels.ts";
import { ntfyPublisher } from "./notify/ntfy.ts";
import { Retention } from "./runtime/retention.ts";
import { Escalator } from "./runtime/escalation.ts";
import { shippedBootstrap } from "./runtime/domain-expiry/rdap.ts";
import { DomainWatcher } from "./runtime/domain-expiry/watcher.ts";
import { pingResuming, provision, trustedProxies } from "./runtime/pinging.ts";
import type { Incident, Store } from "./store/store.ts";
import { Tick } from "./platform/tick.ts";
import { coalesced } from "./runtime/coalesced.ts";
import { logIncident, watchProblems } from "./runtime/daemon-log.ts";
import { version } from "./platform/version.ts";
import type { CheckDone, DaemonEvents, DaemonOptions } from "./daemon-options.ts";

import { openDatabase, refuseExposure } from "./daemon-setup.ts";
export type { CheckDone, DaemonEvents, DaemonOptions } from "./daemon-options.ts";

export interface Daemon {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  readonly url: string;
  readonly store: Store;
  readonly retention: Retention;
  /** What sends the escalation steps of incidents nobody acknowledged. */
  readonly escalator: Escalator;
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
  const clock = options.clock ?? systemClock;
  const tick = new Tick(clock);
  const http = await listenFirst({ host: options.host, port: options.port, maxConnections: options.maxConnections ?? defaults.maxConnections, pulse: tick.on, clock });
  let store: Store;
  try {
    store = await openDatabase(options);
  } catch (error) {
    await http.close();
    throw error;
  }
  let running: Running;
  try {
    running = await startWork(store, tick, clock, options);
  } catch (error) {
    await store.close();
    await http.close();
    throw error;
  }
  http.serve(
    createListener(running.routes, options.log.child({ part: "http" }), {
      authenticate: running.access.authenticate,
      signIn: (next) => signInPage(401, next),
      clock,
    }),
  );
  options.log.info("listening", { url: http.url, db: store.location, version });
  const access = (tokensRequired: boolean) => describeAccess({ daemonToken: options.token !== undefined, storedTokens: tokensRequired, publicStatus: options.publicStatus ?? false });
  options.log.info(`access: ${access(running.access.tokensRequired())}`);
  const signIn = running.access.tokensRequired() && !options.publicStatus ? " (sign in there with a token that may read)" : "";
  options.log.info(`open ${http.url}/status to see every service${signIn}`);

  let stopping: Promise<void> | undefined;
  return {
    url: http.url,
    store,
    retention: running.retention,
    escalator: running.escalator,
    domains: running.domains,
    events: running.events,
    cluster: running.cluster,
    stop: () =>
      (stopping ??= (async () => {
        running.closeStreams();
        await http.close();
        await running.stop();
        options.log.info("stopped");
      })()),
  };
}

interface Running {
  readonly routes: Route[];
  readonly access: Access;
  readonly events: EventEmitter<DaemonEvents>;
  readonly retention: Retention;
  readonly escalator: Escalator;
  readonly domains: DomainWatcher;
  readonly cluster: ClusterNode;
  /** End the responses that stay open (the console's events), so that the server can close. */
  closeStreams(): void;
  stop(): Promise<void>;
}

/** Everything but the HTTP server, started in the order data flows; `stop` stops it in the same order. */
async function startWork(store: Store, tick: Tick, clock: Clock, options: DaemonOptions): Promise<Running> {
  const { log } = options;
  const now = () => clock.now();
  const events = new EventEmitter<DaemonEvents>();
  // Decided from the database at each request; a switch (the first token, the last revoked) is said at once.
  const access = authenticator(options.token, store, {
    hadTokens: await store.hasTokens(),
    now,
    onChange: (tokensRequired) =>
      log.warn(`access changed: ${describeAccess({ daemonToken: options.token !== undefined, storedTokens: tokensRequired, publicStatus: options.publicStatus ?? false })}`),
  });

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
  // Links that acknowledge from a notification need --public-url; every node takes any node's (the secret is the cluster's).
  const ackSecret = await store.ackSecret();
  const ackLinks = options.publicUrl === undefined ? undefined : { publicUrl: options.publicUrl, secret: ackSecret };
  const delivery = new Delivery(store, {
    log: log.child({ part: "notify" }),
    instance: cluster.instance,
    clock,
    channels,
    statusPage,
    ackLinks,
    retryBaseMs: options.notifyRetryBaseMs,
    giveUpAfterMs: options.notifyGiveUpAfterMs,
    onAttempt: (row, result, outcome) => {
      metrics.deliveryAttempt(row.channel, outcome);
      if (result.ok) events.emit("notify:sent", row, result);
      else events.emit("notify:failed", row, result, outcome);
    },
  });
  const checking = new Checking(store, cluster, { clock, log, maxInFlight: options.maxInFlight, tick, env: options.env }, version);
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
  // What the status page and its JSON show is built again when a service changes state, from services kept in memory.
  const views = new StatusViews();
  // The console's live overview hears which servers' services changed state or configuration (null: any).
  const consoleFeed = new EventEmitter<{ changed: [readonly string[] | null] }>();
  const shown = new ServiceMemory(store, { clock, onError: (error) => log.error("cannot read the services for the status page", { error }) });
  const incidentLog = log.child({ part: "incidents" });
  checking.events.on("check:started", (service, lagMs) => events.emit("check:started", service, lagMs));
  checking.events.on("recorded", (batch, changed) => {
    shown.committed(batch.map((r) => r.service.key));
    if (changed) (views.changed(), consoleFeed.emit("changed", batch.map((r) => r.service.serverId)));
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
    shown.reload();
    if (change) await checking.follow(change);
    else {
      await checking.reconcile(true);
      const topic = await store.clusterTopic();
      if (topic !== defaultTopic) log.info("another node set the cluster's default ntfy topic", { topic });
      defaultTopic = topic;
    }
    views.changed();
    consoleFeed.emit("changed", null);
    await access.refresh(); // a token made or revoked by another process (healthd token) is said in the log now
    if (!change || change.stopped.length > 0) cluster.rebalanceSoon();
    await requeue();
    delivery.wake(); // another process may have queued notifications (healthd ack, another node's escalation)
    domains.soon(change?.started);
  }, (error) => log.error("cannot read the changed configuration; the schedule stays as it was", { error }));
  const stopWatching = store.watch(reload.run, { pulse: tick.on });
  const stopWatchingResults = store.watch(() => shown.othersStored(), { of: "entries", pulse: tick.on });
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
  const escalator = new Escalator(store, { clock, log: log.child({ part: "escalation" }), isHousekeeper: () => cluster.isHousekeeper(), onSent: () => delivery.wake() });
  escalator.start();
  const domains = new DomainWatcher(store, { bootstrap: options.rdapBootstrap ?? shippedBootstrap, node: cluster.name, clock, log: log.child({ part: "domains" }) });
  domains.start();

  /** A change made through this node's API: followed at once, before the answer is sent. */
  const scheduleChanged = async (change: ScheduleChange) => {
    shown.reload();
    views.changed();
    await checking.follow(change);
    // Services created go round the nodes; those deleted leave holes in some nodes' shares.
    if (change.stopped.length > 0) cluster.rebalanceSoon();
    if (change.started.length > 0) await requeue(); // a notifyTopic may have been given
    if (change.started.length > 0) domains.soon(change.started); // a domainWarnDays may have been given
    events.emit("schedule:changed", change);
    consoleFeed.emit("changed", null);
  };
  const problems = () => {
    const error = checking.writeError;
    const writing = error ? [`cannot store check results (${error.message}); checks go on, results wait for a retry`] : [];
    return [...writing, cluster.problem(), ...store.problems(), checking.shortage()].filter((p): p is string => p !== undefined);
  };
  const pinging = { store, checking, clock, scheduleChanged };
  let document: Record<string, unknown> | undefined;
  const compat: CompatContext = {
    pingKeyBy: (kind, value) => checking.pingKeyBy(kind, value),
    heartbeat: (pingKey) => {
      const heartbeat = checking.heartbeat(pingKey);
      return heartbeat && { serverId: heartbeat.serverId, paused: heartbeat.check.paused };
    },
    ping: (pingKey, ping, at) => checking.ping(pingKey, ping, at),
    clock,
  };
  // An acknowledgement through the API, a link or the console: said in the log, and its notification sent now.
  const acknowledged = (i: Incident) => (incidentLog.info("incident acknowledged", { server: i.serverId, service: i.serviceId, by: i.acknowledged?.by }), delivery.wake());
  const console = consoleRoutes({
    store, views, access, version, clock, log: log.child({ part: "console" }), scheduleChanged, runSoon: (key) => checking.runSoon(key), publicUrl: options.publicUrl ?? null, testChannel: (name) => sendTest({ store, channels, now, statusPage }, name),
    acknowledged,
    changed: (servers) => (views.changed(), consoleFeed.emit("changed", servers)),
    onChange: (listener) => (consoleFeed.on("changed", listener), () => consoleFeed.off("changed", listener)),
  });
  const routes: Route[] = [
    ...serviceRoutes({ store, now, scheduleChanged }),
    ...alertingRoutes({ store, now }),
    ...acknowledgeRoutes({ store, now, ackSecret, acknowledged }),
    ...pushRoutes(publisher, version),
    ...healthchecksRoutes({ store, now, scheduleChanged, authenticate: access.authenticate, publicUrl: options.publicUrl, log: log.child({ part: "http" }) }),
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
    // Other tools' push URLs: the same pings, found by the address the other tool gave the heartbeat.
    ...kumaPushRoutes(compat, pingBuckets),
    ...gatusExternalRoutes(compat, pingBuckets),
    ...statusRoutes({ store, version, public: options.publicStatus ?? false, now, views, services: shown, publicUrl: options.publicUrl ?? null }),
    ...[announcementRoutes, statusPageRoutes].flatMap((routes) => routes({ store, now, changed: () => views.changed() })),
    ...reportRoutes({ store, now }),
    ...clusterRoutes({ store, cluster, now }),
    ...tokenRoutes({ store, now, changed: () => access.refresh() }),
    ...channelRoutes({
      store, channels, now, statusPage,
      ntfy: { url: options.ntfy.url, topic: () => defaultTopic, token: Boolean(options.ntfy.token ?? options.ntfy.password) },
    }),
    ...sessionRoutes({ store, access, now }),
    ...console.routes,
    // The OpenAPI document describes the whole table, its own route included: made once, when first asked.
    ...systemRoutes(version, metrics, problems, () => (document ??= openApiDocument(version, routes))),
  ];
  return {
    routes,
    access,
    events,
    retention,
    escalator,
    domains,
    cluster,
    closeStreams: console.close,
    // In the order data flows: nothing is written after its store closes.
    async stop() {
      stopWatching();
      stopWatchingResults();
      shown.stop();
      stopProblemWatch();
      await reload.settled();
      await retention.stop();
      await escalator.stop();
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
