/**
 * What notifications say, decided without a database: a failed run's output at the end of its DOWN (the last
 * lines, cut at a line's start), the services a DOWN holds through dependsOn, and the headers that thread an
 * incident's emails.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { IncidentState } from "../src/domain/model.ts";
import type { NotificationEvent } from "../src/domain/notification.ts";
import { heldBy, heldLine, nameHeld } from "../src/policy/held.ts";
import { heartbeatStep } from "../src/policy/heartbeat.ts";
import { lastLines, renderNotification } from "../src/policy/message.ts";
import { eventOf } from "../src/policy/route.ts";
import { groupStorms, type StormServer, type StormService } from "../src/policy/storm.ts";
import { domainOf, threadHeaders } from "../src/notify/threading.ts";
import { render, templateProblem } from "../src/domain/template.ts";

test("lastLines: short output whole; long output keeps the last lines from a line's start, at most 1,000 characters", () => {
  assert.equal(lastLines(null), null);
  assert.equal(lastLines("\n  \n"), null);
  assert.equal(lastLines("\nstarting\nfailed: disk full\n\n"), "starting\nfailed: disk full");
  const lines = Array.from({ length: 200 }, (_, i) => `line ${String(i).padStart(3, "0")}: something happened`);
  const tail = lastLines(lines.join("\n"))!;
  assert.ok(tail.length <= 1000, `${tail.length} characters`);
  assert.ok(tail.endsWith("line 199: something happened"));
  assert.ok(lines.includes(tail.split("\n")[0]!), "it begins at a line's start, not inside a line");
  // Each line is 28 characters and its newline: 34 of them fit in 1,000 (985), 35 would not (1,014).
  assert.equal(tail.split("\n").length, 34, "as many whole lines as fit");
  // One line longer than the limit: its end, marked as cut.
  const long = lastLines("x".repeat(5000) + "END")!;
  assert.equal(long.length, 1000);
  assert.match(long, /^…x+END$/);
  // A cut never leaves half of a surrogate pair.
  assert.match(lastLines("😀".repeat(800))!, /^…😀+$/u);
  assert.match(lastLines("x" + "😀".repeat(800))!, /^…😀+$/u);
});

const up: IncidentState = {
  status: "up", consecutiveFailures: 0, consecutivePasses: 1, failingSince: null, incidentOpenSince: null, downSent: false, lastRemindedAt: null,
} as IncidentState;

test("a heartbeat's failed run: its DOWN ends with the last lines of its output, and the event carries them; a success and a missed ping carry none", () => {
  const timing = { periodSeconds: 60, cron: null, timezone: null, graceSeconds: 10, maxRunSeconds: null, minRunSeconds: null, since: 0 };
  const progress = { lastPingAt: null, lastFinishAt: null, missedDueAt: null, openRuns: {}, overdueRuns: {}, lastDurationMs: null } as never;
  const failed = heartbeatStep(timing, progress, { kind: "ping", serviceKey: 1, at: 5000, ping: { signal: "exit", exitCode: 3, body: "dumping\npg_dump: error: connection refused\n", runId: null } });
  assert.equal(failed.judged?.output, "dumping\npg_dump: error: connection refused");
  const after = { ...up, status: "down", consecutiveFailures: 1, failingSince: 5000, incidentOpenSince: 5000, downSent: true } as IncidentState;
  const subject = { serverId: "db1", serviceId: "backup", type: "heartbeat" as const, url: "" };
  const body = renderNotification("down", subject, failed.judged!, up, after, 0, 5000);
  assert.equal(body.message, [
    "exit: the job exited with code 3", "1 failure since 1970-01-01T00:00:05Z", "Checked at 1970-01-01T00:00:05Z",
    "", "Last lines of its output:", "dumping", "pg_dump: error: connection refused",
  ].join("\n"));
  const named = { ...subject, serverName: "db1", serviceName: "backup" };
  const event = eventOf("down", named, 5000, body, 7, { judged: failed.judged!, before: up, after, startedAt: 5000 });
  assert.equal(event.output, "dumping\npg_dump: error: connection refused");
  assert.equal(eventOf("recovered", named, 9000, body, 7, { judged: { ok: true, checkedAt: 9000, errorKind: null, error: null }, before: after, after: up, startedAt: 5000 }).output, undefined);

  const passed = heartbeatStep(timing, progress, { kind: "ping", serviceKey: 1, at: 5000, ping: { signal: "success", exitCode: null, body: "all good", runId: null } });
  assert.equal(passed.judged?.output, undefined);
  const missed = heartbeatStep(timing, progress, { kind: "deadline", serviceKey: 1, at: 71_000 });
  assert.equal(missed.judged?.errorKind, "missed");
  assert.equal(missed.judged?.output, undefined);
});

test("a DOWN names the services it holds: through dependents of dependents, not those with their own incident; ten by name, then a count", () => {
  const graph = [
    { name: "shop/checkout", dependsOn: ["db1/postgres"], incidentOpen: false },
    { name: "shop/cart", dependsOn: ["db1/postgres", "cache/redis"], incidentOpen: false },
    { name: "shop/front", dependsOn: ["shop/checkout"], incidentOpen: false },
    { name: "shop/admin", dependsOn: ["db1/postgres"], incidentOpen: true },
    { name: "shop/reports", dependsOn: ["shop/admin"], incidentOpen: false },
    { name: "other/x", dependsOn: ["cache/redis"], incidentOpen: false },
  ];
  assert.deepEqual(heldBy("db1/postgres", graph), ["shop/cart", "shop/checkout", "shop/front"]);
  assert.deepEqual(heldBy("shop/front", graph), []);
  assert.equal(heldLine("db1/postgres", ["shop/a"]), "1 service that depends on db1/postgres is held: shop/a");
  const many = Array.from({ length: 13 }, (_, i) => `shop/s${String(i).padStart(2, "0")}`);
  assert.equal(heldLine("db1/postgres", many), `13 services that depend on db1/postgres are held: ${many.slice(0, 10).join(", ")}, and 3 more`);

  const event = { event: "down", server: "db1", service: "postgres", message: "connect: refused\nTarget: db:5432" } as NotificationEvent;
  const down = { at: 0, serverId: "db1", serviceId: "postgres", kind: "down" as const, topic: null, incidentId: 1, channels: ["ntfy"], body: { title: "DOWN: db1/postgres", message: event.message }, event };
  const [said, other] = nameHeld([down, { ...down, serviceId: "other" }], graph);
  assert.equal(said!.body.message, "connect: refused\n3 services that depend on db1/postgres are held: shop/cart, shop/checkout, shop/front\nTarget: db:5432");
  assert.equal(said!.event.message, said!.body.message);
  assert.deepEqual(said!.event.held, ["shop/cart", "shop/checkout", "shop/front"]);
  assert.equal(other!.body.message, event.message, "a DOWN that holds nothing is as it was");
});

test("email threading: an incident's DOWN has a Message-ID from the incident; its reminders and RECOVERED answer it; others keep their own", () => {
  assert.equal(domainOf("healthd <alerts@Example.org>"), "example.org");
  assert.equal(domainOf("alerts@mail.example.org"), "mail.example.org");
  assert.equal(domainOf("nobody"), "healthd");
  const base = { id: "5b1c", server: "web-01", service: "home", incidentId: 123 } as NotificationEvent;
  const down = threadHeaders({ ...base, event: "down" }, "alerts@example.org");
  assert.match(down.messageId, /^<incident-123\.[0-9a-f]{10}\.down@example\.org>$/);
  assert.deepEqual(threadHeaders({ ...base, id: "another", event: "down" }, "alerts@example.org"), down, "a retry, another node: the same id");
  assert.deepEqual(threadHeaders({ ...base, event: "late" }, "alerts@example.org"), down);
  const recovered = threadHeaders({ ...base, event: "recovered" }, "alerts@example.org");
  assert.deepEqual(recovered, { messageId: down.messageId.replace(".down@", ".recovered@"), inReplyTo: down.messageId, references: down.messageId });
  assert.deepEqual(threadHeaders({ ...base, event: "reminder" }, "alerts@example.org"), { messageId: "<5b1c@example.org>", inReplyTo: down.messageId, references: down.messageId });
  assert.notEqual(threadHeaders({ ...base, service: "api", event: "down" }, "alerts@example.org").messageId, down.messageId, "another service's incident 123 is another thread");
  assert.deepEqual(threadHeaders({ ...base, incidentId: null, event: "cert" }, "alerts@example.org"), { messageId: "<5b1c@example.org>" });
});

test("storms: more than groupThreshold of a server's services failing within one interval send one grouped DOWN naming them all, then one grouped RECOVERED when all pass", () => {
  const routes = { events: new Map(), defaults: null };
  const service = (serviceId: string, more: Partial<StormService> = {}): StormService => ({
    serviceId, failing: true, failingSince: 10_000, incidentOpen: false, intervalMs: 60_000, speaks: true, channels: null, ...more,
  });
  const down = (serviceId: string, at = 130_000) => ({
    at, serverId: "web", serviceId, kind: "down" as const, topic: null, incidentId: 1, channels: ["ntfy"],
    body: { title: `DOWN: web/${serviceId}` }, event: { event: "down" } as NotificationEvent,
  });
  const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
  const server = (services: StormService[], storm: StormServer["storm"] = null, groupThreshold = 5): Map<string, StormServer> =>
    new Map([["web", { serverId: "web", serverName: "Web", groupThreshold, storm, services: new Map(services.map((s) => [s.serviceId, s])) }]]);
  const failing = ids.map((id, i) => service(id, { failingSince: 10_000 + i * 5_000, incidentOpen: i < 2, channels: i === 9 ? ["pager"] : null }));
  const other = { ...down("x"), serverId: "db" };

  // Two incidents open in this batch; eight more services fail within a minute of the first: one storm.
  const opened = groupStorms([down("s0"), down("s1"), other], server([...failing, service("late", { failingSince: 200_000 }), service("quiet", { speaks: false })]), routes, 130_000);
  assert.deepEqual(opened.storms, [{ kind: "open", id: -1, serverId: "web", openedAt: 10_000, members: ids }], "it begins at its first failure");
  assert.deepEqual(opened.notifications.map((n) => `${n.kind} ${n.serverId}/${n.serviceId}`), ["down db/x", "down web/*"]);
  const grouped = opened.notifications[1]!;
  assert.equal(grouped.body.title, "DOWN: 10 services of web");
  assert.equal(grouped.body.message?.split("\n")[0], "10 services of web failed within one check interval (more than its groupThreshold of 5):");
  assert.deepEqual(grouped.event.services, ids.map((id) => `web/${id}`));
  assert.deepEqual([grouped.event.group, grouped.incidentId, grouped.event.since], [-1, null, "1970-01-01T00:00:10Z"]);
  assert.deepEqual(grouped.channels, ["ntfy", "pager"], "every channel a member's DOWN would go to");

  // Five together is not a storm (more than five is); 0 never groups.
  const five = failing.slice(0, 5);
  assert.deepEqual(groupStorms([down("s0")], server(five), routes, 130_000).notifications.map((n) => n.serviceId), ["s0"]);
  assert.deepEqual(groupStorms([down("s0")], server(failing, null, 0), routes, 130_000).storms, []);
  // Failures more than an interval apart are not one storm.
  const spread = ids.map((id, i) => service(id, { failingSince: i * 61_000 }));
  assert.deepEqual(groupStorms([down("s5")], server(spread), routes, 130_000).storms, []);

  // While it is open: members' DOWNs and RECOVEREDs are not sent; a service it did not name speaks for itself.
  const storm = { id: 7, openedAt: 130_000, members: ids };
  const recovered = { ...down("s3", 200_000), kind: "recovered" as const };
  const partial = groupStorms([down("s8", 190_000), recovered, down("late", 200_000)], server([...failing.map((s) => (s.serviceId === "s3" ? { ...s, failing: false, incidentOpen: false } : s)), service("late")], storm), routes, 200_000);
  assert.deepEqual(partial.notifications.map((n) => n.serviceId), ["late"]);
  assert.deepEqual(partial.storms, []);
  // All of them back (one deleted meanwhile): one grouped RECOVERED, and the storm closes.
  const back = ids.slice(1).map((id) => service(id, { failing: false, failingSince: null }));
  const closed = groupStorms([{ ...recovered, serviceId: "s9", at: 300_000 }], server(back, { ...storm, openedAt: 10_000 }), routes, 300_000);
  assert.deepEqual(closed.storms, [{ kind: "close", id: 7, closedAt: 300_000 }]);
  assert.deepEqual(closed.notifications.map((n) => `${n.kind} ${n.serviceId} ${n.event.group}`), ["recovered * 7"]);
  assert.match(closed.notifications[0]!.body.message!, /^All 10 services of web that failed together pass again, after 4m 50s:\nweb\/s0\n/);
  assert.deepEqual(threadHeaders(closed.notifications[0]!.event as NotificationEvent, "a@example.org").inReplyTo, threadHeaders({ ...closed.notifications[0]!.event, event: "down" } as NotificationEvent, "a@example.org").messageId);
});

test("templates may name the new fields: a storm's services as a list, a DOWN's held services and a run's output", () => {
  for (const field of ["services", "held", "output", "group"]) assert.equal(templateProblem(`{{#${field}}}x{{/${field}}}`), undefined, field);
  const fields = { title: "DOWN: 2 services of web", services: ["web/a", "web/b"], output: 'said "no"' };
  assert.equal(render("{{title}}: {{#services}}{{.}}; {{/services}}", fields, "text"), "DOWN: 2 services of web: web/a; web/b; ");
  assert.equal(render('{"services": [{{#services}}"{{.}}",{{/services}}], "output": "{{output}}"}', fields, "json"), '{"services": ["web/a","web/b",], "output": "said \\"no\\""}');
});
