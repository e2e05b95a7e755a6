/**
 * The delivery loop: sends the outbox, one delivery per (notification, channel). It runs beside the checks and
 * never holds them up (all it shares with them is the database, in short transactions). Per channel and
 * service, deliveries go out in order: the oldest pending one blocks those after it until it is delivered or
 * given up. Channels do not wait for each other: each has its own sends in flight (at most `perChannel`), so
 * a channel that hangs fills only its own room. Nodes sharing a database share one outbox: each delivery is
 * claimed by one of them, and the claim (committed before the send) is also the mark a crash leaves behind.
 * A failed delivery is retried with capped exponential backoff, across restarts, for up to 24 hours; one the
 * destination refuses as invalid is marked failed with its error and not retried (those rules, and when a
 * RECOVERED is not sent, are the policy's: src/policy/delivery.ts).
 */
import { nextTurn, type Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { NotificationEvent } from "../domain/notification.ts";
import { builtInChannel } from "../domain/schema/channel.ts";
import type { ChannelStore, Notification, OutboxStore } from "../store/store.ts";
import type { ChannelDirectory } from "./channels.ts";
import type { Outgoing, SendResult } from "./outgoing.ts";
import { ackLink, asksToAct } from "./ack-link.ts";
import { afterFailure, channelIsBack, followsDown, orphaned, retryDefaults, unexpectedRetryMs } from "../policy/delivery.ts";

/** What became of one attempt, as `healthd_notifications_total{outcome}` counts it. */
export type Outcome = "delivered" | "retry" | "failed" | "given_up" | "unsent";

export interface DeliveryOptions {
  readonly log: Logger;
  /** This process, as the nodes table knows it: claims of deliveries name it. */
  readonly instance: string;
  readonly channels: ChannelDirectory;
  /** The status page people reach, for templates' {{statusPage}} (serve --public-url); null: none. */
  readonly statusPage?: string | null;
  /**
   * healthd's public URL (serve --public-url) and the cluster's signing secret: notifications that ask someone to
   * act carry a link that acknowledges their incident (ack-link.ts). Absent: no link.
   */
  readonly ackLinks?: { readonly publicUrl: string; readonly secret: string } | undefined;
  /** First retry delay; each later one doubles. Default 1000 ms. */
  readonly retryBaseMs?: number;
  /** Retry delays stop growing here. Default 300000 ms (5 minutes). */
  readonly retryMaxMs?: number;
  /** A delivery still failing this long after its notification was written is given up. Default 24 h. */
  readonly giveUpAfterMs?: number;
  /** Sends in flight to one channel at once. Default 16. */
  readonly perChannel?: number;
  readonly clock: Clock;
  /** Told of every attempt's outcome. */
  readonly onAttempt?: (row: Notification, result: SendResult, outcome: Outcome) => void;
}

export class Delivery {
  readonly #store: OutboxStore & ChannelStore;
  readonly #options: DeliveryOptions;
  readonly #inFlight = new Map<string, number>();
  readonly #sending = new Map<number, Promise<void>>();
  /** Sends the destination took, not yet marked: the next pass marks them all in one transaction, before it claims. */
  #taken: { readonly row: Notification; readonly id: string; readonly note: string }[] = [];
  #timer: unknown;
  #running: Promise<void> | undefined;
  #again = false;
  #soon = false;
  #stopped = false;
  #pausedUntil = 0;
  #channelsReadAt = -Infinity;

  constructor(store: OutboxStore & ChannelStore, options: DeliveryOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** Look at the outbox now (new notifications were committed, a send finished, or the daemon started). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#options.clock.clearTimeout(this.#timer);
    let claimed = 0;
    this.#running = this.#pass()
      .then((n) => void (claimed = n))
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
        } else this.#arm(claimed === 0);
      });
  }

  /** Finish the sends under way; send nothing more. What is pending stays in the outbox for next time. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    await this.#running;
    await Promise.all(this.#sending.values());
    await this.#markTaken().catch((error: unknown) => this.#options.log.error("deliveries taken could not be marked; they are sent again at the next start", { error }));
  }

  /**
   * Sleep until the next delivery is due. When a pass claimed nothing, what is due is waiting for room (a
   * channel's sends in flight) or for another node's send of the delivery before it: a finished send wakes
   * the loop, and otherwise it looks again within a second rather than spin.
   */
  #arm(idle: boolean): void {
    if (this.#stopped) return;
    void this.#store.nextNotificationAt().then(
      (next) => {
        if (next === undefined || this.#stopped || this.#running) return;
        const now = this.#options.clock.now();
        const at = Math.max(next, this.#pausedUntil, idle ? now + 1000 : 0);
        this.#options.clock.clearTimeout(this.#timer);
        this.#timer = this.#options.clock.setTimeout(() => this.wake(), Math.min(Math.max(0, at - now), 2_147_000_000));
      },
      (error: unknown) => {
        this.#options.log.error("cannot read the outbox; looking again in 10 s", { error });
        this.#options.clock.clearTimeout(this.#timer);
        this.#timer = this.#options.clock.setTimeout(() => this.wake(), 10_000);
      },
    );
  }

  /** wake(), once for all the sends that finish in this turn of the event loop: one pass claims for them all. */
  #wakeSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    nextTurn(() => {
      this.#soon = false;
      this.wake();
    });
  }

  /** Mark what destinations took, then tell of it. Marked before the next claim: a service's next delivery waits for it. */
  async #markTaken(): Promise<void> {
    const taken = this.#taken;
    if (taken.length === 0) return;
    this.#taken = [];
    const now = this.#options.clock.now();
    try {
      await this.#store.markDelivered(taken.map(({ row, id }) => ({ id: row.id, remoteId: id })), now);
    } catch (error) {
      this.#taken = [...taken, ...this.#taken]; // kept for the next pass: they stay in flight, claimed by this process
      throw error;
    }
    const back = new Set<string>();
    for (const { row, id, note } of taken) {
      this.#logOf(row).info(note, { remoteId: id });
      this.#options.onAttempt?.(row, { ok: true, id }, "delivered");
      if (channelIsBack(row)) back.add(row.channel);
    }
    // A delivery that had failed went through: the channel is back, and what waits out its backoff goes now.
    for (const channel of back) {
      if ((await this.#store.retryNow(channel, now)) > 0) this.#options.log.info("the channel answers again; sending what waited for it now", { channel });
    }
  }

  #logOf(row: Notification): Logger {
    const topic = row.channel === builtInChannel ? this.#options.channels.topicOf(row.topic) : null;
    return this.#options.log.child({ server: row.serverId, service: row.serviceId, kind: row.kind, channel: row.channel, ...(topic ? { topic } : {}) });
  }

  async #pass(): Promise<number> {
    await this.#markTaken();
    // The channels as stored, read again at most once a second: a changed channel is used within a second (a
    // read per pass was a tenth of delivering a burst).
    const now = this.#options.clock.now();
    if (now - this.#channelsReadAt >= 1000) {
      this.#options.channels.update(await this.#store.channels());
      this.#channelsReadAt = now;
    }
    const perChannel = this.#options.perChannel ?? 16;
    const room = (channel: string) => perChannel - (this.#inFlight.get(channel) ?? 0);
    // Not those this process is sending, nor those sent since the marks above (they are marked by the next pass).
    const busy = [...this.#sending.keys(), ...this.#taken.map((t) => t.row.id)];
    const due = await this.#store.claimNotifications(this.#options.instance, this.#options.clock.now(), room, busy);
    // A channel made since the last read is not "no such channel": read them again before saying so.
    if (due.some((row) => !this.#options.channels.knows(row.channel))) {
      this.#options.channels.update(await this.#store.channels());
      this.#channelsReadAt = now;
    }
    for (const row of due) {
      this.#inFlight.set(row.channel, (this.#inFlight.get(row.channel) ?? 0) + 1);
      const sending: Promise<void> = this.#deliver(row)
        .catch(async (error: unknown) => {
          this.#options.log.error("a notification's delivery failed unexpectedly; it is tried again in 10 s", { id: row.id, error });
          // Not at once: a pass would claim it again and fail the same way. If the store is what failed, the
          // delivery stays in flight, claimed by this process, and the next pass takes it again.
          await this.#store.markRetry(row.id, String(error), this.#options.clock.now() + unexpectedRetryMs).catch(() => undefined);
        })
        .finally(() => {
          this.#inFlight.set(row.channel, this.#inFlight.get(row.channel)! - 1);
          this.#sending.delete(row.id);
          this.#wakeSoon(); // the next delivery of its service and channel may go now
        });
      this.#sending.set(row.id, sending);
    }
    return due.length;
  }

  /** Why a RECOVERED must not go to this channel: its incident's DOWN never did (nobody there was told it was down). */
  async #orphan(row: Notification): Promise<string | undefined> {
    if (!followsDown(row)) return undefined;
    const down = await this.#store.downStatus(row.incidentId, row.channel);
    return orphaned(down) ? `its incident's DOWN was not sent to ${row.channel} (${down}): a RECOVERED alone would say nothing true` : undefined;
  }

  async #deliver(row: Notification): Promise<void> {
    const { channels, clock } = this.#options;
    const topic = row.channel === builtInChannel ? channels.topicOf(row.topic) : null;
    const log = this.#logOf(row);
    const found = channels.find(row.channel);
    const noTopic = row.channel === builtInChannel && topic === null;
    const orphan = "sender" in found && !noTopic ? await this.#orphan(row) : undefined;
    if (noTopic || orphan || ("unknown" in found && found.unknown)) {
      const error = orphan ?? ("error" in found ? found.error : "no ntfy topic: set notifyTopic on the check or start healthd with --ntfy-topic");
      await this.#store.markGivenUp(row.id, "unsent", error);
      log.warn("notification kept unsent", { why: error });
      this.#options.onAttempt?.(row, { ok: false, retryable: false, status: null, error }, "unsent");
      return;
    }
    const event = eventOf(row);
    const links = this.#options.ackLinks;
    const ackUrl = links && event.incidentId !== null && asksToAct(event.event) ? ackLink(links.publicUrl, links.secret, { id: event.incidentId, serverId: event.server, serviceId: event.service }) : undefined;
    const out: Outgoing = { event: { ...event, statusPage: this.#options.statusPage ?? null, ackUrl }, body: row.message, topic };
    let result: SendResult;
    if ("error" in found) result = { ok: false, retryable: true, status: null, error: found.error };
    else {
      const sender = found.sender;
      if (row.inFlightSince !== null && sender.findSent) {
        // A process died while sending this: the destination may have it already. Look before sending it twice.
        const id = await sender.findSent(out, row.inFlightSince);
        if (id !== undefined) {
          this.#taken.push({ row, id, note: "notification was delivered before a restart; not sending it again" });
          return;
        }
      }
      result = await sender.send(out);
    }
    if (result.ok) {
      this.#taken.push({ row, id: result.id, note: "notification delivered" });
      return;
    }
    let outcome: Outcome;
    const { retryBaseMs, retryMaxMs, giveUpAfterMs } = this.#options;
    const rules = { baseMs: retryBaseMs ?? retryDefaults.baseMs, maxMs: retryMaxMs ?? retryDefaults.maxMs, giveUpAfterMs: giveUpAfterMs ?? retryDefaults.giveUpAfterMs };
    const now = clock.now();
    const next = afterFailure(row, result.retryable, now, rules);
    if (next.then === "give-up") {
      const error = `given up after ${row.attempts + 1} attempts over ${Math.round((now - row.createdAt) / 60_000)} min: ${result.error}`;
      await this.#store.markGivenUp(row.id, "failed", error);
      log.error("notification not delivered in 24 hours; giving up on it", { error: result.error, attempts: row.attempts + 1 });
      outcome = "given_up";
    } else if (next.then === "retry") {
      await this.#store.markRetry(row.id, result.error, next.at);
      log.warn("notification not delivered; will retry", { error: result.error, attempt: row.attempts + 1, retryInMs: next.delayMs });
      outcome = "retry";
    } else {
      await this.#store.markGivenUp(row.id, "failed", result.error);
      log.error(`${row.channel} refused the notification; giving up on it`, { error: result.error });
      outcome = "failed";
    }
    this.#options.onAttempt?.(row, result, outcome);
  }
}

/** A delivery's event; a notification written before channels has none, and gets what its row says. */
function eventOf(row: Notification): NotificationEvent {
  if (row.event) return row.event;
  return {
    id: `healthd-${row.id}`, event: row.kind, server: row.serverId, service: row.serviceId, serverName: row.serverId, serviceName: row.serviceId,
    url: row.message.click ?? "", error: null, since: null, duration: null, incidentId: row.incidentId, at: new Date(row.createdAt).toISOString(),
    title: row.message.title ?? "", message: row.message.message ?? "",
  };
}
