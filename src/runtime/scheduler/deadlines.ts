/**
 * The heartbeats' deadlines this node keeps: when to look whether a ping is missing or a run takes too long.
 * One timer waits for the earliest in a heap, whatever their number (10,000 heartbeats that nobody pings cost
 * a wake-up at each deadline, not a timer each). When one comes, `onDue` is told; what the look finds is the
 * policy's to decide, and the next deadline comes back with it (plan).
 */
import { systemClock, type Clock } from "../../platform/clock.ts";
import type { HeartbeatCheck, ScheduledService } from "../../domain/model.ts";
import { TimeHeap } from "./heap.ts";

export type Heartbeat = ScheduledService<HeartbeatCheck & { notify: boolean; notifyThreshold: number }>;

// Timers further out than this are re-armed, not trusted (setTimeout overflows past 2^31 ms).
const maxTimerMs = 3_600_000;

export class Deadlines {
  readonly #clock: Clock;
  readonly #onDue: (service: Heartbeat, at: number) => void;
  /** Each heartbeat kept here, and its next deadline (Infinity: none). Heap entries for other times are stale. */
  readonly #planned = new Map<number, { readonly service: Heartbeat; at: number }>();
  readonly #heap = new TimeHeap<number>();
  #timer: unknown;
  #timerAt = Infinity;
  #stopped = false;

  constructor(onDue: (service: Heartbeat, at: number) => void, clock: Clock = systemClock) {
    this.#onDue = onDue;
    this.#clock = clock;
  }

  get size(): number {
    return this.#planned.size;
  }

  services(): Heartbeat[] {
    return Array.from(this.#planned.values(), (p) => p.service);
  }

  /** The heartbeat of `key`, if it is kept here. */
  get(key: number): Heartbeat | undefined {
    return this.#planned.get(key)?.service;
  }

  /** Keep `service`, with its next deadline at `at` (null: look now, it is not known yet). */
  plan(service: Heartbeat, at: number | null): void {
    if (this.#stopped) return;
    const when = at ?? this.#clock.now();
    this.#planned.set(service.key, { service, at: when });
    if (Number.isFinite(when)) this.#heap.push(when, service.key);
    this.#arm();
  }

  /** Move a heartbeat kept here to its new deadline; one not kept here (another node keeps it) is left alone. */
  replan(key: number, at: number | null): void {
    const planned = this.#planned.get(key);
    if (planned) this.plan(planned.service, at);
  }

  remove(keys: Iterable<number>): void {
    for (const key of keys) this.#planned.delete(key);
  }

  stop(): void {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#planned.clear();
  }

  #arm(): void {
    // Drop stale entries from the top so the timer waits for a real deadline.
    for (let top = this.#heap.peekTime(); top !== undefined; top = this.#heap.peekTime()) {
      const key = this.#heap.peek()!;
      if (this.#planned.get(key)?.at === top) break;
      this.#heap.pop();
    }
    const at = this.#heap.peekTime();
    if (at === undefined || at >= this.#timerAt) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), Math.min(Math.max(0, at - this.#clock.now()), maxTimerMs));
  }

  #fire(): void {
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    for (let top = this.#heap.peekTime(); top !== undefined && top <= now; top = this.#heap.peekTime()) {
      const key = this.#heap.pop()!;
      const planned = this.#planned.get(key);
      if (planned?.at !== top) continue;
      // Until the look's answer plans the next one, nothing more is due for it.
      planned.at = Infinity;
      this.#onDue(planned.service, now);
    }
    this.#arm();
  }
}
