/**
 * npm run bench:first-checks — what a daemon's first checks cost, phase by phase, in a minute rather than
 * bench:everyday's hour: a fresh process makes 3,000 HTTP checks against a local target, PER (5)
 * started together and then stored as one batch through the write path (a SQLite file), as a daemon with
 * 100 services at 20 s does every second, back to back. CPU (the process's, all threads) is split into the
 * check (from start to the last answer) and the record (storing the batch), per range of checks: 0-300 (cold),
 * 300-1,500 (what bench:everyday's first minutes see) and 1,500-3,000. The same in two more modes, each in a
 * fresh process, alternating within a run: `undici`, a bare `new Client()` + `request()` + `body.text()` per
 * check, and `floor`, bench:everyday's floor (a fresh node:net connection, a fixed request, no HTTP parser);
 * both store their results the same way, so the record column compares like with like. Median of RUNS (3).
 * It measures warm-up by the number of checks made, not by the clock: V8 compiles what has run often enough,
 * so the first 1,500 checks cost here about what they cost over a daemon's first five minutes. A/B: ROOT
 * names another checkout (a worktree of an older commit) whose src is measured instead.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { floorExchange, floorRequest, undiciExchange } from "./exchanges.ts";
import { fixed, median } from "./stats.ts";

const modes = ["healthd", "undici", "floor"] as const;
type Mode = (typeof modes)[number];
const ranges = [
  [0, 300],
  [300, 1500],
  [1500, 3000],
] as const;
interface Report {
  /** CPU ms per check, per range: [check, record]. */
  readonly perRange: (readonly [number, number])[];
}

const child = process.env.FIRST_CHECKS_MODE as Mode | undefined;
if (child) {
  process.send!(await measure(child, Number(process.env.TARGET_PORT)));
  process.disconnect();
} else {
  await parent();
}

async function parent(): Promise<void> {
  const runs = Number(process.env.RUNS ?? 3);
  const target = fork(new URL("./target.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
  const [{ port }] = (await once(target, "message")) as [{ port: number }];
  const results = new Map<Mode, Report[]>(modes.map((m) => [m, []]));
  for (let run = 1; run <= runs; run++) {
    for (const mode of modes) {
      const worker = fork(fileURLToPath(import.meta.url), { execArgv: ["--import", "tsx"], env: { ...process.env, FIRST_CHECKS_MODE: mode, TARGET_PORT: String(port) } });
      const [report] = (await once(worker, "message")) as [Report];
      await once(worker, "exit");
      results.get(mode)!.push(report);
    }
    console.log(`run ${run}/${runs}: ` + modes.map((m) => `${m} ${line(results.get(m)!.slice(-1))}`).join("; "));
  }
  const med = (mode: Mode, range: number, part: 0 | 1) => median(results.get(mode)!.map((r) => r.perRange[range]![part]));
  for (const mode of modes) console.log(`median ${mode}: ${line(results.get(mode)!)}`);
  ranges.forEach(([from, to], i) => {
    const floor = med("floor", i, 0) + med("floor", i, 1);
    const total = (m: Mode) => med(m, i, 0) + med(m, i, 1);
    console.log(
      `checks ${from}-${to}: healthd ${fixed(total("healthd"), 3)} ms (check ${fixed(med("healthd", i, 0), 3)} + record ${fixed(med("healthd", i, 1), 3)}), ` +
        `bare undici ${fixed(total("undici"), 3)}, floor ${fixed(floor, 3)}; healthd/floor ${fixed(total("healthd") / floor, 2)}, ` +
        `checks alone healthd/floor ${fixed(med("healthd", i, 0) / med("floor", i, 0), 2)}`,
    );
  });
  target.kill();
}

function line(reports: Report[]): string {
  return ranges
    .map(([from, to], i) => {
      const [check, record] = [0, 1].map((part) => median(reports.map((r) => r.perRange[i]![part]!)));
      return `${from}-${to} ${fixed(check!, 3)}+${fixed(record!, 3)}`;
    })
    .join(", ");
}

async function measure(mode: Mode, port: number): Promise<Report> {
  const root = process.env.ROOT ?? fileURLToPath(new URL("..", import.meta.url));
  const { probe } = await import(`${root}/src/checks/probe.ts`);
  const { systemClock } = await import(`${root}/src/platform/clock.ts`);
  const { serverDocument } = await import(`${root}/src/domain/schema/index.ts`);
  const { open } = await import(`${root}/test/support/raw.ts`);
  const per = Number(process.env.PER ?? 5);
  const checks = ranges.at(-1)![1];
  const url = `http://127.0.0.1:${port}/first-checks`;
  const target = new URL(url);
  const request = floorRequest(target, target.pathname);
  const dir = mkdtempSync(join(tmpdir(), "healthd-bench-first-"));
  const store = await open(join(dir, "bench.db"), { mode: "serve" });
  try {
    const services = Array.from({ length: 100 }, (_, i) => ({ id: `svc-${i}`, check: { url, notify: false } }));
    await store.applyServers(new Map([["server-0", serverDocument.parse({ services })]]), { now: Date.now() });
    const scheduled = await store.scheduledServices();
    const check = async (service: { check: unknown }) => {
      if (mode === "healthd") return probe(service.check, { userAgent: "bench", clock: systemClock });
      if (mode === "undici") await undiciExchange(target, target.pathname);
      else await floorExchange(target, request);
      return { ok: true, status: 200, latencyMs: 1, matched: 0, errorKind: null, error: null, checkedAt: systemClock.now() };
    };
    const cpu = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
    const sums = ranges.map(() => [0, 0]);
    for (let made = 0; made < checks; made += per) {
      const chosen = Array.from({ length: per }, (_, i) => scheduled[(made + i) % scheduled.length]!);
      const c0 = cpu();
      const outcomes = await Promise.all(chosen.map(check));
      const c1 = cpu();
      await store.recordResults(chosen.map((s, i) => ({ serviceKey: s.key, outcome: outcomes[i] })), systemClock.now());
      const c2 = cpu();
      if (!outcomes.every((o) => o.ok)) throw new Error(`a check failed: ${JSON.stringify(outcomes.find((o) => !o.ok))}`);
      const range = ranges.findIndex(([from, to]) => made >= from && made < to);
      if (range < 0) continue;
      sums[range]![0]! += c1 - c0;
      sums[range]![1]! += c2 - c1;
    }
    return { perRange: ranges.map(([from, to], i) => [sums[i]![0]! / (to - from), sums[i]![1]! / (to - from)] as const) };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
