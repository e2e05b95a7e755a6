/**
 * The Store, once, for both engines: the shared queries over a backend's Kysely instance. Driver errors
 * that mean "not now" leave here as StoreUnavailable, whichever engine raised them.
 */
import type { Kysely } from "kysely";
import type { Backend } from "./backend.ts";
import * as alerting from "./queries/alerting.ts";
import * as entries from "./queries/entries.ts";
import * as cluster from "./queries/nodes.ts";
import * as outbox from "./queries/outbox.ts";
import { recordResults } from "./queries/results.ts";
import * as servers from "./queries/servers.ts";
import * as status from "./queries/status.ts";
import { ServiceMemo } from "./memo.ts";
import type { Store, WatchOptions } from "./store.ts";
import type { Tables } from "./tables.ts";

export class KyselyStore implements Store {
  readonly #backend: Backend;
  readonly #memo = new ServiceMemo();

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  /** The backend, for what only src/store/ does with it (migrations, copy, the engines' own chores). */
  get backend(): Backend {
    return this.#backend;
  }

  get engine() {
    return this.#backend.engine;
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

  listServers = () => this.#run(() => servers.listServers(this.#db));
  getServer = (serverId: string) => this.#run(() => servers.getServer(this.#db, serverId));
  getService = (serverId: string, serviceId: string) =>
    this.#run(async () => (await servers.serviceViews(this.#db, serverId, serviceId))[0]);
  findService = (serverId: string, serviceId: string) =>
    this.#run(async () => {
      const found = await servers.findService(this.#db, serverId, serviceId);
      return found ?? { key: undefined, serverExists: await servers.serverExists(this.#db, serverId) };
    });
  /**
   * A change of the configuration: one at a time across the cluster, so that the graph of dependsOn each
   * checks holds against what the others wrote (two nodes each adding half of a cycle stored it whole).
   */
  #configure<T>(fn: (trx: Kysely<Tables>) => Promise<T>): Promise<T> {
    return this.#backend.write(async (trx) => {
      await this.#backend.lock(trx, "config");
      return fn(trx);
    });
  }

  applyServers: Store["applyServers"] = (docs, options) =>
    this.#run(() => servers.applyServers((fn) => this.#configure(fn), docs, options, (trx) => this.#backend.announce(trx, "config")));
  putService: Store["putService"] = (serverId, service, now) =>
    this.#run(() =>
      this.#configure(async (trx) => {
        const result = await servers.putService(trx, serverId, service, now);
        if (result && result.outcome !== "unchanged") await this.#backend.announce(trx, "config");
        return result;
      }),
    );
  deleteServer = (serverId: string) =>
    this.#run(() =>
      this.#configure(async (trx) => {
        const gone = await servers.deleteServer(trx, serverId);
        await servers.checkDependencies(trx, () => undefined);
        if (gone) await this.#backend.announce(trx, "config");
        return gone && { started: gone.started, stopped: gone.stopped };
      }),
    );
  deleteService = (serverId: string, serviceId: string, now: number) =>
    this.#run(() =>
      this.#configure(async (trx) => {
        const gone = await servers.deleteService(trx, serverId, serviceId, now);
        await servers.checkDependencies(trx, () => undefined);
        if (gone) await this.#backend.announce(trx, "config");
        return gone;
      }),
    );
  scheduledServices = (node?: string) => this.#run(() => servers.scheduledServices(this.#db, node));
  serviceStates = () => this.#run(() => servers.serviceStates(this.#db));

  recordResults: Store["recordResults"] = (runs) =>
    this.#run(async () => {
      let keep = () => {};
      const recorded = await this.#backend.write(async (trx) => {
        const mark = await this.#backend.changeMark(trx);
        const memo = mark === undefined ? undefined : this.#memo.at(mark);
        const { recorded, left } = await recordResults(trx, this.#backend.engine, runs, memo);
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
  rollupTotals = (serviceKey: number, sinceHour: number) => this.#run(() => entries.rollupTotals(this.#db, serviceKey, sinceHour));

  statusServices = (serverId?: string) => this.#run(() => status.statusServices(this.#db, serverId));
  uptimeCounts: Store["uptimeCounts"] = (since, until, per) => this.#run(() => status.uptimeCounts(this.#db, since, until, per));
  rollupRevision = () => this.#run(() => status.rollupRevision(this.#db));

  registerNode: Store["registerNode"] = (node, now, replacing) =>
    this.#run(() => this.#backend.write((trx) => cluster.registerNode(trx, node, now, replacing)));
  heartbeat = (name: string, instance: string, now: number) =>
    this.#run(() => this.#backend.writeAside((db) => cluster.heartbeat(db, name, instance, now)));
  leaveNode = (name: string, instance: string) =>
    this.#run(() =>
      this.#backend.write(async (trx) => {
        await cluster.leaveNode(trx, name, instance);
        await this.#backend.announce(trx, "cluster");
      }),
    );
  nodes = (now: number) => this.#run(() => cluster.listNodes(this.#db, now));
  liveNodes = (now: number) => this.#run(() => cluster.liveNodes(this.#db, now));
  rebalance = (now: number) =>
    this.#run(() =>
      this.#backend.write(async (trx) => {
        const moved = await cluster.rebalance(trx, this.#backend.engine, now);
        if (moved > 0) await this.#backend.announce(trx, "cluster");
        return moved;
      }),
    );

  addSilence: Store["addSilence"] = (silence, now) =>
    this.#run(() => this.#backend.write((trx) => alerting.addSilence(trx, silence, now)));
  silences = (now: number) => this.#run(() => alerting.silences(this.#db, now));
  endSilence = (id: number, now: number) => this.#run(() => this.#backend.write((trx) => alerting.endSilence(trx, id, now)));
  incidents: Store["incidents"] = (query, now) => this.#run(() => alerting.incidents(this.#db, query, now));

  claimNotifications = (instance: string, now: number) =>
    this.#run(() => this.#backend.write((trx) => outbox.claimNotifications(trx, this.#backend.engine, instance, now)));
  nextNotificationAt = () => this.#run(() => outbox.nextNotificationAt(this.#db));
  markDelivered = (id: number, ntfyId: string, now: number) => this.#run(() => outbox.markDelivered(this.#db, id, ntfyId, now));
  markRetry = (id: number, error: string, nextAt: number) => this.#run(() => outbox.markRetry(this.#db, id, error, nextAt));
  markGivenUp: Store["markGivenUp"] = (id, status, error) => this.#run(() => outbox.markGivenUp(this.#db, id, status, error));
  notificationCounts = () => this.#run(() => outbox.notificationCounts(this.#db));
  requeueUnsent = (defaultTopic: boolean, now: number) =>
    this.#run(() => this.#backend.write((trx) => outbox.requeueUnsent(trx, defaultTopic, now)));
  clusterTopic = () => this.#run(() => outbox.clusterTopic(this.#db));
  shareTopic = (topic: string) =>
    this.#run(() =>
      this.#backend.write(async (trx) => {
        if (await outbox.shareTopic(trx, topic)) await this.#backend.announce(trx, "config");
      }),
    );
  downStatus = (incidentId: number) => this.#run(() => outbox.downStatus(this.#db, incidentId));
  notifications = (afterId?: number, limit?: number) => this.#run(() => outbox.notifications(this.#db, afterId, limit));

  pruneEntries = (cutoff: number, batch: number) => this.#run(() => entries.pruneEntries(this.#db, cutoff, batch));
  pruneRollups = (cutoff: number, afterKey: number, services: number) =>
    this.#run(() => entries.pruneRollups(this.#db, cutoff, afterKey, services));

  watch = (listener: () => void, options: WatchOptions = {}) =>
    this.#backend.watch(options.of ?? "config", listener, options.everyMs ?? 1000);
  problems = () => this.#backend.problems();
  close = () => this.#backend.close();
}
