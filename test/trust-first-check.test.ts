/**
 * The first check of a new or changed service runs within a second of the change, later ones on its phase,
 * even when the change comes while the check it replaces is still running (that run's result, of a check no
 * longer there, is not kept). On a fake clock for the scheduler; through the API for the daemon.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CheckDone } from "../src/daemon.ts";
import { silentLogger } from "../src/platform/log.ts";
import { hash } from "../src/domain/schedule.ts";
import { Scheduler, type ScheduledService } from "../src/runtime/scheduler/scheduler.ts";
import { FakeClock } from "./support/clock.ts";
import { engines } from "./support/databases.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { refusedUrl, silentTlsUrl } from "./support/targets.ts";

function service(key: number, url: string, intervalSeconds = 300): ScheduledService {
  return {
    key,
    serverId: "s",
    serviceId: `svc-${key}`,
    check: {
      type: "http", url, method: "GET", headers: {}, body: null, intervalSeconds, cron: null, timeoutMs: 30_000, followRedirects: true, verifyTls: true,
      expect: [{ status: "2xx" }], notify: true, notifyThreshold: 2, notifyTopic: null, paused: false, recoverThreshold: 1, remindEveryMinutes: null,
      certWarnDays: null, dependsOn: [], channels: null, locations: null, quorum: null, slowMs: null, notifySlow: false, domainWarnDays: null, slaTarget: null,
    },
  };
}

const urlOf = (s: ScheduledService) => (s.check.type === "http" ? s.check.url : "");

/** A scheduler on a fake clock whose runs end only when the test says. */
function held(maxInFlight = 100) {
  const clock = new FakeClock();
  const starts: { url: string; at: number }[] = [];
  const ends = new Map<string, () => void>();
  const scheduler = new Scheduler({
    clock,
    log: silentLogger,
    maxInFlight,
    onStart: (s) => starts.push({ url: urlOf(s), at: clock.now() }),
    run: (s) => new Promise<void>((resolve) => ends.set(urlOf(s), resolve)),
  });
  return { clock, scheduler, starts, end: (url: string) => ends.get(url)?.() };
}

test("a check changed while its run is going is first checked within a second, then on its phase; the old run is no longer current", async () => {
  const h = held();
  const old = service(1, "http://127.0.0.1/old");
  h.scheduler.upsert([old]);
  await h.clock.advance(1000);
  assert.deepEqual(h.starts.map((s) => s.url), ["http://127.0.0.1/old"], "the new service, within a second");
  const t0 = h.clock.now();
  const changed = service(1, "http://127.0.0.1/new");
  h.scheduler.upsert([changed]);
  await h.clock.advance(999);
  assert.deepEqual(h.starts.map((s) => s.url), ["http://127.0.0.1/old", "http://127.0.0.1/new"], "not skipped behind the old run");
  assert.ok(h.starts[1]!.at - t0 < 1000);
  assert.equal(h.scheduler.skipped, 0);
  assert.equal(h.scheduler.isCurrent(old), false, "the old run's result has nowhere to go");
  assert.equal(h.scheduler.isCurrent(changed), true);
  assert.equal(h.scheduler.inFlight, 2, "the old run still counts against the bound until it ends");
  h.end("http://127.0.0.1/old");
  h.end("http://127.0.0.1/new");
  await h.clock.advance(0);
  assert.equal(h.scheduler.inFlight, 0);
  // Later runs on the service's phase, an interval apart.
  const phase = hash("s/svc-1") % 300_000;
  const runs = async () => {
    const before = h.starts.length;
    await h.clock.advance(300_000);
    h.end("http://127.0.0.1/new");
    return h.starts.slice(before).map((s) => s.at);
  };
  const later = [...(await runs()), ...(await runs()), ...(await runs())];
  assert.ok(later.length >= 2, `${later.length} later runs`);
  for (const at of later) assert.equal((at - phase) % 300_000, 0, "on its phase");
  await h.scheduler.stop();
});

test("a check changed while its run waits for a slot runs first when the slot frees, not half an interval later", async () => {
  const h = held(1);
  h.scheduler.upsert([service(1, "http://127.0.0.1/busy")]);
  await h.clock.advance(1000);
  h.scheduler.upsert([service(2, "http://127.0.0.1/waiting")]);
  await h.clock.advance(1000);
  assert.deepEqual(h.starts.map((s) => s.url), ["http://127.0.0.1/busy"], "service 2 waits for the one slot");
  h.scheduler.upsert([service(2, "http://127.0.0.1/changed")]);
  await h.clock.advance(999);
  assert.equal(h.scheduler.skipped, 0, "its first run waits for the slot, not skipped behind the old check's place in the queue");
  h.end("http://127.0.0.1/busy");
  await h.clock.advance(0);
  assert.deepEqual(h.starts.map((s) => s.url), ["http://127.0.0.1/busy", "http://127.0.0.1/changed"], "as soon as the slot frees");
  h.end("http://127.0.0.1/changed");
  await h.scheduler.stop();
});

for (const engine of engines) {
  test(`${engine}: a new service at a 5 min interval, and the same service changed while its first check hangs, are each checked within a second of the PUT`, async (t) => {
    const d = await testDaemon(t, { engine });
    const hanging = await silentTlsUrl(t);
    const refused = await refusedUrl();
    const doneFor = (url: string) => nextEvent<[CheckDone]>(d.events, "check:done", (done) => done.service.serviceId === "api" && done.service.check.type === "http" && done.service.check.url === url);
    const startedHanging = nextEvent(d.events, "check:started", (s: { check: { url?: string } }) => s.check.url === hanging);
    assert.equal((await d.api("PUT", "/services/web-01", { services: [{ id: "api", check: { url: hanging, intervalSeconds: 300, timeoutMs: 60_000 } }] })).status, 201);
    await startedHanging;
    // The change comes while the first check hangs (for up to a minute); before, its first run was skipped
    // behind it and came half an interval later, 2.5 minutes.
    const changed = doneFor(refused);
    assert.equal((await d.api("PUT", "/services/web-01/api", { check: { url: refused, intervalSeconds: 300 } })).status, 200);
    const [done] = await changed;
    assert.equal(done.entry.ok, false);
    assert.equal(done.entry.errorKind, "connect");
  });
}
