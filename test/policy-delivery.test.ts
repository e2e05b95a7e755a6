/**
 * The outbox's rules (src/policy/delivery.ts), without a database: when a failed delivery is tried again,
 * when it is given up, when a RECOVERED is held back, and which unsent DOWNs are queued again. The loop that
 * applies them is tested against the ntfy stand-in (test/notify.test.ts, test/channels*.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { afterFailure, channelIsBack, followsDown, orphaned, requeue, retryDefaults, unexpectedRetryMs, type UnsentNotification } from "../src/policy/delivery.ts";

const t0 = Date.parse("2026-12-05T10:00:00Z");
const hour = 3_600_000;

test("afterFailure: retries wait 1 s, doubling each time, up to 5 minutes", () => {
  const delays = [0, 1, 2, 3, 8, 9, 20].map((attempts) => afterFailure({ attempts, createdAt: t0 }, true, t0 + hour));
  assert.deepEqual(
    delays.map((d) => (d.then === "retry" ? d.delayMs : d.then)),
    [1000, 2000, 4000, 8000, 256_000, 300_000, 300_000],
  );
  assert.deepEqual(afterFailure({ attempts: 2, createdAt: t0 }, true, t0 + 10_000), { then: "retry", at: t0 + 14_000, delayMs: 4000 });
});

test("afterFailure: a retry that would come more than 24 hours after the notification was written is given up", () => {
  const day = retryDefaults.giveUpAfterMs;
  assert.equal(day, 24 * hour);
  // At the cap of 5 minutes: the last retry may fall exactly at 24 hours, not a millisecond after.
  assert.equal(afterFailure({ attempts: 30, createdAt: t0 }, true, t0 + day - 300_000).then, "retry");
  assert.deepEqual(afterFailure({ attempts: 30, createdAt: t0 }, true, t0 + day - 299_999), { then: "give-up" });
  assert.deepEqual(afterFailure({ attempts: 0, createdAt: t0 }, true, t0 + day), { then: "give-up" });
});

test("afterFailure: a failure the destination calls invalid is failed at once, however young", () => {
  assert.deepEqual(afterFailure({ attempts: 0, createdAt: t0 }, false, t0), { then: "fail" });
});

test("afterFailure: the daemon's options replace the defaults", () => {
  const rules = { baseMs: 10, maxMs: 50, giveUpAfterMs: 1000 };
  assert.deepEqual(afterFailure({ attempts: 2, createdAt: t0 }, true, t0, rules), { then: "retry", at: t0 + 40, delayMs: 40 });
  assert.deepEqual(afterFailure({ attempts: 5, createdAt: t0 }, true, t0, rules), { then: "retry", at: t0 + 50, delayMs: 50 });
  assert.deepEqual(afterFailure({ attempts: 5, createdAt: t0 }, true, t0 + 951, rules), { then: "give-up" });
});

test("a delivery that failed unexpectedly waits 10 s; a channel that takes one it had failed is back", () => {
  assert.equal(unexpectedRetryMs, 10_000);
  assert.equal(channelIsBack({ attempts: 0 }), false);
  assert.equal(channelIsBack({ attempts: 1 }), true);
});

test("a RECOVERED is held back from a channel only when its incident's DOWN was kept unsent or failed there", () => {
  assert.equal(followsDown({ kind: "recovered", incidentId: 7 }), true);
  assert.equal(followsDown({ kind: "recovered", incidentId: null }), false);
  assert.equal(followsDown({ kind: "down", incidentId: 7 }), false);
  assert.deepEqual(
    (["pending", "delivered", "failed", "unsent", undefined] as const).map(orphaned),
    [false, false, true, true, false],
  );
});

test("requeue: DOWNs to ntfy of open incidents go back with their service's topic, or the cluster's when it has one", () => {
  const down = (id: number, settings: Partial<UnsentNotification> = {}): UnsentNotification => ({ id, channel: "ntfy", kind: "down", incidentOpen: true, notifyTopic: null, ...settings });
  const unsent = [
    down(1, { notifyTopic: "ops" }),
    down(2),
    down(3, { kind: "reminder", notifyTopic: "ops" }),
    down(4, { incidentOpen: false, notifyTopic: "ops" }),
    down(5, { channel: "slack", notifyTopic: "ops" }),
  ];
  assert.deepEqual(requeue(unsent, false), [{ id: 1, topic: "ops" }]);
  assert.deepEqual(requeue(unsent, true), [{ id: 1, topic: "ops" }, { id: 2, topic: null }]);
  assert.deepEqual(requeue([], true), []);
});
