/**
 * When a check runs: pure functions of the schedule, the service's identity and a time. No timers here.
 *
 * Interval checks run at a fixed rate on a grid offset by a phase drawn from the service's identity, so
 * services that share an interval spread over it (10,000 services at 60 s do not fire in one burst), and a
 * service keeps its phase across restarts and unrelated changes. Cron checks run when croner says.
 */
import { Cron } from "croner";

export type Schedule =
  | { readonly kind: "interval"; readonly periodMs: number; readonly phaseMs: number }
  | { readonly kind: "cron"; readonly cron: Cron };

const compiled = new Map<string, Cron>();

/**
 * A cron pattern (in a time zone, or the daemon's), compiled once: thousands of services and windows share a
 * few patterns, and a paused Cron asked for the runs after a given time keeps no state between calls.
 */
export function cronOf(pattern: string, timezone?: string): Cron {
  const key = `${timezone ?? ""}|${pattern}`;
  let cron = compiled.get(key);
  if (!cron) {
    if (compiled.size >= 1000) compiled.clear();
    cron = new Cron(pattern, { paused: true, ...(timezone ? { timezone } : {}) });
    compiled.set(key, cron);
  }
  return cron;
}

export function scheduleOf(check: { intervalSeconds: number | null; cron: string | null }, identity: string): Schedule {
  if (check.cron !== null) return { kind: "cron", cron: cronOf(check.cron) };
  const periodMs = (check.intervalSeconds ?? 60) * 1000;
  return { kind: "interval", periodMs, phaseMs: hash(identity) % periodMs };
}

/** The first planned run strictly after `after` (Unix ms), or undefined when the cron pattern has no more. */
export function nextRun(schedule: Schedule, after: number): number | undefined {
  if (schedule.kind === "cron") return schedule.cron.nextRun(new Date(after))?.getTime();
  const { periodMs, phaseMs } = schedule;
  const sincePhase = (((after - phaseMs) % periodMs) + periodMs) % periodMs;
  return after - sincePhase + periodMs;
}

/** Where in the first second a new or changed service is first checked: spread, so a big PUT is not a burst. */
export function firstRun(identity: string, now: number, withinMs = 1000): number {
  return now + (hash(identity) % withinMs);
}

/** FNV-1a, 32 bits: stable across processes and versions, which a phase must be. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The time between two runs near `at`: the interval, or for a cron pattern the gap between its next two runs. */
export function periodOf(check: { intervalSeconds: number | null; cron: string | null }, at: number): number {
  if (check.cron === null) return (check.intervalSeconds ?? 60) * 1000;
  const [first, second] = cronOf(check.cron).nextRuns(2, new Date(at));
  return first && second ? second.getTime() - first.getTime() : 60_000;
}
