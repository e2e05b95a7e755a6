/**
 * How a page tells moments (src/status/when.ts): in words while recent, else a date in its time zone; and a
 * young service's uptime, over its life (src/status/page.ts). Pure.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { life, uptimeFacts } from "../src/status/page.ts";
import type { ServiceStatus } from "../src/status/read-model.ts";
import { dated, moment, spoken, withDates } from "../src/status/when.ts";

const now = Date.parse("2026-12-06T12:00:00Z");
const utc = { now, timeZone: "UTC" };
const minute = 60_000;

test("recent moments in words, past and future; beyond a week a date in the page's zone", () => {
  assert.equal(spoken(now - 20_000, utc), "just now");
  assert.equal(spoken(now - 12 * minute, utc), "12 minutes ago");
  assert.equal(spoken(now + 3 * 60 * minute + 5 * minute, utc), "in 3 hours");
  assert.equal(spoken(now - 3 * 24 * 60 * minute, utc), "3 days ago");
  assert.equal(spoken(now - 30 * 24 * 60 * minute, utc), "on 6 Nov 2026, 12:00 UTC");
  assert.equal(spoken(now - 30 * 24 * 60 * minute, { now, timeZone: "Europe/Paris" }), "on 6 Nov 2026, 13:00 CET");
  assert.equal(dated(now, "America/New_York"), "6 Dec 2026, 07:00 GMT-5");
  assert.equal(dated(now, "Asia/Kolkata"), "6 Dec 2026, 17:30 GMT+5:30");
});

test("a <time> keeps the exact moment for machines and on hover", () => {
  const at = "2026-12-06T11:48:00.000Z";
  assert.equal(moment(at, utc).text, `<time datetime="${at}" title="6 Dec 2026, 11:48 UTC">12 minutes ago</time>`);
  assert.equal(moment(at, { now, timeZone: "Europe/Paris" }, "date").text, `<time datetime="${at}" title="6 Dec 2026, 12:48 CET">6 Dec 2026, 12:48 CET</time>`);
});

test("timestamps inside error texts are told as dates in the page's zone", () => {
  assert.equal(withDates("missed its ping due at 2026-12-06T11:48:00.000Z (grace 5m)", "Europe/Paris"), "missed its ping due at 6 Dec 2026, 12:48 CET (grace 5m)");
  assert.equal(withDates("certificate expires 2027-01-02T03:04:05+02:00", "UTC"), "certificate expires 2 Jan 2027, 01:04 UTC");
  assert.equal(withDates("HTTP 500 at /v1/2026-12-06", "UTC"), "HTTP 500 at /v1/2026-12-06", "a date alone is not a moment");
});

test("uptime over a service's life while it is younger than the window, labelled so", () => {
  const facts = (ageMs: number) =>
    uptimeFacts({ uptime24h: 0.5, uptime30d: 0.75, createdAt: new Date(now - ageMs).toISOString() } as ServiceStatus, now).text.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
  assert.equal(facts(5 * minute + 20_000), "Uptime, 5 min so far 50.00 %");
  assert.equal(facts(3 * 60 * minute), "Uptime, 3 h so far 50.00 %");
  assert.equal(facts(3 * 24 * 60 * minute), "Uptime 24 h 50.00 % Uptime, 3 days so far 75.00 %");
  assert.equal(facts(40 * 24 * 60 * minute), "Uptime 24 h 50.00 % Uptime 30 d 75.00 %");
  assert.equal(life(20_000), "1 min");
});
