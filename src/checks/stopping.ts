/**
 * A check's end when the daemon stops: `end` runs once `signal` aborts (at once when it already has). The
 * checks that share a signal (every check of a daemon shares its scheduler's) share one listener on it: node's
 * EventTarget.addEventListener and removeEventListener, on every check, were a compile of their own in a
 * daemon's first minutes, and cost more a check than this set after (docs/benchmarks.md).
 */
const ends = new WeakMap<AbortSignal, Set<() => void>>();

/** Answers the function that forgets `end`: call it when the check is over, the signal outlives it. */
export function onStop(signal: AbortSignal | undefined, end: () => void): () => void {
  if (signal === undefined) return nothing;
  if (signal.aborted) {
    end();
    return nothing;
  }
  const waiting = ends.get(signal) ?? listen(signal);
  waiting.add(end);
  return () => void waiting.delete(end);
}

function listen(signal: AbortSignal): Set<() => void> {
  const all = new Set<() => void>();
  signal.addEventListener("abort", () => all.forEach((end) => end()), { once: true });
  ends.set(signal, all);
  return all;
}

const nothing = () => {};
