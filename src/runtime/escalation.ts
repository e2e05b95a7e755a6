/**
 * The periodic look for escalation steps due (policy/escalation.ts decides, the store writes each step once
 * with its notification). Done by the cluster's housekeeper, as retention is; the step's key keeps a second
 * node that looks at the same moment (a handover) from sending it again. Steps count in minutes: a look every
 * 15 seconds is soon enough, and costs one small query when nothing is open.
 */
import type { Clock } from "../platform/clock.ts";
import type { Logger } from "../platform/log.ts";
import type { RespondingStore } from "../store/store.ts";

export interface EscalatorOptions {
  readonly clock: Clock;
  readonly log: Logger;
  /** Time between looks. Default 15 s. */
  readonly everyMs?: number;
  /** Whether this node does the cluster's housekeeping now. Default: yes. */
  readonly isHousekeeper?: () => boolean;
  /** Told when steps were queued (delivery looks at the outbox). */
  readonly onSent?: (count: number) => void;
}

export class Escalator {
  readonly #store: Pick<RespondingStore, "escalate">;
  readonly #options: EscalatorOptions;
  #timer: unknown;
  #running: Promise<number> | undefined;
  #stopped = false;

  constructor(store: Pick<RespondingStore, "escalate">, options: EscalatorOptions) {
    this.#store = store;
    this.#options = options;
  }

  start(): void {
    const every = this.#options.everyMs ?? 15_000;
    const look = () => {
      void (this.#options.isHousekeeper?.() === false ? Promise.resolve(0) : this.runOnce())
        .catch((error: unknown) => this.#options.log.error("cannot look for escalations due; looking again in a while", { error }))
        .finally(() => {
          if (!this.#stopped) this.#timer = this.#options.clock.setTimeout(look, every);
        });
    };
    // The first look a second after start: a node that replaces one that died sends what was due meanwhile.
    this.#timer = this.#options.clock.setTimeout(look, Math.min(every, 1000));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.clock.clearTimeout(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** One look; answers how many steps it sent. A second call during a look joins it. */
  runOnce(): Promise<number> {
    this.#running ??= this.#look().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #look(): Promise<number> {
    const { sent } = await this.#store.escalate(this.#options.clock.now());
    if (sent > 0) {
      this.#options.log.info("escalated incidents nobody acknowledged", { steps: sent });
      this.#options.onSent?.(sent);
    }
    return sent;
  }
}
