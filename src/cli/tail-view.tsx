/**
 * The terminal UI of `healthd tail`: one row per service (status, last latency, a sparkline of recent
 * latencies with failures marked, consecutive failures, time since its last check) and the recent failures
 * below. It starts from the stored state of every service, then follows new entries, and takes each service's
 * stored state again after them where it is given (slow, down since its incident's start). Services that are down
 * come first; the header stays; rows that do not fit are counted, not scrolled off; narrow terminals lose the
 * least needed columns first. `q` quits. Colour only when wanted (never with NO_COLOR): status is a word too.
 */
import { Box, Text, useApp, useInput, useStdout } from "ink";
import { useEffect, useState } from "react";
import type { NamedEntry } from "../store/store.ts";
import { systemClock } from "../platform/clock.ts";
import { every } from "../platform/tick.ts";
import { duration } from "../policy/message.ts";
import { outageMs } from "../policy/outage.ts";

export interface Row {
  readonly name: string;
  /** null before the service's first check. */
  readonly ok: boolean | null;
  /** Up, but its last check passed slower than its slowMs (the API's degraded). */
  readonly slow?: boolean;
  /** Its open incident's start (its first failed check), Unix ms; null or absent without one. */
  readonly since?: number | null;
  readonly latencyMs: number | null;
  readonly consecutiveFailures: number;
  /** Unix ms of the last check, or null. */
  readonly lastAt: number | null;
  /** Latencies of recent checks; negative marks a failure. */
  readonly recent: readonly number[];
}

export interface TailViewProps {
  /** Every service in scope, as stored when tail started. */
  readonly initial: readonly Row[];
  /**
   * Subscribe to batches of new entries, each with the services in scope as stored after it where they could
   * be read; answers an unsubscribe function.
   */
  readonly subscribe: (onEntries: (entries: readonly NamedEntry[], stored?: readonly Row[]) => void) => () => void;
  /** Colours on (a terminal without NO_COLOR). Default true. */
  readonly colour?: boolean;
  /** The clock for "time since last check". Default the system's. */
  readonly now?: () => number;
}

interface State {
  readonly rows: ReadonlyMap<string, Row>;
  readonly failures: readonly NamedEntry[];
}

const sparkWidth = 20;
const bars = "▁▂▃▄▅▆▇█";

/**
 * Fold a batch of entries into the rows and the recent failures: pure, so it is tested on its own. `stored`:
 * the services as the daemon left them after these entries; what they say of status, slowness, the incident's
 * start and the failures in a row stands over what the entries alone suggest.
 */
export function fold(state: State, entries: readonly NamedEntry[], stored: readonly Row[] = []): { rows: Map<string, Row>; failures: NamedEntry[] } {
  const rows = new Map(state.rows);
  const failures = [...state.failures];
  for (const e of entries) {
    const name = `${e.server}/${e.service}`;
    const before = rows.get(name);
    // A heartbeat's start or log is a sign of life, not a result: it passes nothing and fails nothing.
    if (e.kind === "start" || e.kind === "log") {
      rows.set(name, { name, ok: null, latencyMs: null, consecutiveFailures: 0, recent: [], ...before, lastAt: e.checkedAt });
      continue;
    }
    rows.set(name, {
      name,
      ok: e.ok,
      since: e.ok ? null : (before?.since ?? null),
      latencyMs: e.latencyMs,
      consecutiveFailures: e.ok ? 0 : (before?.consecutiveFailures ?? 0) + 1,
      lastAt: e.checkedAt,
      recent: [...(before?.recent ?? []), e.ok ? e.latencyMs : -1].slice(-sparkWidth),
    });
    if (!e.ok) failures.unshift(e);
  }
  for (const s of stored) {
    const before = rows.get(s.name);
    rows.set(s.name, before ? { ...before, ok: s.ok, slow: s.slow, since: s.since, consecutiveFailures: s.consecutiveFailures } : s);
  }
  return { rows, failures: failures.slice(0, 5) };
}

/** The status word: DOWN (for how long, from its incident's start), slow (up, slower than its slowMs), up, or … before its first check. */
export function status(r: Row, now: number): string {
  if (r.ok === null) return "…";
  if (!r.ok) return r.since == null ? "DOWN" : `DOWN ${duration(outageMs({ startedAt: r.since, closedAt: null }, now))}`;
  return r.slow ? "slow" : "up";
}

/** Down first, then not yet checked, then up; by name within each. */
export function order(rows: Iterable<Row>): Row[] {
  const rank = (r: Row) => (r.ok === false ? 0 : r.ok === null ? 1 : 2);
  return [...rows].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
}

export function sparkline(recent: readonly number[]): string {
  const max = Math.max(1, ...recent);
  return recent.map((ms) => (ms < 0 ? "✗" : bars[Math.min(bars.length - 1, Math.floor((ms / max) * (bars.length - 1)))])).join("");
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.floor(s / 60)}m ago` : `${Math.floor(s / 3600)}h ago`;
}

/** Which columns fit `width`: the sparkline goes first, then LAST; name, status, latency and FAILS stay. */
export function columns(width: number): { recent: boolean; last: boolean } {
  return { recent: width >= 80, last: width >= 56 };
}

export function TailView({ initial, subscribe, colour = true, now = systemClock.now }: TailViewProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [state, setState] = useState<State>({ rows: new Map(initial.map((r) => [r.name, r])), failures: [] });
  const [, setTick] = useState(0);

  useEffect(() => subscribe((entries, stored) => setState((s) => fold(s, entries, stored))), [subscribe]);
  useEffect(() => {
    return every(systemClock, 1000)(() => setTick((t) => t + 1));
  }, []);
  useInput((input) => {
    if (input === "q") exit();
  });

  const width = stdout.columns || 80;
  const show = columns(width);
  const rows = order(state.rows.values());
  // Header, the hidden count, the failures with their title and margin, and the footer take the rest.
  const room = Math.max(1, (stdout.rows || 24) - 3 - (state.failures.length > 0 ? state.failures.length + 2 : 0) - 1);
  const visible = rows.length > room ? rows.slice(0, room - 1) : rows;
  const hidden = rows.slice(visible.length);
  const nameWidth = Math.min(40, Math.max(7, ...rows.map((r) => r.name.length)), Math.max(7, width - 30));
  const paint = (ok: boolean | null, slow = false) => (colour && ok !== null ? { color: !ok ? "red" : slow ? "yellow" : "green" } : {});
  const statusWidth = Math.max(6, ...visible.map((r) => status(r, now()).length));
  return (
    <Box flexDirection="column" width={width}>
      <Text bold wrap="truncate">
        {`${"SERVICE".padEnd(nameWidth)}  ${"STATUS".padEnd(statusWidth)}  LATENCY${show.recent ? `  ${"RECENT".padEnd(sparkWidth)}` : ""}  FAILS${show.last ? "  LAST" : ""}`}
      </Text>
      {rows.length === 0 && <Text dimColor={colour}>no services in scope yet; waiting for some…</Text>}
      {visible.map((r) => (
        <Text key={r.name} wrap="truncate">
          {r.name.length > nameWidth ? `${r.name.slice(0, nameWidth - 1)}…` : r.name.padEnd(nameWidth)}
          {"  "}
          <Text {...paint(r.ok, r.slow)}>{status(r, now()).padEnd(statusWidth)}</Text>
          {`  ${(r.latencyMs === null ? "" : `${r.latencyMs.toFixed(0)} ms`).padStart(7)}`}
          {show.recent ? `  ${sparkline(r.recent).padEnd(sparkWidth)}` : ""}
          {`  ${String(r.consecutiveFailures).padStart(5)}`}
          {show.last ? `  ${r.lastAt === null ? "never" : ago(now() - r.lastAt)}` : ""}
        </Text>
      ))}
      {hidden.length > 0 && (
        <Text dimColor={colour}>{`… ${hidden.length} more service${hidden.length === 1 ? "" : "s"} below (${hidden.filter((r) => r.ok === false).length} down); a taller terminal shows them`}</Text>
      )}
      {state.failures.length > 0 && (
        <Box flexDirection="column" marginTop={1}>
          <Text bold>RECENT FAILURES</Text>
          {state.failures.map((f) => (
            <Text key={f.id} wrap="truncate" {...paint(false)}>
              {`${new Date(f.checkedAt).toISOString().slice(11, 19)}  ${f.server}/${f.service}  ${f.errorKind}: ${f.error}`}
            </Text>
          ))}
        </Box>
      )}
      <Text dimColor={colour}>q quits</Text>
    </Box>
  );
}
