/**
 * The console's read model of the overview: every service a token may see, in the state an operator acts on,
 * most urgent first, with counts by state and the filters applied. Built from the same facts as the status page
 * (status/shown.ts decides what a service is shown as), without its 90 days of history: the console is for now.
 */
import { targetOf } from "../domain/model.ts";
import { maskedCheck } from "../domain/schema/secrets.ts";
import type { Store, StoredService } from "../store/store.ts";
import { quieting, shown, upstreamRefs, type Shown } from "../status/shown.ts";

/**
 * What an operator sees a service as, in the order the overview lists them: failing (down, or blocked by a
 * dependency), late (a heartbeat due), degraded (slow), silenced (a silence or maintenance window: its
 * notifications wait, so it is already in someone's hands), paused, pending (not checked yet), up.
 */
export const consoleStates = ["failing", "late", "degraded", "silenced", "paused", "pending", "up"] as const;
export type ConsoleState = (typeof consoleStates)[number];

export interface ConsoleRow {
  readonly serverId: string;
  readonly serverName: string;
  readonly id: string;
  readonly name: string;
  /** Its labels (lowercase): shown on the row, each a link to the overview filtered by it. */
  readonly tags: readonly string[];
  readonly kind: StoredService["check"]["type"];
  readonly state: ConsoleState;
  /** What status/shown.ts says (down, blocked, late, ...): the word shown beside the state. */
  readonly shown: Shown["status"];
  readonly quietUntil: number | null;
  readonly target: string | null;
  readonly lastCheckedAt: number | null;
  /** The last check's latency (null for a heartbeat, which is told, not checked). */
  readonly latencyMs: number | null;
  readonly error: string | null;
}

export interface ConsoleFilters {
  readonly state?: ConsoleState | undefined;
  readonly server?: string | undefined;
  readonly kind?: string | undefined;
  /** A tag the service carries (lowercase, as stored). */
  readonly tag?: string | undefined;
  /** Text found in the service's id, name, server or target, case-insensitive. */
  readonly q?: string | undefined;
}

export interface ConsoleModel {
  readonly generatedAt: number;
  /** Counts by state of every service the token sees (before the filters: they say what a filter would find). */
  readonly counts: Readonly<Record<ConsoleState, number>> & { readonly all: number };
  readonly rows: readonly ConsoleRow[];
  /** The choices of the filters: the servers (id and name) and kinds the token sees. */
  readonly servers: readonly { readonly id: string; readonly name: string }[];
  readonly kinds: readonly string[];
  /** Every tag of the services the token sees, sorted. */
  readonly tags: readonly string[];
  readonly filters: ConsoleFilters;
}

/** The state an operator acts on, from what the status page shows. */
export function consoleState(s: Shown): ConsoleState {
  if (s.status === "paused") return "paused";
  if (s.quiet) return "silenced";
  if (s.status === "down" || s.status === "blocked") return "failing";
  if (s.status === "late" || s.status === "degraded" || s.status === "up") return s.status;
  return "pending";
}

const rank = new Map(consoleStates.map((s, i) => [s, i]));

/** Rows of `services` (already those the token may see), most urgent first, then by server and name. */
export function consoleRows(services: readonly StoredService[], say: (s: StoredService) => Shown): ConsoleRow[] {
  return services
    .map((s): ConsoleRow => {
      const status = say(s);
      const heartbeat = s.check.type === "heartbeat";
      return {
        serverId: s.serverId,
        serverName: s.serverName,
        id: s.id,
        name: s.name,
        tags: s.tags,
        kind: s.check.type,
        state: consoleState(status),
        shown: status.status,
        quietUntil: status.quiet?.until ?? null,
        // As a read token is shown it: the rows are shared by every viewer, and ?q= searches this, so an unmasked
        // target would let a read token guess ?api_key=... one character at a time from the rows' count.
        target: targetOf(maskedCheck(s.check)),
        lastCheckedAt: s.state?.lastCheckedAt ?? null,
        latencyMs: heartbeat ? null : (s.lastEntry?.latencyMs ?? null),
        error: s.lastEntry?.error ?? null,
      };
    })
    .sort((a, b) => rank.get(a.state)! - rank.get(b.state)! || a.serverId.localeCompare(b.serverId) || a.name.localeCompare(b.name));
}

/** Whether a row passes the filters. */
export function matches(row: ConsoleRow, f: ConsoleFilters): boolean {
  if (f.state && row.state !== f.state) return false;
  if (f.server && row.serverId !== f.server) return false;
  if (f.kind && row.kind !== f.kind) return false;
  if (f.tag && !row.tags.includes(f.tag)) return false;
  if (f.q) {
    const q = f.q.toLowerCase();
    return [row.id, row.name, row.serverId, row.serverName, row.target ?? ""].some((text) => text.toLowerCase().includes(q));
  }
  return true;
}

/** Every service's row as of `now`, most urgent first: built once and shared by every reader for up to a second (http/console.ts). */
export async function loadRows(store: Store, now: number): Promise<{ readonly at: number; readonly rows: readonly ConsoleRow[] }> {
  const services = await store.services();
  const [upstream, quiet] = await Promise.all([store.upstream(upstreamRefs(services)), quieting(store, now)]);
  return { at: now, rows: consoleRows(services, (s) => shown(s, upstream, now, quiet)) };
}

/** The overview of the rows of the servers `mayUse` allows, with the filters applied. Pure. */
export function consoleModel(loaded: { readonly at: number; readonly rows: readonly ConsoleRow[] }, mayUse: (serverId: string) => boolean, filters: ConsoleFilters): ConsoleModel {
  const all = loaded.rows.filter((r) => mayUse(r.serverId));
  const counts = Object.fromEntries(consoleStates.map((s) => [s, 0])) as Record<ConsoleState, number>;
  for (const row of all) counts[row.state]++;
  const servers = new Map(all.map((r) => [r.serverId, r.serverName]));
  return {
    generatedAt: loaded.at,
    counts: { ...counts, all: all.length },
    rows: all.filter((r) => matches(r, filters)),
    servers: [...servers].sort(([a], [b]) => a.localeCompare(b)).map(([id, name]) => ({ id, name })),
    kinds: [...new Set(all.map((r) => r.kind))].sort(),
    tags: [...new Set(all.flatMap((r) => r.tags))].sort(),
    filters,
  };
}
