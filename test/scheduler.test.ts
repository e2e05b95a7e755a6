import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../src/platform/log.ts";
import { hash, nextRun, scheduleOf } from "../src/domain/schedule.ts";
import { Scheduler } from "../src/runtime/scheduler/scheduler.ts";
import type { ScheduledService } from "../src/runtime/scheduler/scheduler.ts";
import { Alarm, Tick } from "../src/platform/tick.ts";
import { systemClock } from "../src/platform/clock.ts";
import { FakeClock, fakeTick } from "./support/clock.ts";
import { until } from "./support/events.ts";

function service(key: number, check: { intervalSeconds?: number | null; cron?: string | null; url?: string } = {}): ScheduledService {
  const full = {
    type: "http" as const,
    url: check.url ?? `http://127.0.0.1/${key}`,
    method: "GET" as const,
    headers: {},
    body: null,
    intervalSeconds: check.intervalSeconds === undefined ? 10 : check.intervalSeconds,
    cron: check.cron ?? null,
    timeoutMs: 1000,
    followRedirects: true,
    verifyTls: true,
    expect: [{ status: "2xx" as const }],
    notify: true,
    notifyThreshold: 2,
    notifyTopic: null,
    paused: false,
    recoverThreshold: 1,
    remindEveryMinutes: null,
    certWarnDays: null,
    dependsOn: [],
    channels: null,
    locations: null,
    quorum: null,
    slowMs: null,
    notifySlow: false,
    domainWarnDays: null,
    slaTarget: null,
  };
  return { key, serverId: "s", serviceId: `svc-${key}`, check: full };
}

/** A scheduler on a fake clock whose runs the test finishes by hand. */
function harness(maxInFlight = 100) {
  const clock = new FakeClock();
  const starts: { key: number; at: number; lag: number }[] = [];
  const release = new Map<number, () => void>();
  const idle = { told: 0 };
  let autoFinish = true;
  const scheduler = new Scheduler({
    clock,
    log: silentLogger,
    maxInFlight,
    onStart: (s, lag) => starts.push({ key: s.key, at: clock.now(), lag }),
    onIdle: () => idle.told++,
    run: (s) =>
      autoFinish ? Promise.resolve() : new Promise<void>((resolve) => release.set(s.key, resolve)),
  });
  return {
    clock,
    scheduler,
    starts,
    release,
    idle,
    hold: () => (autoFinish = false),
    finish(key: number) {
      release.get(key)?.();
      release.delete(key);
    },
  };
}

test("plan: fixed rate on a grid offset by a stable phase", () => {
  const schedule = scheduleOf({ intervalSeconds: 10, cron: null }, "s/a");
  assert.equal(schedule.kind, "interval");
  const phase = hash("s/a") % 10_000;
  assert.equal(nextRun(schedule, 0), phase);
  assert.equal(nextRun(schedule, phase), phase + 10_000);
  assert.equal(nextRun(schedule, phase + 1), phase + 10_000);
  assert.equal(nextRun(schedule, 1_000_000 + phase - 1), 1_000_000 + phase);
  const cron = scheduleOf({ intervalSeconds: null, cron: "*/15 * * * * *" }, "s/a");
  assert.equal(nextRun(cron, Date.UTC(2026, 0, 1, 0, 0, 1)), Date.UTC(2026, 0, 1, 0, 0, 15));
});

test("plan: services sharing an interval spread over it", () => {
  const perSecond = new Array<number>(60).fill(0);
  for (let i = 0; i < 10_000; i++) {
    const at = nextRun(scheduleOf({ intervalSeconds: 60, cron: null }, `server-${i % 50}/service-${i}`), 0)!;
    perSecond[Math.floor(at / 1000)]!++;
  }
  const mean = 10_000 / 60;
  assert.ok(Math.max(...perSecond) < mean * 1.5, `busiest second has ${Math.max(...perSecond)} checks, mean ${mean}`);
  assert.ok(Math.min(...perSecond) > mean * 0.5, `quietest second has ${Math.min(...perSecond)} checks`);
});

test("runs planned within two seconds start together, early and never late, on fewer wake-ups", async () => {
  const h = harness();
  let wakeUps = 0;
  const setTimeout = h.clock.setTimeout.bind(h.clock);
  h.clock.setTimeout = (fn, ms) => setTimeout(() => (wakeUps++, fn()), ms);
  const services = Array.from({ length: 100 }, (_, i) => service(i + 1, { intervalSeconds: 20 }));
  h.scheduler.upsert(services, { soon: false });
  const t0 = h.clock.now();
  await h.clock.advance(61_000);
  for (const s of services) {
    // Each run within two seconds (a tenth of the interval) before its plan, one per interval: the 4th may have
    // started early, by 61 s. (A plan within the first two seconds, the early window, waits for the next: see
    // the handover test below.)
    const planned = [0, 1, 2, 3].map((n) => nextRun(scheduleOf(s.check, `s/${s.serviceId}`), t0 + 2000 + n * 20_000)!);
    const at = h.starts.filter((x) => x.key === s.key).map((x) => x.at);
    assert.ok(at.length === 3 || (at.length === 4 && planned[3]! < t0 + 63_000), `${at.length} runs`);
    at.forEach((a, i) => assert.ok(a <= planned[i]! && a > planned[i]! - 2000, `run at ${a - t0}, planned at ${planned[i]! - t0}`));
  }
  assert.ok(h.starts.every((x) => x.lag === 0));
  // 5 runs a second: one wake-up every two seconds or so, not one per run.
  assert.ok(wakeUps <= 40, `${wakeUps} wake-ups for 300 runs`);
  // Still spread over the interval at two-second resolution: about 10 runs in any two seconds, never a pile-up.
  const perTwo = new Map<number, number>();
  for (const x of h.starts) perTwo.set(Math.floor((x.at - t0) / 2000), (perTwo.get(Math.floor((x.at - t0) / 2000)) ?? 0) + 1);
  assert.ok(Math.max(...perTwo.values()) <= 32, `busiest two seconds started ${Math.max(...perTwo.values())}`);
});

test("given the tick, runs start on the last tick before their plan, in as large batches, never late", async () => {
  const clock = new FakeClock();
  const tick = fakeTick(clock);
  const starts: { key: number; at: number; lag: number }[] = [];
  const scheduler = new Scheduler({ clock, log: silentLogger, tick, run: async () => {}, onStart: (s, lag) => starts.push({ key: s.key, at: clock.now(), lag }) });
  const services = Array.from({ length: 100 }, (_, i) => service(i + 1, { intervalSeconds: 20 }));
  scheduler.upsert(services, { soon: false });
  const t0 = clock.now();
  await clock.advance(61_000);
  await scheduler.stop();
  const ticks = new Set(tick.times);
  for (const s of services) {
    const at = starts.filter((x) => x.key === s.key).map((x) => x.at);
    assert.ok(at.length >= 3, `${at.length} runs`);
    for (const a of at) {
      const planned = nextRun(scheduleOf(s.check, `s/${s.serviceId}`), a - 1)!;
      assert.ok(planned - a < 2000, `run at ${a - t0}, planned at ${planned - t0}: at most a tenth of the interval early`);
    }
  }
  // Every wake-up for runs is a tick's (an early window of two seconds always holds one), every other one or so.
  const wakeUps = new Set(starts.map((x) => x.at));
  assert.ok([...wakeUps].every((at) => ticks.has(at)), "runs started on a wake-up of their own");
  assert.ok(wakeUps.size <= 32, `${wakeUps.size} wake-ups for ${starts.length} runs`);
  assert.ok(starts.every((x) => x.lag === 0));
});

test("given the tick, a run whose early window holds no tick starts at its own time", async () => {
  const clock = new FakeClock();
  const tick = fakeTick(clock);
  const starts: { key: number; at: number }[] = [];
  const scheduler = new Scheduler({ clock, log: silentLogger, tick, run: async () => {}, onStart: (s) => starts.push({ key: s.key, at: clock.now() }) });
  // At 5 s a run may start half a second early: a tick falls in that window for some phases, not for others.
  const services = Array.from({ length: 20 }, (_, i) => service(i + 1, { intervalSeconds: 5 }));
  scheduler.upsert(services, { soon: false });
  await clock.advance(30_000);
  await scheduler.stop();
  const ticks = new Set(tick.times);
  const planned = (x: { key: number; at: number }) => nextRun(scheduleOf(services[x.key - 1]!.check, `s/svc-${x.key}`), x.at - 1)!;
  for (const x of starts) assert.ok(planned(x) - x.at < 500, "at most a tenth of the interval early");
  assert.ok(starts.some((x) => ticks.has(x.at) && planned(x) > x.at), "some runs started early on a tick");
  assert.ok(starts.some((x) => !ticks.has(x.at) && planned(x) === x.at), "some runs started at their own time");
});

test("an Alarm rings on the last tick before its time, when that tick is after its earliest; else at its time", async () => {
  const clock = new FakeClock();
  const tick = fakeTick(clock);
  const t0 = clock.now();
  const rang: number[] = [];
  const alarm = new Alarm(clock, () => rang.push(clock.now() - t0), tick);
  alarm.set(t0 + 3500, t0); // ticks at 1, 2 and 3 s: the one at 3 s is the last before 3.5 s
  await clock.advance(4000);
  alarm.set(t0 + 5500, t0 + 5200); // the tick at 5 s is before the earliest: rings at 5.5 s
  await clock.advance(2000);
  alarm.set(t0 + 7000); // a tick at its very time: once
  await clock.advance(2000);
  assert.deepEqual(rang, [3000, 5500, 7000]);
  alarm.set(t0 + 9500, t0);
  assert.equal(tick.listening(), 1, "set with a window, it listens to the tick");
  alarm.clear();
  assert.equal(tick.listening(), 0, "cleared, it does not");
  await clock.advance(2000);
  assert.deepEqual(rang, [3000, 5500, 7000], "cleared, it rings no more");
  alarm.set(t0 + 11_500);
  assert.equal(tick.listening(), 0, "set without a window, no tick can ring it: it does not listen");
  await clock.advance(2000);
  assert.deepEqual(rang, [3000, 5500, 7000, 11_500]);
});

test("an Alarm rides the tick: it keeps none going, and rings at its time when none runs", async () => {
  const tick = new Tick(systemClock, 10);
  const rang = new Promise<void>((resolve) => new Alarm(systemClock, resolve, tick).set(Date.now() + 50, Date.now()));
  assert.equal(tick.running, false, "set with a window, it does not make the tick run");
  await rang;
  assert.equal(tick.running, false);
});

test("while no tick runs, an Alarm rings with another Alarm's own wake-up in its window, else on its own", async () => {
  const clock = new FakeClock();
  const tick = new Tick(clock); // nothing listens: it does not run
  const t0 = clock.now();
  const rang: string[] = [];
  const a = new Alarm(clock, () => rang.push(`a ${clock.now() - t0}`), tick);
  const b = new Alarm(clock, () => rang.push(`b ${clock.now() - t0}`), tick);
  a.set(t0 + 4000, t0 + 2000);
  b.set(t0 + 5000, t0 + 3000); // a's wake-up at 4 s is in b's window
  await clock.advance(6000);
  assert.deepEqual(rang, ["a 4000", "b 4000"]);
  a.set(t0 + 8000, t0 + 7000);
  b.set(t0 + 10_000, t0 + 9000); // a's at 8 s is not
  await clock.advance(5000);
  assert.deepEqual(rang, ["a 4000", "b 4000", "a 8000", "b 10000"]);
  assert.equal(tick.running, false);
});

test("an Alarm hears each wake-up once and not its own, though set again in its window as it rings", async () => {
  const clock = new FakeClock();
  const tick = new Tick(clock); // not running
  const t0 = clock.now();
  const rang: number[] = [];
  // Rung, it is set again with its window open at once (as the scheduler's is when a wake-up took the most
  // runs it may start early).
  const alarm: Alarm = new Alarm(clock, () => (rang.push(clock.now() - t0), alarm.set(clock.now() + 1000, clock.now() - 1)), tick);
  const other = new Alarm(clock, () => {}, tick);
  alarm.set(t0 + 1000);
  other.set(t0 + 1500);
  await clock.advance(3000);
  // 1 s: its own timer (its own wake-up does not ring it again); 1.5 s: the other's wake-up, once; 2.5 s: its own.
  assert.deepEqual(rang, [1000, 1500, 2500]);
  alarm.clear();
});

test("an Alarm further out than a timer can wait rings at its time, not when its timer first fires", async () => {
  const clock = new FakeClock();
  const tick = fakeTick(clock);
  const t0 = clock.now();
  const rang: number[] = [];
  const alarm = new Alarm(clock, () => rang.push(clock.now() - t0), tick);
  alarm.set(t0 + 3 * 3_600_000 + 500, t0 + 3 * 3_600_000 - 1500); // a run three hours ahead, with its 2 s window
  await clock.advance(3 * 3_600_000 + 1000);
  assert.deepEqual(rang, [3 * 3_600_000], "once, on the last tick before its time");
});

test("the tick runs while anything listens and stops at the first tick after the last leaves; riders never start it", async () => {
  const tick = new Tick(systemClock, 10);
  let rides = 0;
  const stopRiding = tick.ride(() => rides++);
  assert.equal(tick.running, false, "a rider alone does not make it tick");
  let heard = 0;
  const leave = tick.on(() => heard++);
  assert.equal(tick.running, true);
  await until(async () => heard, (n) => n >= 2, "two ticks heard");
  assert.ok(rides >= 2, "a rider hears the ticks that run");
  leave();
  // Back before the next tick (a connection closed, the next one opened): the same timer goes on, on its phase.
  const back = tick.on(() => heard++);
  const before = heard;
  await until(async () => heard, (n) => n > before, "a tick heard after coming back");
  back();
  await until(async () => tick.running, (running) => !running, "the tick stopped, nobody listening");
  stopRiding();
});

test("a wake-up starts at most batchSize runs early; the rest wait for their own time", async () => {
  const clock = new FakeClock();
  const early = new Map<number, number>(); // wake-up time -> runs it started before their plan
  const scheduler = new Scheduler({
    clock,
    log: silentLogger,
    batchSize: 4,
    run: async (s) => {
      const at = clock.now();
      const planned = nextRun(scheduleOf(s.check, `s/${s.serviceId}`), at - 1)!; // at or just after: 1 s interval
      early.set(at, (early.get(at) ?? 0) + (planned > at ? 1 : 0));
    },
  });
  scheduler.upsert(Array.from({ length: 200 }, (_, i) => service(i + 1, { intervalSeconds: 1 })), { soon: false });
  await clock.advance(10_000);
  await scheduler.stop();
  assert.ok(Math.max(...early.values()) === 4, `at most 4 early runs a wake-up: ${Math.max(...early.values())}`);
});

test("a service handed over runs no sooner than half an interval after its last check, which may have been early", async () => {
  const h = harness();
  const s = service(1, { intervalSeconds: 10 });
  const planned = nextRun(scheduleOf(s.check, "s/svc-1"), h.clock.now())!;
  // Its last node started the planned run 0.9 s early and stopped; this one takes it over just before the plan.
  await h.clock.advance(planned - h.clock.now() - 500);
  h.scheduler.upsert([{ ...s, lastCheckedAt: planned - 900 }], { soon: false });
  await h.clock.advance(11_000);
  assert.deepEqual(h.starts.map((x) => x.at), [planned + 10_000], "the run the other node made is not made again");
});

test("a service handed over just before a planned run waits for the next one: its last node may have started it early", async () => {
  const h = harness();
  const s = service(1, { intervalSeconds: 10 });
  const planned = nextRun(scheduleOf(s.check, "s/svc-1"), h.clock.now() + 10_000)!;
  // Its last check was on time; its node, stopping, may have started the run planned next up to a second early
  // (a tenth of the interval) and been stopped before storing it. This node takes it over 100 ms before the plan.
  await h.clock.advance(planned - h.clock.now() - 100);
  h.scheduler.upsert([{ ...s, lastCheckedAt: planned - 10_000 }], { soon: false });
  await h.clock.advance(11_000);
  assert.deepEqual(h.starts.map((x) => x.at), [planned + 10_000]);
});

test("a new service is first checked within a second, then at a fixed rate on its phase", async () => {
  const h = harness();
  const s = service(1);
  const t0 = h.clock.now();
  h.scheduler.upsert([s]);
  await h.clock.advance(999);
  assert.equal(h.starts.length, 1);
  assert.ok(h.starts[0]!.at - t0 < 1000);
  await h.clock.advance(60_000);
  const later = h.starts.slice(1).map((x) => x.at);
  assert.equal(later.length, 6);
  const phase = hash("s/svc-1") % 10_000;
  for (const at of later) assert.equal((at - phase) % 10_000, 0);
  assert.ok(h.starts.every((x) => x.lag === 0));
});

test("a first run just before a point of its grid is not followed by a run at that point, but half an interval later at least", async () => {
  const s = service(1);
  const phase = hash("s/svc-1") % 10_000;
  const soon = hash("s/svc-1") % 1000;
  // The clock starts where the grid's next point comes 100 ms after the first run.
  const start = Date.UTC(2026, 0, 1) + phase - soon - 100 + 10_000;
  const clock = new FakeClock(start);
  const starts: number[] = [];
  const scheduler = new Scheduler({ clock, log: silentLogger, run: async () => void starts.push(clock.now()), onSkip: () => assert.fail("skipped") });
  scheduler.upsert([s]);
  await clock.advance(30_000);
  assert.equal(starts[0], start + soon);
  const gaps = starts.slice(1).map((at, i) => at - starts[i]!);
  assert.ok(gaps.every((gap) => gap >= 5000), `gaps ${gaps.join(", ")}`);
  // Before: the second run came 100 ms after the first (and a slower first run was skipped and counted).
  assert.equal(starts[1], start + soon + 100 + 10_000, "the grid's point after next");
  await scheduler.stop();
});

test("a tick that comes while the previous run is going is skipped and counted, not queued", async () => {
  const h = harness();
  h.hold();
  h.scheduler.upsert([service(1, { intervalSeconds: 1 })]);
  await h.clock.advance(1000);
  assert.equal(h.starts.length, 1);
  await h.clock.advance(3000);
  assert.equal(h.starts.length, 1);
  assert.equal(h.scheduler.skipped, 3);
  h.finish(1);
  await h.clock.advance(1000);
  assert.equal(h.starts.length, 2);
});

test("the bound on checks in flight holds; waiting runs start as slots free, their lag measured", async () => {
  const h = harness(2);
  h.hold();
  h.scheduler.upsert([1, 2, 3, 4, 5].map((k) => service(k, { intervalSeconds: 3600 })));
  await h.clock.advance(1000);
  assert.equal(h.scheduler.inFlight, 2);
  assert.equal(h.starts.length, 2);
  await h.clock.advance(500);
  h.finish(h.starts[0]!.key);
  await h.clock.advance(0);
  assert.equal(h.starts.length, 3);
  assert.ok(h.starts[2]!.lag > 0);
  assert.equal(h.scheduler.inFlight, 2);
});

test("the last run in flight finishing is told (the recorder writes the wake-up's batch then), not each run", async () => {
  const h = harness(2);
  h.hold();
  h.scheduler.upsert([1, 2, 3].map((k) => service(k, { intervalSeconds: 3600 })));
  await h.clock.advance(1000);
  assert.equal(h.scheduler.inFlight, 2, "two run, one waits for a slot");
  h.finish(h.starts[0]!.key);
  await h.clock.advance(0);
  h.finish(h.starts[1]!.key);
  await h.clock.advance(0);
  assert.equal(h.starts.length, 3);
  assert.equal(h.idle.told, 0, "the waiting run took the free slot: still running");
  h.finish(h.starts[2]!.key);
  await h.clock.advance(0);
  assert.equal(h.idle.told, 1);
});

test("unchanged services keep their plan, changed ones restart, removed ones stop", async () => {
  const h = harness();
  const a = service(1, { intervalSeconds: 10 });
  const b = service(2, { intervalSeconds: 10 });
  h.scheduler.upsert([a, b]);
  await h.clock.advance(1000);
  h.starts.length = 0;
  const changed = service(2, { intervalSeconds: 10, url: "http://127.0.0.1/changed" });
  h.scheduler.replaceAll([a, changed]);
  await h.clock.advance(999);
  assert.deepEqual(h.starts.map((s) => s.key), [2]);
  h.scheduler.remove([1]);
  h.starts.length = 0;
  await h.clock.advance(60_000);
  assert.ok(h.starts.every((s) => s.key === 2));
  assert.equal(h.starts.length, 6);
  assert.equal(h.scheduler.size, 1);
});

test("on start, services wait for their planned time rather than all running at once", async () => {
  const h = harness();
  const services = Array.from({ length: 100 }, (_, i) => service(i + 1, { intervalSeconds: 60 }));
  h.scheduler.replaceAll(services, { soon: false });
  await h.clock.advance(1000);
  assert.ok(h.starts.length < 10, `${h.starts.length} started in the first second`);
  await h.clock.advance(60_000);
  // By its planned time, or the one after when that was in the first second (the early window).
  assert.equal(new Set(h.starts.map((s) => s.key)).size, 100, "every service ran by its planned time");
});

test("cron services run when their pattern says", async () => {
  const h = harness();
  h.scheduler.upsert([service(1, { intervalSeconds: null, cron: "*/20 * * * * *" })]);
  // Interval services wake the scheduler often; none of those wake-ups starts the cron run early.
  h.scheduler.upsert(Array.from({ length: 50 }, (_, i) => service(i + 2, { intervalSeconds: 10 })), { soon: false });
  await h.clock.advance(60_000);
  const cron = h.starts.filter((s) => s.key === 1);
  const seconds = cron.slice(1).map((s) => new Date(s.at).getUTCSeconds());
  assert.deepEqual(seconds, [20, 40, 0]);
  assert.ok(cron.slice(1).every((s) => s.at % 1000 === 0), "on the second, never early");
});

test("stop aborts what is in flight and schedules nothing more", async () => {
  const clock = new FakeClock();
  let aborted = 0;
  let started = 0;
  const scheduler = new Scheduler({
    clock,
    log: silentLogger,
    run: (_s, signal) => {
      started++;
      return new Promise<void>((resolve) => signal.addEventListener("abort", () => (aborted++, resolve())));
    },
  });
  scheduler.upsert([service(1, { intervalSeconds: 1 })]);
  await clock.advance(1000);
  await scheduler.stop();
  assert.equal(aborted, 1);
  await clock.advance(10_000);
  assert.equal(started, 1);
});
