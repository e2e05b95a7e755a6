import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { render as inkRender } from "ink";
import { createElement } from "react";
import { columns, fold, order, sparkline, TailView, type Row } from "../src/cli/tail-view.tsx";
import type { NamedEntry } from "../src/store/store.ts";
import { settle } from "./support/clock.ts";
import { nextEvent } from "./support/events.ts";

const at = Date.UTC(2026, 10, 21, 12, 0, 0);
let nextId = 1;
const entry = (service: string, ok: boolean, latencyMs: number, secondsAgo = 0): NamedEntry => ({
  id: nextId++,
  server: "web-01",
  service,
  checkedAt: at - secondsAgo * 1000,
  ok,
  status: ok ? 200 : 503,
  latencyMs,
  errorKind: ok ? null : "status",
  error: ok ? null : "status 503 was not expected (expected 2xx)",
  matched: ok ? 0 : null,
  location: "default",
  type: "http",
  kind: null,
  exitCode: null,
  durationMs: null,
  body: null,
  answers: null,
  method: null,
  userAgent: null,
  remoteAddr: null,
  scheme: null,
  rid: null,
});
const stored = (name: string, ok: boolean | null, consecutiveFailures = 0): Row => ({
  name,
  ok,
  latencyMs: ok === null ? null : 20,
  consecutiveFailures,
  lastAt: ok === null ? null : at - 30_000,
  recent: ok === null ? [] : [ok ? 20 : -1],
});

/** A feed the test pushes entries into, as followEntries would. */
function feed() {
  let listener: ((entries: readonly NamedEntry[]) => void) | undefined;
  return {
    subscribe: (fn: (entries: readonly NamedEntry[]) => void) => ((listener = fn), () => (listener = undefined)),
    push: (...entries: NamedEntry[]) => listener?.(entries),
  };
}

/** A terminal of a given size for ink to draw on; the last frame is what a person sees. */
class Terminal extends EventEmitter {
  frames: string[] = [];
  constructor(
    readonly columns: number,
    readonly rows: number,
  ) {
    super();
  }
  write = (frame: string) => {
    this.frames.push(frame);
    this.emit("frame", frame);
  };
  lastFrame = () => this.frames.at(-1) ?? "";
}

class Keyboard extends EventEmitter {
  isTTY = true;
  data: string | null = null;
  write(data: string) {
    this.data = data;
    this.emit("readable");
    this.emit("data", data);
  }
  read = () => {
    const data = this.data;
    this.data = null;
    return data;
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
}

function draw(props: Parameters<typeof TailView>[0], columns = 100, rows = 30) {
  const stdout = new Terminal(columns, rows);
  const stdin = new Keyboard();
  const app = inkRender(createElement(TailView, { now: () => at, ...props }), {
    stdout: stdout as never,
    stdin: stdin as never,
    debug: true,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  return { stdout, stdin, app };
}

test("fold: rows per service with consecutive failures and a window of recent latencies", () => {
  const state = fold({ rows: new Map([["web-01/a", stored("web-01/a", false, 56)]]), failures: [] }, [entry("a", false, 5), entry("b", true, 1)]);
  const a = state.rows.get("web-01/a")!;
  assert.deepEqual([a.ok, a.consecutiveFailures, a.recent], [false, 57, [-1, -1]], "the count goes on from the stored one");
  assert.equal(state.failures.length, 1);
  assert.equal(sparkline([10, 5, -1, 0]), "█▄✗▁");
  assert.deepEqual(order([stored("b", true), stored("a", null), stored("c", false), stored("a2", false)]).map((r) => r.name), ["a2", "c", "a", "b"]);
  // A heartbeat's start is a sign of life, not a pass: the failures in a row stand.
  const started = fold(state, [{ ...entry("a", true, 0), type: "heartbeat", kind: "start" }]).rows.get("web-01/a")!;
  assert.deepEqual([started.ok, started.consecutiveFailures, started.lastAt], [false, 57, at]);
  assert.deepEqual([columns(100), columns(60), columns(40)], [{ recent: true, last: true }, { recent: false, last: true }, { recent: false, last: false }]);
});

test("the TUI starts from the stored state, puts down services first, follows new entries, and quits on q", async () => {
  const f = feed();
  const ui = draw({ initial: [stored("web-01/homepage", true), stored("web-01/api", false, 56), stored("web-01/new", null)], subscribe: f.subscribe });
  await settle();
  let lines = ui.stdout.lastFrame().split("\n");
  assert.match(lines[0]!, /^SERVICE\s+STATUS\s+LATENCY\s+RECENT\s+FAILS\s+LAST/);
  assert.match(lines[1]!, /^web-01\/api\s+DOWN\s+20 ms\s+✗\s+56\s+30s ago/);
  assert.match(lines[2]!, /^web-01\/new\s+…\s+0\s+never/);
  assert.match(lines[3]!, /^web-01\/homepage\s+up\s+20 ms\s+█\s+0\s+30s ago/);
  const updated = nextEvent<[string]>(ui.stdout, "frame", (f) => /homepage\s+DOWN/.test(f));
  f.push(entry("homepage", false, 80, 1));
  const [frame] = await updated;
  assert.match(frame, /web-01\/homepage\s+DOWN\s+80 ms\s+\S+\s+1\s+1s ago/);
  assert.match(frame, /RECENT FAILURES\n11:59:59 {2}web-01\/homepage {2}status: status 503 was not expected/);
  ui.stdin.write("q");
  await ui.app.waitUntilExit();
});

test("more services than rows: the header stays, down ones show, the rest are counted; narrow terminals drop columns", async () => {
  const initial = Array.from({ length: 40 }, (_, i) => stored(`web-01/s${String(i).padStart(2, "0")}`, i % 10 !== 3, i % 10 === 3 ? 2 : 0));
  const ui = draw({ initial, subscribe: feed().subscribe }, 60, 12);
  await settle();
  const lines = ui.stdout.lastFrame().split("\n");
  assert.match(lines[0]!, /^SERVICE\s+STATUS\s+LATENCY\s+FAILS\s+LAST$/, "no RECENT column at 60 columns");
  assert.ok(lines.length <= 12, `${lines.length} lines on a 12-line terminal`);
  assert.deepEqual(lines.slice(1, 5).map((l) => l.split(/\s+/)[0]), ["web-01/s03", "web-01/s13", "web-01/s23", "web-01/s33"]);
  assert.ok(lines.some((l) => /^… \d+ more services below \(0 down\)/.test(l)), lines.join("\n"));
  assert.ok(lines.every((l) => l.length <= 60), "nothing is pushed past the edge");
  ui.app.unmount();
});

test("without colour (NO_COLOR), the table carries no colour codes and still says each status", async () => {
  const ui = draw({ initial: [stored("web-01/api", false, 3), stored("web-01/home", true)], subscribe: feed().subscribe, colour: false });
  await settle();
  const frame = ui.stdout.lastFrame();
  assert.doesNotMatch(frame, /\x1b\[3[12]m/);
  assert.match(frame, /web-01\/api\s+DOWN/);
  ui.app.unmount();
});
