/**
 * The rollups of settled hours and days, per service, kept in memory for the read model (read-model.ts): a
 * page of 1,000 services then reads only the last hour or two from the store.
 */
import { dayMs, hourMs, settleMs } from "../policy/rollup.ts";
import type { ReadModelStore } from "../store/store.ts";

/** Days in a service's history bar, today included. */
export const historyDays = 90;

export const ratio = (checks: number, failures: number) => (checks === 0 ? null : (checks - failures) / checks);
/** Uptime to five places (99.999 %): enough to tell any two pages apart, short enough to send 90 of. */
export const round = (value: number | null) => (value === null ? null : Math.round(value * 100_000) / 100_000);

type Counts = { checks: number; failures: number };

/** What the page needs of every service's rollups at one moment: per-day and per-hour counts. */
export interface Snapshot {
  /** Moves whenever the settled days change. */
  readonly revision: number;
  /** Days before this one (a day's start) are settled. */
  readonly settledUntil: number;
  /** Checks and failures of a service on a day (its start, Unix ms), or undefined when it had none. */
  day(serviceKey: number, day: number): Counts | undefined;
  /** Checks and failures of a service from `since` (an hour's start) until now. */
  since(serviceKey: number, since: number): Counts;
  /**
   * The first `settled` days of `dates` (all before settledUntil): their uptime, and the checks and failures
   * of those from `monthFrom`. They read the same until the revision moves, so they are worked out once per
   * service, not on every page (90 days of 1,000 services were most of a page's time).
   */
  settledDays(serviceKey: number, dates: readonly number[], settled: number, monthFrom: number): SettledDays;
}

interface SettledDays {
  readonly uptime: readonly (number | null)[];
  readonly month: Counts;
}

/**
 * The rollups of settled hours and days, per service, kept in memory: a page of 1,000 services then reads
 * only the last hour or two from the store. An hour is settled two minutes after it ends; results stored
 * later than that move the store's rollup revision, and then everything is read again, so the store stays
 * the authority and this only a cache of what it said.
 */
export class History {
  #revision: number | undefined;
  readonly #days = new Map<number, Map<number, Counts>>();
  /** Days before this one (a day's start) are loaded. */
  #daysUntil = 0;
  readonly #hours = new Map<number, Map<number, Counts>>();
  /** Settled hours from `#hoursFrom` to before `#hoursUntil` are loaded. */
  #hoursFrom = 0;
  #hoursUntil = 0;
  #updating: Promise<void> | undefined;
  /** Moves whenever #days changes. */
  #version = 0;
  /** Each service's settled days, as last worked out (Snapshot.settledDays), with what they were worked out for. */
  readonly #settledDays = new Map<number, { readonly stamp: string; readonly days: SettledDays }>();
  /** The settled hours of #hours summed per service from `since`, for the stamp they were summed at. */
  #hoursSum: { readonly stamp: string; readonly sums: Map<number, Counts> } | undefined;

  /** The counts as of `now`: the settled past from memory (read when it grows), the rest from the store. */
  async snapshot(store: ReadModelStore, now: number): Promise<Snapshot> {
    const hourNow = Math.floor(now / hourMs) * hourMs;
    const settled = Math.floor((now - settleMs) / hourMs) * hourMs;
    const [fresh] = await Promise.all([store.uptimeCounts(settled, hourNow + hourMs, "hour"), this.#update(store, now, settled)]);
    const recent = new Map<number, Map<number, Counts>>();
    for (const c of fresh) add(recent, c.serviceKey, c.at, c);
    const daysUntil = this.#daysUntil;
    return {
      revision: this.#version,
      settledUntil: daysUntil,
      day: (key, day) => {
        if (day < daysUntil) return this.#days.get(key)?.get(day);
        const counts = { checks: 0, failures: 0 };
        for (const hours of [this.#hours.get(key), recent.get(key)]) {
          for (const [hour, c] of hours ?? []) if (hour >= day && hour < day + dayMs) (counts.checks += c.checks), (counts.failures += c.failures);
        }
        return counts.checks === 0 ? undefined : counts;
      },
      since: (key, since) => {
        const settledSum = this.#settledHours(since).get(key);
        const counts = { checks: settledSum?.checks ?? 0, failures: settledSum?.failures ?? 0 };
        for (const [hour, c] of recent.get(key) ?? []) if (hour >= since) (counts.checks += c.checks), (counts.failures += c.failures);
        return counts;
      },
      settledDays: (key, dates, settled, monthFrom) => {
        const stamp = `${this.#version}:${dates[0]}:${settled}:${monthFrom}`;
        const kept = this.#settledDays.get(key);
        if (kept?.stamp === stamp) return kept.days;
        const days = this.#days.get(key);
        const uptime: (number | null)[] = [];
        const month = { checks: 0, failures: 0 };
        for (let i = 0; i < settled; i++) {
          const c = days?.get(dates[i]!);
          uptime.push(c ? round(ratio(c.checks, c.failures)) : null);
          if (c && dates[i]! >= monthFrom) (month.checks += c.checks), (month.failures += c.failures);
        }
        const worked = { uptime, month };
        this.#settledDays.set(key, { stamp, days: worked });
        return worked;
      },
    };
  }

  /** Every service's settled hours from `since`, summed once per hour (they change when an hour settles). */
  #settledHours(since: number): Map<number, Counts> {
    const stamp = `${this.#version}:${this.#hoursUntil}:${since}`;
    if (this.#hoursSum?.stamp === stamp) return this.#hoursSum.sums;
    const sums = new Map<number, Counts>();
    for (const [key, hours] of this.#hours) {
      const sum = { checks: 0, failures: 0 };
      for (const [hour, c] of hours) if (hour >= since) (sum.checks += c.checks), (sum.failures += c.failures);
      sums.set(key, sum);
    }
    this.#hoursSum = { stamp, sums };
    return sums;
  }

  /** One update at a time: concurrent requests wait for the same one. */
  #update(store: ReadModelStore, now: number, settled: number): Promise<void> {
    this.#updating ??= this.#load(store, now, settled).finally(() => (this.#updating = undefined));
    return this.#updating;
  }

  async #load(store: ReadModelStore, now: number, settled: number): Promise<void> {
    const revision = await store.rollupRevision();
    if (revision !== this.#revision) {
      this.#version++;
      this.#days.clear();
      this.#hours.clear();
      this.#daysUntil = this.#hoursFrom = this.#hoursUntil = 0;
      this.#revision = revision;
      this.#settledDays.clear();
    }
    // Days whose every hour is settled; the rest of the window comes from hours.
    const daysUntil = Math.floor(settled / dayMs) * dayMs;
    const oldestDay = Math.floor(now / dayMs) * dayMs - (historyDays - 1) * dayMs;
    if (this.#daysUntil < daysUntil) {
      for (const c of await store.uptimeCounts(Math.max(this.#daysUntil, oldestDay), daysUntil, "day")) add(this.#days, c.serviceKey, c.at, c);
      this.#daysUntil = daysUntil;
      this.#version++;
      for (const days of this.#days.values()) for (const day of days.keys()) if (day < oldestDay) days.delete(day);
    }
    // Settled hours of the last 24 and of the days not yet settled as a whole.
    const hoursFrom = Math.min(daysUntil, Math.floor(now / hourMs) * hourMs - 23 * hourMs);
    if (this.#hoursUntil < settled) {
      for (const c of await store.uptimeCounts(Math.max(this.#hoursUntil, hoursFrom), settled, "hour")) add(this.#hours, c.serviceKey, c.at, c);
      this.#hoursUntil = settled;
    }
    if (this.#hoursFrom < hoursFrom) {
      for (const hours of this.#hours.values()) for (const hour of hours.keys()) if (hour < hoursFrom) hours.delete(hour);
      this.#hoursFrom = hoursFrom;
    }
  }
}

function add(map: Map<number, Map<number, Counts>>, key: number, at: number, counts: Counts): void {
  let inner = map.get(key);
  if (!inner) map.set(key, (inner = new Map()));
  inner.set(at, { checks: counts.checks, failures: counts.failures });
}

