/**
 * The services as the status pages show them (their checks, states and last entries), kept in memory: a page
 * of 1,000 services then reads none of them per request (the read was a fifth of a page's time, and every
 * reader of a view older than a second made it again).
 *
 * The database stays the one authority; this is a cache of what it said, never written from anything else:
 * - read whole when first asked, and again after any change of configuration (`reload`);
 * - each service of a committed batch read again by key (`committed`), after the commit, so what it holds is
 *   what a fresh read would say, computed in one place (the store), not a second copy of the state machine;
 * - results that other processes store (other nodes on one PostgreSQL database; on SQLite, `healthd` commands)
 *   are not told to this one: when the store says another process stored results (`othersStored`), everything
 *   is read again in the background, at most once every `othersEveryMs`, so a node's page shows the others'
 *   results within about a second.
 * Every read goes through one queue, in order: a reader waits for the reads queued before it (a page asked
 * for after a check's `check:done` shows that check), and a read never lands on top of a newer one.
 */
import type { Clock } from "../platform/clock.ts";
import type { ConfigurationStore, StoredService } from "../store/store.ts";

export interface ServiceMemoryOptions {
  readonly clock: Clock;
  /** Results stored by other processes are read at most this often. Default 1000 ms. */
  readonly othersEveryMs?: number;
  /** Told when a read fails (the database went away); the next change or reader tries again. */
  readonly onError?: (error: Error) => void;
}

export class ServiceMemory {
  readonly #store: Pick<ConfigurationStore, "services">;
  readonly #options: ServiceMemoryOptions;
  /** Every service by key, in the store's order (by server, then creation); undefined: read whole next. */
  #services: Map<number, StoredService> | undefined;
  /** The reads queued, in order; a reader waits for this. */
  #queue: Promise<void> = Promise.resolve();
  #lastWhole = -Infinity;
  #othersTimer: unknown;
  /** A whole read is queued and not begun: readers meanwhile wait for it rather than queue one each. */
  #wholeQueued = false;
  /** Moves at each reload: a whole read begun before it says what the configuration was, and is not kept. */
  #generation = 0;

  constructor(store: Pick<ConfigurationStore, "services">, options: ServiceMemoryOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** The services (of one server, or all), as of the last read queued before this call. */
  async services(filter: { readonly serverId?: string | undefined } = {}): Promise<StoredService[]> {
    if (!this.#services && !this.#wholeQueued) {
      this.#wholeQueued = true;
      this.#enqueue(() => this.#readWhole());
    }
    await this.#queue;
    // Reloaded meanwhile, or the read failed: this reader reads for itself (and says the failure).
    const all = this.#services ?? (await this.#readWholeNow());
    const list = [...all.values()];
    return filter.serverId === undefined ? list : list.filter((s) => s.serverId === filter.serverId);
  }

  /** The configuration changed (here or in another process): the next reader sees it whole, read again. */
  reload(): void {
    this.#services = undefined;
    this.#generation++;
  }

  /** A batch holding results of these services committed: they are read again, before any later reader. */
  committed(keys: Iterable<number>): void {
    if (!this.#services) return; // read whole next anyway
    const wanted = [...new Set(keys)];
    if (wanted.length > 0) this.#enqueue(() => this.#readSome(wanted));
  }

  /** Another process may have stored results: read everything again, at most once every othersEveryMs. */
  othersStored(): void {
    if (this.#othersTimer !== undefined || !this.#services) return;
    const { clock } = this.#options;
    const wait = Math.max(0, this.#lastWhole + (this.#options.othersEveryMs ?? 1000) - clock.monotonic());
    this.#othersTimer = clock.setTimeout(
      () => {
        this.#othersTimer = undefined;
        this.#enqueue(() => this.#readWhole());
      },
      wait,
      { unref: true },
    );
  }

  stop(): void {
    if (this.#othersTimer !== undefined) this.#options.clock.clearTimeout(this.#othersTimer);
    this.#othersTimer = undefined;
  }

  #enqueue(read: () => Promise<void>): void {
    this.#queue = this.#queue.then(read).catch((error: Error) => {
      // Not kept half-read: the next reader reads whole, and says the failure if it persists.
      this.#services = undefined;
      this.#options.onError?.(error);
    });
  }

  async #readWhole(): Promise<void> {
    this.#wholeQueued = false;
    await this.#readWholeNow();
  }

  async #readWholeNow(): Promise<Map<number, StoredService>> {
    const generation = this.#generation;
    this.#lastWhole = this.#options.clock.monotonic();
    const all = new Map((await this.#store.services()).map((s) => [s.key, s]));
    if (generation === this.#generation) this.#services = all;
    return all;
  }

  async #readSome(keys: readonly number[]): Promise<void> {
    const all = this.#services;
    if (!all) return; // read whole next anyway
    const fresh = await this.#store.services({ keys });
    if (this.#services !== all) return; // a change of configuration came meanwhile: the next reader reads whole
    for (const s of fresh) if (all.has(s.key)) all.set(s.key, s); // a new one comes with its configuration's reload
    const found = new Set(fresh.map((s) => s.key));
    for (const key of keys) if (!found.has(key)) all.delete(key); // deleted since its result
  }
}
