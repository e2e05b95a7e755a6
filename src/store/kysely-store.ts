/**
 * The Store, once, for both engines: the shared queries over a backend's Kysely instance, and the policy it
 * asks where a write depends on a decision. Driver errors that mean "not now" leave here as StoreUnavailable,
 * whichever engine raised them.
 */
import type { Kysely } from "kysely";
import type { ScheduleChange } from "../domain/model.ts";
import type { Policy } from "../domain/batch.ts";
import type { Clock } from "../platform/clock.ts";
import { every } from "../platform/tick.ts";
import type { Backend } from "./backend.ts";
import * as alerting from "./queries/alerting.ts";
import * as channelQueries from "./queries/channels.ts";
import * as telling from "./queries/announcements.ts";
import * as pages from "./queries/status-pages.ts";
import * as domains from "./queries/domains.ts";
import * as configure from "./queries/configure.ts";
import * as entries from "./queries/entries.ts";
import * as cluster from "./queries/nodes.ts";
import * as outbox from "./queries/outbox.ts";
import * as responding from "./queries/responding.ts";
import { readBatch, writeDecision } from "./queries/results.ts";
import { told } from "./queries/telling.ts";
import * as servers from "./queries/servers.ts";
import * as status from "./queries/status.ts";
import * as tokens from "./queries/tokens.ts";
import { storable, storableRun } from "../domain/text.ts";
import { ServiceMemo } from "./memo.ts";
import type { Store, WatchOptions } from "./store.ts";
import type { Tables } from "./tables.ts";

export class KyselyStore implements Store {
  readonly #backend: Backend;
  readonly #policy: Policy;
  readonly #clock: Clock;
  readonly #memo = new ServiceMemo();

  constructor(backend: Backend, policy: Policy, clock: Clock) {
    this.#backend = backend;
    this.#policy = policy;
    this.#clock = clock;
  }

  /** The backend, for what only src/store/ does with it (migrations, copy, the engines' own chores). */
  get backend(): Backend {
    return this.#backend;
  }

  get engine() {
    return this.#backend.engine;
  }

  get alone() {
    return this.#backend.alone;
  }

  get location() {
    return this.#backend.location;
  }

  async #run<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.#backend.unavailable(error) ?? error;
    }
  }

  get #db() {
    return this.#backend.db;
  }

  /** A write in one transaction. */
  #write<T>(fn: (trx: Kysely<Tables>) => Promise<T>): Promise<T> {
    return this.#run(() => this.#backend.write(fn));
  }

  /**
   * A change of the configuration: one at a time across the cluster, so that the graph of dependsOn each
   * checks holds against what the others wrote (two nodes each adding half of a cycle stored it whole). Other
   * nodes are told once it commits, with the services it started and stopped, when `changeOf` says it
   * changed anything.
   */
  #configure<T>(fn: (trx: Kysely<Tables>) => Promise<T>, changeOf: (result: T) => ScheduleChange | undefined = () => undefined): Promise<T> {
    return this.#write(async (trx) => {
      await this.#backend.lock(trx, "config");
      const result = await fn(trx);
      const change = changeOf(result);
      if (change) await this.#backend.announce(trx, "config", change);
      return result;
    });
  }

  servers = (serverId?: string) => this.#run(() => servers.servers(this.#db, serverId));
  services: Store["services"] = (filter) => this.#run(() => servers.services(this.#db, this.#backend, filter));
  findService = (serverId: string, serviceId: string) =>
    this.#run(async () => {
      const found = await servers.findService(this.#db, serverId, serviceId);
      return found ?? { key: undefined, serverExists: await servers.serverExists(this.#db, serverId) };
    });
  applyServers: Store["applyServers"] = (docs, options) =>
    configure.applyServers((fn) => this.#configure(fn), this.#policy.dependencyProblems, docs, options, async (trx, result) => {
      await cluster.placeServices(trx, this.#backend, this.#policy.place, result.schedule.started, options.now);
      if (result.servers.some((c) => c.outcome !== "unchanged")) await this.#backend.announce(trx, "config", result.schedule);
    });
  putService: Store["putService"] = (serverId, service, now) =>
    this.#configure(
      async (trx) => {
        const result = await configure.putService(trx, this.#policy.dependencyProblems, serverId, service, now);
        if (result) await cluster.placeServices(trx, this.#backend, this.#policy.place, result.schedule.started, now);
        return result;
      },
      (result) => (result && result.outcome !== "unchanged" ? result.schedule : undefined),
    );
  deleteServer = (serverId: string) =>
    this.#configure(async (trx) => {
      const gone = await configure.deleteServer(trx, serverId);
      await configure.checkDependencies(trx, this.#policy.dependencyProblems, () => false);
      return gone && { started: gone.started, stopped: gone.stopped };
    }, (gone) => gone);
  deleteService = (serverId: string, serviceId: string, now: number) =>
    this.#configure(async (trx) => {
      const gone = await configure.deleteService(trx, serverId, serviceId, now);
      await configure.checkDependencies(trx, this.#policy.dependencyProblems, () => false);
      return gone;
    }, (gone) => gone);
  scheduledServices: Store["scheduledServices"] = (filter) => this.#run(() => servers.scheduledServices(this.#db, this.#backend, filter));
  upstream = (refs: readonly string[]) => this.#run(() => servers.upstreamOf(this.#db, refs));
  serverByPingKey = (pingKey: string) => this.#run(() => servers.serverByPingKey(this.#db, pingKey));
  renewServerPingKey = (serverId: string) =>
    this.#configure(
      (trx) => configure.renewServerPingKey(trx, serverId),
      () => undefined,
    );
  renewPingKey = (serviceKey: number) =>
    this.#configure(
      (trx) => configure.renewPingKey(trx, serviceKey),
      (renewed) => (renewed ? { started: [serviceKey], stopped: [] } : undefined),
    );

  recordResults: Store["recordResults"] = (given, now) =>
    this.#run(async () => {
      if (given.length === 0) return [];
      // Text from outside (errors, answers, ping bodies) is made storable here, before the policy quotes it in
      // incidents and notifications: the same on both engines, and never refused after a ping's answer.
      const runs = given.map(storableRun);
      let keep = () => {};
      const recorded = await this.#backend.write(async (trx) => {
        const mark = await this.#backend.changeMark(trx);
        const memo = mark === undefined ? undefined : this.#memo.at(mark);
        const batch = await readBatch(trx, this.#backend, runs, memo);
        const decision = await told(trx, this.#backend, batch, this.#policy.decide(batch.facts, now), now);
        const { recorded, left } = await writeDecision(trx, this.#backend, batch, decision);
        await this.#backend.announce(trx, "entries");
        const end = await this.#backend.changeMark(trx);
        if (end !== undefined) keep = () => this.#memo.keep(end, left);
        return recorded;
      });
      keep(); // committed: what it left is now the database's
      return recorded;
    });
  readEntries: Store["readEntries"] = (serviceKey, query) => this.#run(() => entries.readEntries(this.#db, serviceKey, query));
  entriesAfter: Store["entriesAfter"] = (afterId, filter, limit) => this.#run(() => entries.entriesAfter(this.#db, afterId, filter, limit));
  lastEntryId = () => this.#run(() => entries.lastEntryId(this.#db));

  serviceStates = () => this.#run(() => status.serviceStates(this.#db));
  locationResults = (keys: readonly number[]) => this.#run(() => status.locationResults(this.#db, keys));
  rollups = (serviceKey: number, sinceHour: number) => this.#run(() => status.rollups(this.#db, serviceKey, sinceHour));
  uptimeCounts: Store["uptimeCounts"] = (since, until, per) => this.#run(() => status.uptimeCounts(this.#db, since, until, per));
  rollupRevision = () => this.#run(() => status.rollupRevision(this.#db));
  rollupSums: Store["rollupSums"] = (query) => this.#run(() => status.rollupSums(this.#backend, query));

  // The others hear of a node that joins at once: it takes a share of their checks.
  registerNode: Store["registerNode"] = (node, now, replacing) =>
    this.#write(async (trx) => {
      const taken = await cluster.registerNode(trx, node, now, replacing, this.#backend.alone);
      if (!taken) await this.#backend.announce(trx, "cluster");
      return taken;
    });
  heartbeat = (name: string, instance: string, now: number) =>
    this.#run(() => this.#backend.writeAside((db) => cluster.heartbeat(db, name, instance, now)));
  leaveNode = (name: string, instance: string) =>
    this.#write(async (trx) => {
      await cluster.leaveNode(trx, name, instance);
      await this.#backend.announce(trx, "cluster");
    });
  nodes = (now: number) => this.#run(() => cluster.listNodes(this.#db, now));
  liveNodes = (now: number) => this.#run(() => cluster.liveNodes(this.#db, now));
  rebalance = (liveAt: number) =>
    this.#write(async (trx) => {
      const moved = await cluster.rebalance(trx, this.#backend, this.#policy.assign, liveAt);
      if (moved > 0) await this.#backend.announce(trx, "cluster");
      return moved;
    });

  addSilence: Store["addSilence"] = (silence, now) => this.#write((trx) => alerting.addSilence(trx, silence, now));
  silences = (now: number) => this.#run(() => alerting.silences(this.#db, now));
  silencesBetween = (from: number, until: number) => this.#run(() => alerting.silencesBetween(this.#db, from, until));
  endSilence = (id: number, now: number) => this.#write((trx) => alerting.endSilence(trx, id, now));
  incidents: Store["incidents"] = (query) => this.#run(() => alerting.incidents(this.#db, query));
  incident = (id: number) => this.#run(() => responding.incidentById(this.#db, id));
  incidentDeliveries = (ids: readonly number[]) => this.#run(() => responding.incidentDeliveries(this.#db, ids));
  openIncident = (serverId: string, serviceId: string) => this.#run(() => responding.openIncidentOf(this.#db, serverId, serviceId));
  // The other nodes are told (a change that starts and stops nothing): their delivery looks at the outbox.
  acknowledge: Store["acknowledge"] = (id, ack) =>
    this.#write(async (trx) => {
      const done = await responding.acknowledge(trx, this.#backend, id, ack);
      if (done.outcome === "acknowledged") await this.#backend.announce(trx, "config", { started: [], stopped: [] });
      return done;
    });
  escalate = (now: number) => this.#write((trx) => responding.escalate(trx, this.#backend, now));
  ackSecret = () => this.#write((trx) => responding.ackSecret(trx));

  announcements: Store["announcements"] = (query) => this.#run(() => telling.announcements(this.#db, query));
  addAnnouncement: Store["addAnnouncement"] = (a, now) =>
    this.#write(async (trx) => {
      const unknownServers = await telling.unknownServers(trx, a.servers);
      return unknownServers.length > 0 ? { unknownServers } : telling.addAnnouncement(trx, a, now);
    });
  addAnnouncementUpdate: Store["addAnnouncementUpdate"] = (id, update, now) => this.#write((trx) => telling.addUpdate(trx, id, update, now));
  patchAnnouncement: Store["patchAnnouncement"] = (id, patch, now) =>
    this.#write(async (trx) => {
      const unknownServers = await telling.unknownServers(trx, patch.servers ?? null);
      return unknownServers.length > 0 ? { unknownServers } : telling.patchAnnouncement(trx, id, patch, now);
    });
  deleteAnnouncement = (id: number) => this.#write((trx) => telling.deleteAnnouncement(trx, id));
  statusPages: Store["statusPages"] = (query) => this.#run(() => pages.statusPages(this.#db, query));
  putStatusPage: Store["putStatusPage"] = (slug, page, now) =>
    this.#write(async (trx) => {
      const unknown = await pages.unknownReferences(trx, page);
      if (unknown.length > 0) return { unknown };
      const takenHostnames = await pages.takenHostnames(trx, slug, page.hostnames);
      return takenHostnames.length > 0 ? { takenHostnames } : pages.putStatusPage(trx, slug, page, now);
    });
  deleteStatusPage = (slug: string) => this.#write((trx) => pages.deleteStatusPage(trx, slug));
  putStatusPageLogo: Store["putStatusPageLogo"] = (slug, logo, now) => this.#write((trx) => pages.putLogo(trx, slug, logo, now));
  statusPageLogo = (slug: string) => this.#run(() => pages.logo(this.#db, slug));

  createToken: Store["createToken"] = (token, now) => this.#write((trx) => tokens.createToken(trx, token, now));
  tokens = () => this.#run(() => tokens.tokens(this.#db));
  tokenByHash = (hash: string) => this.#run(() => tokens.tokenByHash(this.#db, hash));
  hasTokens = () => this.#run(() => tokens.hasTokens(this.#db));
  revokeToken = (id: number) => this.#write((trx) => tokens.revokeToken(trx, id));
  createSession: Store["createSession"] = (session, now) => this.#write((trx) => tokens.createSession(trx, session, now));
  sessionToken = (hash: string, now: number) => this.#run(() => tokens.sessionToken(this.#db, hash, now));
  endSession = (hash: string) => this.#write((trx) => tokens.endSession(trx, hash));

  channels = (name?: string) => this.#run(() => channelQueries.channels(this.#db, name));
  putChannel: Store["putChannel"] = (name, doc, now) => this.#configure((trx) => channelQueries.putChannel(trx, name, doc, now));
  deleteChannel = (name: string) => this.#configure((trx) => channelQueries.deleteChannel(trx, name));
  clusterChannels = () => this.#run(() => channelQueries.clusterChannels(this.#db, this.#backend));
  shareChannels = (names: readonly string[] | null) => this.#write(async (trx) => void (await channelQueries.shareChannels(trx, this.#backend, names)));

  claimNotifications: Store["claimNotifications"] = (instance, now, room, sending) =>
    this.#write((trx) => outbox.claimNotifications(trx, this.#backend, instance, now, room, sending));
  nextNotificationAt = () => this.#run(() => outbox.nextNotificationAt(this.#db, this.#backend));
  markDelivered: Store["markDelivered"] = (delivered, now) =>
    this.#write((trx) => outbox.markDelivered(trx, delivered.map((d) => ({ ...d, remoteId: storable(d.remoteId) })), now));
  retryNow = (channel: string, now: number) => this.#run(() => outbox.retryNow(this.#db, channel, now));
  // A delivery's error quotes the receiver's answer: text from outside.
  markRetry = (id: number, error: string, nextAt: number) => this.#run(() => outbox.markRetry(this.#db, this.#backend, id, storable(error), nextAt));
  markGivenUp: Store["markGivenUp"] = (id, status, error) => this.#run(() => outbox.markGivenUp(this.#db, this.#backend, id, status, storable(error)));
  notificationCounts = () => this.#run(() => outbox.notificationCounts(this.#db));
  // Read first: almost always there is nothing to queue, and then no write transaction is opened.
  requeueUnsent = (defaultTopic: boolean, now: number) =>
    this.#run(async () => {
      const ready = await outbox.unsentDowns(this.#db, defaultTopic);
      return ready.length === 0 ? 0 : this.#backend.write((trx) => outbox.requeue(trx, ready, now));
    });
  clusterTopic = () => this.#run(() => outbox.clusterTopic(this.#db));
  shareTopic = (topic: string) =>
    this.#write(async (trx) => {
      if (await outbox.shareTopic(trx, topic)) await this.#backend.announce(trx, "config");
    });
  downStatus = (incidentId: number, channel: string) => this.#run(() => outbox.downStatus(this.#db, incidentId, channel));

  domainsToLookUp: Store["domainsToLookUp"] = (node, since, keys) => this.#run(() => domains.domainsToLookUp(this.#db, this.#backend, node, since, keys));
  // A lookup's problem may quote the registry's answer: text from outside.
  saveRegistration: Store["saveRegistration"] = (domain, found, now) =>
    this.#run(() => domains.saveRegistration(this.#db, domain, { ...found, problem: storable(found.problem) }, now));
  pruneEntries = (cutoff: number, batch: number) => this.#run(() => entries.pruneEntries(this.#db, cutoff, batch));
  pruneRollups = (cutoff: number, afterKey: number, services: number) =>
    this.#run(() => entries.pruneRollups(this.#db, cutoff, afterKey, services));

  watch = (listener: (change?: ScheduleChange) => void, options: WatchOptions = {}) =>
    this.#backend.watch(options.of ?? "config", listener, options.pulse ?? every(this.#clock, 1000));
  problems = () => this.#backend.problems();
  close = () => this.#backend.close();
}
