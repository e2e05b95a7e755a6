/** What the store refuses, and why: the errors its callers tell apart. */
import type { DependencyProblem } from "../domain/model.ts";

/** The store cannot take this now (database unreachable, read-only, disk full): try again later. */
export class StoreUnavailable extends Error {
  /**
   * The database itself turns everyone away (it is not running, shutting down or starting up), rather than
   * this process's link to it failing: no other node can use it either.
   */
  readonly down: boolean;

  constructor(
    message: string,
    /** A short code for logs and metrics: SQLITE_FULL, ECONNREFUSED, 57P01, ... */
    readonly code: string,
    options?: ErrorOptions & { readonly down?: boolean },
  ) {
    super(message, options);
    this.down = options?.down ?? false;
  }
}

const named = { pingKey: "ping key", pushToken: "push token", gatusKey: "Gatus key" } as const;

/** A heartbeat's ping key (or push token, or Gatus key) another service has: the write is refused whole. */
export class PingKeyTaken extends Error {
  constructor(
    /** The service written ("serverId/serviceId"), and the one that has the key. */
    readonly service: string,
    readonly owner: string,
    /** Which of the heartbeat's addresses it is. */
    readonly field: "pingKey" | "pushToken" | "gatusKey" = "pingKey",
  ) {
    super(`${service}: that ${field} is already the ${named[field]} of ${owner}`);
  }

  /** What is wrong with the field, and the fix, for a message at its path; `owner` as the reader may see it. */
  problem(owner = this.owner): string {
    const fix = { pingKey: "leave pingKey out and healthd makes a new one", pushToken: "set pushToken: true and healthd makes a new one", gatusKey: "give another gatusKey" };
    return `is already the ${named[this.field]} of ${owner}; ${fix[this.field]}`;
  }
}

/** A write refused whole because the graph of dependsOn would not stay whole after it: what is wrong with it. */
export class DependenciesRefused extends Error {
  constructor(readonly problems: readonly DependencyProblem[]) {
    super(`the write would break the graph of dependsOn (${problems.map((p) => p.kind).join(", ")})`);
  }
}

/** A write refused whole because a check or server would name a channel that does not exist. */
export class ChannelsRefused extends Error {
  /** `field`: where the name is, `channels` or `escalate` (a step's). */
  constructor(readonly unknown: readonly { readonly serverId: string; readonly serviceId: string | null; readonly channel: string; readonly field?: "channels" | "escalate" }[]) {
    super(`names channels that do not exist (${[...new Set(unknown.map((u) => u.channel))].join(", ")})`);
  }
}

/** A channel written with a secret as answers show it ("***") and no stored secret to keep in its place. */
export class SecretsMissing extends Error {
  constructor(
    readonly channel: string,
    /** JSON Pointers of the fields. */
    readonly paths: readonly string[],
  ) {
    super(`channel ${channel}: ${paths.join(", ")} ${paths.length === 1 ? "is" : "are"} *** with no stored secret to keep; write the secret itself, or \${NAME}`);
  }
}
