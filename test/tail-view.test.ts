import assert from "node:assert/strict";
import { test } from "node:test";
import { render } from "ink-testing-library";
import { createElement } from "react";
import { fold, sparkline, TailView } from "../src/cli/tail-view.tsx";
import type { NamedEntry } from "../src/model.ts";
import { settle } from "./support/clock.ts";

const at = Date.UTC(2026, 10, 21, 12, 0, 0);
let nextId = 1;
const entry = (service: string, ok: boolean, latencyMs: number, secondsAgo = 0): NamedEntry => ({
  id: String(nextId++),
  server: "web-01",
  service,
  checkedAt: new Date(at - secondsAgo * 1000).toISOString(),
  ok,
  status: ok ? 200 : 503,
  latencyMs,
  errorKind: ok ? null : "status",
  error: ok ? null : "status 503 was not expected (expected 2xx)",
  matched: ok ? 0 : null,
});

/** A feed the test pushes entries into, as followEntries would. */
function feed() {
  let listener: ((entries: readonly NamedEntry[]) => void) | undefined;
  return {
    subscribe: (fn: (entries: readonly NamedEntry[]) => void) => ((listener = fn), () => (listener = undefined)),
    push: (...entries: NamedEntry[]) => listener?.(entries),
  };
}

test("fold: rows per service with consecutive failures and a window of recent latencies", () => {
  const state = fold({ rows: new Map(), failures: [] }, [entry("a", true, 10), entry("a", false, 5), entry("a", false, 5), entry("b", true, 1)]);
  const a = state.rows.get("web-01/a")!;
  assert.deepEqual([a.ok, a.consecutiveFailures, a.recent], [false, 2, [10, -1, -1]]);
  assert.equal(state.failures.length, 2);
  assert.equal(sparkline([10, 5, -1, 0]), "█▄✗▁");
});

test("the TUI shows a row per service, recent failures, and quits on q", async () => {
  const f = feed();
  const ui = render(createElement(TailView, { subscribe: f.subscribe, now: () => at }));
  assert.match(ui.lastFrame()!, /waiting for checks/);
  f.push(entry("homepage", true, 12, 3), entry("api", true, 40, 2), entry("api", false, 80, 1));
  await settle();
  const frame = ui.lastFrame()!;
  const lines = frame.split("\n");
  assert.match(lines[0]!, /^SERVICE\s+STATUS\s+LATENCY\s+RECENT\s+FAILS\s+LAST/);
  assert.match(frame, /web-01\/api\s+DOWN\s+80 ms\s+█✗\s+1\s+1s ago/);
  assert.match(frame, /web-01\/homepage\s+up\s+12 ms\s+█\s+0\s+3s ago/);
  assert.match(frame, /RECENT FAILURES\n11:59:59 {2}web-01\/api {2}status: status 503 was not expected/);
  ui.stdin.write("q");
  await settle();
  ui.unmount();
});
