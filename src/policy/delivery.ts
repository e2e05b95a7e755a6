/**
 * The outbox's rules: pure. A delivery that fails is retried with capped exponential backoff, for up to a day
 * after its notification was written, then given up; one the destination refuses as invalid is failed at once.
 * A RECOVERED whose incident's DOWN never reached a channel is not sent there. A DOWN kept unsent for want of
 * an ntfy topic is queued again once there is one. notify/delivery.ts sends and asks; the store writes.
 */
import { builtInChannel } from "../domain/schema/channel.ts";

export interface RetryRules {
  /** The first retry's delay; each later one doubles. */
  readonly baseMs: number;
  /** Delays stop growing here. */
  readonly maxMs: number;
  /** A delivery still failing this long after its notification was written is given up. */
  readonly giveUpAfterMs: number;
}

/** 1 s, doubling up to 5 minutes, for 24 hours. */
export const retryDefaults: RetryRules = { baseMs: 1000, maxMs: 300_000, giveUpAfterMs: 86_400_000 };

/** What to do with a delivery whose attempt failed. */
export type AfterFailure =
  | { readonly then: "retry"; readonly at: number; readonly delayMs: number }
  /** Retrying would go past the give-up time: failed, with the attempts it took. */
  | { readonly then: "give-up" }
  /** The destination refused it as invalid: failed, not retried. */
  | { readonly then: "fail" };

/**
 * After attempt number `attempts + 1` of a delivery written at `createdAt` failed at `now`: retry it after the
 * backoff, unless the retry would come after the give-up time, or the failure is not worth a retry.
 */
export function afterFailure(delivery: { readonly attempts: number; readonly createdAt: number }, retryable: boolean, now: number, rules: RetryRules = retryDefaults): AfterFailure {
  if (!retryable) return { then: "fail" };
  const delayMs = Math.min(rules.baseMs * 2 ** delivery.attempts, rules.maxMs);
  if (now + delayMs > delivery.createdAt + rules.giveUpAfterMs) return { then: "give-up" };
  return { then: "retry", at: now + delayMs, delayMs };
}

/**
 * A delivery that failed unexpectedly (healthd's fault or the store's, not the destination's) is tried again
 * this much later: not at once, or the next pass would claim it again and fail the same way.
 */
export const unexpectedRetryMs = 10_000;

/** A channel took a delivery it had failed before: it is back, and what waits out its backoff goes now. */
export function channelIsBack(delivered: { readonly attempts: number }): boolean {
  return delivered.attempts > 0;
}

/** Whether a delivery is a RECOVERED of an incident, whose DOWN's fate on the same channel decides it (see orphaned). */
export function followsDown(delivery: { readonly kind: string; readonly incidentId: number | null }): delivery is { readonly kind: "recovered"; readonly incidentId: number } {
  return delivery.kind === "recovered" && delivery.incidentId !== null;
}

/**
 * Whether a RECOVERED must not go to a channel because its incident's DOWN never did (kept unsent, or failed):
 * nobody there was told it was down, and a RECOVERED alone would say nothing true. A DOWN still pending, or
 * none written (the incident opened with notifications off), does not hold it.
 */
export function orphaned(down: "pending" | "delivered" | "failed" | "unsent" | undefined): down is "failed" | "unsent" {
  return down === "unsent" || down === "failed";
}

/** The unsent notifications requeueing looks at; the store's query narrows to them (the outbox may hold many unsent rows). */
export const requeueCandidates = { status: "unsent", channel: builtInChannel, kind: "down" } as const;

/** An unsent notification as requeueing sees it: its service's notifyTopic now, and whether its incident is open. */
export interface UnsentNotification {
  readonly id: number;
  readonly channel: string;
  readonly kind: string;
  readonly incidentOpen: boolean;
  readonly notifyTopic: string | null;
}

/**
 * Which unsent notifications go back into the outbox, with which topic (null: the cluster's default): the
 * DOWNs to ntfy of incidents still open, kept unsent for want of a topic, that now have one (their service's
 * notifyTopic, given since, or the cluster's default when there is one: `defaultTopic`). Reminders kept
 * unsent stay so: they spoke of a moment that is over, and the next one comes on time.
 */
export function requeue(unsent: readonly UnsentNotification[], defaultTopic: boolean): { id: number; topic: string | null }[] {
  return unsent
    .filter((n) => n.channel === requeueCandidates.channel && n.kind === requeueCandidates.kind && n.incidentOpen && (n.notifyTopic !== null || defaultTopic))
    .map((n) => ({ id: n.id, topic: n.notifyTopic }));
}
