/**
 * The terminal UI of `healthd tail`: one row per service (status, last latency, a sparkline of recent
 * latencies with failures marked, consecutive failures, time since its last check) and the recent failures
 * below. `q` quits. Ink re-renders on terminal resize; rows are cut to the terminal's width.
 */
import { Box, Text, useApp, useInput, useStdout } from "ink";
import { useEffect, useState } from "react";
import type { NamedEntry } from "../model.ts";

export interface TailViewProps {
  /** Subscribe to batches of new entries; answers an unsubscribe function. */
  readonly subscribe: (onEntries: (entries: readonly NamedEntry[]) => void) => () => void;
  /** The clock for "time since last check". Default Date.now. */
  readonly now?: () => number;
}

interface Row {
  readonly name: string;
  readonly ok: boolean;
  readonly latencyMs: number;
  readonly consecutiveFailures: number;
  readonly lastAt: number;
  /** Latencies of recent checks; negative marks a failure. */
  readonly recent: readonly number[];
}

const sparkWidth = 20;
const bars = "▁▂▃▄▅▆▇█";

/** Fold a batch of entries into the rows and the recent failures: pure, so it is tested on its own. */
export function fold(
  state: { rows: ReadonlyMap<string, Row>; failures: readonly NamedEntry[] },
  entries: readonly NamedEntry[],
): { rows: Map<string, Row>; failures: NamedEntry[] } {
  const rows = new Map(state.rows);
  const failures = [...state.failures];
  for (const e of entries) {
    const name = `${e.server}/${e.service}`;
    const before = rows.get(name);
    rows.set(name, {
      name,
      ok: e.ok,
      latencyMs: e.latencyMs,
      consecutiveFailures: e.ok ? 0 : (before?.consecutiveFailures ?? 0) + 1,
      lastAt: Date.parse(e.checkedAt),
      recent: [...(before?.recent ?? []), e.ok ? e.latencyMs : -1].slice(-sparkWidth),
    });
    if (!e.ok) failures.unshift(e);
  }
  return { rows, failures: failures.slice(0, 8) };
}

export function sparkline(recent: readonly number[]): string {
  const max = Math.max(1, ...recent);
  return recent.map((ms) => (ms < 0 ? "✗" : bars[Math.min(bars.length - 1, Math.floor((ms / max) * (bars.length - 1)))])).join("");
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.floor(s / 60)}m ago` : `${Math.floor(s / 3600)}h ago`;
}

export function TailView({ subscribe, now = Date.now }: TailViewProps) {
  const { exit } = useApp();
  const { stdout } = useStdout();
  const [state, setState] = useState<{ rows: Map<string, Row>; failures: NamedEntry[] }>({ rows: new Map(), failures: [] });
  const [, setTick] = useState(0);

  useEffect(() => subscribe((entries) => setState((s) => fold(s, entries))), [subscribe]);
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), 1000);
    return () => clearInterval(timer);
  }, []);
  useInput((input) => {
    if (input === "q") exit();
  });

  const rows = [...state.rows.values()].sort((a, b) => a.name.localeCompare(b.name));
  const nameWidth = Math.min(40, Math.max(7, ...rows.map((r) => r.name.length)));
  // Long lines are truncated to the terminal's width (ink re-renders when it changes).
  return (
    <Box flexDirection="column" width={stdout.columns || 80}>
      <Text bold wrap="truncate">{`${"SERVICE".padEnd(nameWidth)}  STATUS  LATENCY  ${"RECENT".padEnd(sparkWidth)}  FAILS  LAST`}</Text>
      {rows.length === 0 && <Text dimColor>waiting for checks…</Text>}
      {rows.map((r) => (
        <Text key={r.name} wrap="truncate">
          {r.name.slice(0, nameWidth).padEnd(nameWidth)}
          {"  "}
          <Text color={r.ok ? "green" : "red"}>{(r.ok ? "up" : "DOWN").padEnd(6)}</Text>
          {`  ${`${r.latencyMs.toFixed(0)} ms`.padStart(7)}  ${sparkline(r.recent).padEnd(sparkWidth)}  `}
          {`${String(r.consecutiveFailures).padStart(5)}  ${ago(now() - r.lastAt)}`}
        </Text>
      ))}
      {state.failures.length > 0 && (
        <Box flexDirection="column" marginTop={1}>
          <Text bold>RECENT FAILURES</Text>
          {state.failures.map((f) => (
            <Text key={f.id} color="red" wrap="truncate">
              {`${f.checkedAt.slice(11, 19)}  ${f.server}/${f.service}  ${f.errorKind}: ${f.error}`}
            </Text>
          ))}
        </Box>
      )}
      <Text dimColor>q quits</Text>
    </Box>
  );
}
