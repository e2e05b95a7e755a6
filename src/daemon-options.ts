/** What `healthd serve` (and a test) starts the daemon with, every option documenting its default; what it tells. */
import type { Clock } from "./platform/clock.ts";
import type { Logger } from "./platform/log.ts";
import type { NtfyOptions } from "./notify/ntfy.ts";
import type { Bootstrap } from "./runtime/domain-expiry/rdap.ts";
import type { Entry, ScheduleChange, ScheduledService } from "./domain/model.ts";
import type { Outcome } from "./notify/delivery.ts";
import type { SendResult } from "./notify/outgoing.ts";
import type { Recorded } from "./runtime/recorder.ts";
import type { Notification } from "./store/store.ts";

export interface DaemonOptions {
  /** A SQLite file or a PostgreSQL URL; created (a file) and migrated when needed. */
  readonly db: string;
  readonly host: string;
  /** 0 picks a free port; `Daemon.url` tells which. */
  readonly port: number;
  readonly log: Logger;
  /** At most this many checks run at once. Default 256. */
  readonly maxInFlight?: number;
  /** At most this many API connections are open at once. Default 256. */
  readonly maxConnections?: number;
  /** Where notifications go. */
  readonly ntfy: NtfyOptions & {
    /** The topic of services without `notifyTopic`; none means such notifications are kept as unsent. */
    readonly topic?: string | undefined;
  };
  /** First retry delay of a failed notification. Default 1000 ms. */
  readonly notifyRetryBaseMs?: number;
  /** A delivery still failing this long after its notification was written is given up. Default 24 h. */
  readonly notifyGiveUpAfterMs?: number;
  /** Entries older than this many days are deleted. Default 30. */
  readonly retentionDays?: number;
  /** Hourly rollups older than this many days are deleted. Default 365. */
  readonly rollupRetentionDays?: number;
  /** When set, every endpoint but GET /healthz needs `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** Listen on a non-loopback address without a token (refused otherwise). Default false. */
  readonly allowNoToken?: boolean;
  /** /status, /status.json and /badges answer without the token, and show no URL or error text. Default false. */
  readonly publicStatus?: boolean;
  /** This node's name among the nodes sharing the database. Default: the host name. */
  readonly node?: string;
  /** Where this node probes from. Default "default". */
  readonly location?: string;
  /** A node not heard from for this long is dead and its checks are taken over. Default 15 s. */
  readonly leaseMs?: number;
  /** What the time is. Default the system's. */
  readonly clock?: Clock;
  /** Which RDAP server answers for each TLD (--rdap-bootstrap). Default IANA's file, shipped with healthd. */
  readonly rdapBootstrap?: Bootstrap;
  /** Where notifications of services that name no channel go (serve --channel); shared with the cluster. Default: ntfy. */
  readonly channels?: readonly string[];
  /** Where people reach this daemon (serve --public-url), for the status page link in notifications. */
  readonly publicUrl?: string;
  /** Peers whose X-Forwarded-For and X-Forwarded-Proto a ping's stored address and scheme come from (serve --trust-proxy), as CIDRs. Default none. */
  readonly trustProxy?: readonly string[];
  /** The environment `${NAME}`s in channels and database checks' URLs are read from. Default process.env. */
  readonly env?: NodeJS.ProcessEnv;
}

export interface DaemonEvents {
  /** A PUT or DELETE changed which checks run; the scheduler has already followed it. */
  "schedule:changed": [ScheduleChange];
  /** A check started, `lagMs` after its planned time. */
  "check:started": [ScheduledService, number];
  /** A check's entry and the service's new state are committed to the store. */
  "check:done": [CheckDone];
  /** A notification was delivered to a channel (the row says which). */
  "notify:sent": [Notification, SendResult];
  /** A delivery attempt failed (it is retried, given up, or marked failed when the destination refused it). */
  "notify:failed": [Notification, SendResult, Outcome];
}

/** A committed check with its entry (results folded during a store outage have none and are not told). */
export type CheckDone = Recorded & { readonly entry: Entry };
