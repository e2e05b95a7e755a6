/**
 * The delivery loop: publishes the outbox to ntfy. It runs beside the checks and never holds them up (all it
 * shares with them is the database, in short transactions). Per topic, notifications go out in order: a
 * topic's oldest pending notification blocks the ones after it until it is delivered or given up. Nodes
 * sharing a database share one outbox: each notification is claimed by one of them, and the claim (committed
 * before the publish) is also the mark a crash leaves behind.
 * A failed delivery is retried with capped exponential backoff, across restarts, until ntfy takes it; a
 * notification that ntfy refuses as invalid is marked failed with ntfy's error and not retried.
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Notification, Store } from "../store/store.ts";
import type { Publisher, PublishResult } from "./ntfy.ts";

export interface DeliveryOptions {
  readonly log: Logger;
  /** This process, as the nodes table knows it: claims of notifications name it. */
  readonly instance: string;
  /** The topic of notifications whose service has no notifyTopic (the cluster's); null when none is configured. */
  readonly defaultTopic: () => string | null;
  /** First retry delay; each later one doubles. Default 1000 ms. */
  readonly retryBaseMs?: number;
  /** Retry delays stop growing here. Default 300000 ms (5 minutes). */
  readonly retryMaxMs?: number;
  readonly clock: Clock;
  /** Told of every attempt's outcome. */
  readonly onAttempt?: (row: Notification, result: PublishResult) => void;
}

export class Delivery {
  readonly #store: Store;
  readonly #publisher: Publisher;
  readonly #options: DeliveryOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #pausedUntil = 0;

  constructor(store: Store, publisher: Publisher, options: DeliveryOptions) {
    this.#store = store;
    this.#publisher = publisher;
    this.#options = options;
  }

  /** Look at the outbox now (new notifications were committed, or the daemon started). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#pass()
      .catch((error: unknown) => {
        // The outbox could not be read or updated (the store refusing writes): look again in a while.
        this.#options.log.error("notification delivery paused for 10 s: the outbox cannot be updated", { error });
        this.#pausedUntil = this.#options.clock.now() + 10_000;
        this.#again = false;
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.wake();
        } else this.#arm();
      });
  }

  /** Finish the attempts under way; send nothing more. What is pending stays in the outbox for next time. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #arm(): void {
    if (this.#stopped) return;
    void this.#store.nextNotificationAt().then(
      (next) => this.#armAt(next),
      (error: unknown) => {
        this.#options.log.error("cannot read the outbox; looking again in 10 s", { error });
        this.#armAt(this.#options.clock.now() + 10_000);
      },
    );
  }

  #armAt(next: number | undefined): void {
    if (next === undefined || this.#stopped || this.#running) return;
    const at = Math.max(next, this.#pausedUntil);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.wake(), Math.min(Math.max(0, at - this.#options.clock.now()), 2_147_000_000));
  }

  async #pass(): Promise<void> {
    const due = await this.#store.claimNotifications(this.#options.instance, this.#options.clock.now());
    await Promise.all(due.map((row) => this.#deliver(row)));
    // A delivered head lets the next notification of its topic go at once.
    if (due.length > 0 && !this.#stopped) this.#again = true;
  }

  /** Why a RECOVERED must not go out: its incident's DOWN never did (nobody was told it was down). */
  async #orphan(row: Notification): Promise<string | undefined> {
    if (row.kind !== "recovered" || row.incidentId === null) return undefined;
    const down = await this.#store.downStatus(row.incidentId);
    return down === "unsent" || down === "failed" ? `its incident's DOWN was not published (${down}): a RECOVERED alone would say nothing true` : undefined;
  }

  async #deliver(row: Notification): Promise<void> {
    const body = row.message;
    const topic = row.topic ?? this.#options.defaultTopic();
    const log = this.#options.log.child({ server: row.serverId, service: row.serviceId, kind: row.kind, topic });
    const orphan = topic === null ? undefined : await this.#orphan(row);
    if (topic === null || orphan) {
      const error = orphan ?? "no ntfy topic: set notifyTopic on the check or start healthd with --ntfy-topic";
      await this.#store.markGivenUp(row.id, "unsent", error);
      log.warn("notification kept unsent", { why: error });
      this.#options.onAttempt?.(row, { ok: false, retryable: false, status: null, error });
      return;
    }
    if (row.inFlightSince !== null) {
      // A daemon died while publishing this: ntfy may have it already. Look before sending it twice.
      const since = Math.floor(row.inFlightSince / 1000) - 1;
      const found = await this.#publisher.findCached(topic, since, (m) => m.title === body.title && m.message === body.message);
      if (found) {
        await this.#store.markDelivered(row.id, found.id, this.#options.clock.now());
        log.info("notification was delivered before a restart; not sending it again", { ntfyId: found.id });
        this.#options.onAttempt?.(row, { ok: true, id: found.id, time: found.time });
        return;
      }
    }
    const result = await this.#publisher.publish({ ...body, topic });
    if (result.ok) {
      await this.#store.markDelivered(row.id, result.id, this.#options.clock.now());
      log.info("notification delivered", { ntfyId: result.id });
    } else if (result.retryable) {
      const base = this.#options.retryBaseMs ?? 1000;
      const delay = Math.min(base * 2 ** row.attempts, this.#options.retryMaxMs ?? 300_000);
      await this.#store.markRetry(row.id, result.error, this.#options.clock.now() + delay);
      log.warn("notification not delivered; will retry", { error: result.error, attempt: row.attempts + 1, retryInMs: delay });
    } else {
      await this.#store.markGivenUp(row.id, "failed", result.error);
      log.error("ntfy refused the notification; giving up on it", { error: result.error });
    }
    this.#options.onAttempt?.(row, result);
  }
}
