/**
 * The write path's memory between batches, on an engine with one writer (SQLite): each service as the last
 * batch left it (settings, progress, last entry), its latest hour's rollup, the channels' routes and every
 * server's silences, so that a batch reads only the services it has not seen (the read was a quarter of storing
 * a batch of 500, profiled) and, at everyday loads, no silences at all. The database stays
 * the authority: the memo holds only while the database's change mark (Backend.changeMark) is the one its
 * last batch ended on. Any other write moves the mark and empties the memo: a PUT, a delivered notification or
 * retention through this process's connection, `healthd apply` or `check --record` from another. The
 * heartbeat does not: it writes aside (Backend.writeAside), to a table no batch reads.
 */
import type { Routes } from "../domain/notification.ts";
import type { Left, LeftRollup, LeftService, Remembered, SilencesSince } from "./queries/results.ts";

export class ServiceMemo implements Remembered {
  readonly services = new Map<number, LeftService>();
  readonly rollups = new Map<number, LeftRollup>();
  routes: Routes | undefined;
  silences: SilencesSince | undefined;
  #mark: string | undefined;

  /** The memo for a transaction that found the database at `mark`: emptied if the database changed since. */
  at(mark: string): Remembered {
    if (mark !== this.#mark) this.forget();
    return this;
  }

  /** What a batch left, once its transaction committed, with the mark the transaction ended on. */
  keep(mark: string, left: Left): void {
    this.#mark = mark;
    this.routes = left.routes;
    this.silences = left.silences;
    for (const service of left.services) this.services.set(service.record.key, service);
    for (const rollup of left.rollups) {
      const kept = this.rollups.get(rollup.serviceKey);
      if (!kept || kept.hour <= rollup.hour) this.rollups.set(rollup.serviceKey, rollup);
    }
  }

  forget(): void {
    this.#mark = undefined;
    this.services.clear();
    this.rollups.clear();
    this.routes = undefined;
    this.silences = undefined;
  }
}
