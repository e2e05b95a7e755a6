/** The OpenAPI document: made from the route table, valid by Redocly's linter, and true of real answers. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import type { z } from "zod";
import * as answers from "../src/http/answers.ts";
import { testDaemon } from "./support/daemon.ts";
import { nextEvent } from "./support/events.ts";
import { httpTarget } from "./support/targets.ts";
import { tempDir } from "./support/temp.ts";

const redocly = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");

test("GET /openapi.json passes Redocly's lint with no error and describes every endpoint", async (t) => {
  const d = await testDaemon(t);
  const doc = (await d.api("GET", "/openapi.json")).body;
  const file = join(tempDir(t), "openapi.json");
  writeFileSync(file, JSON.stringify(doc));
  const lint = await promisify(execFile)(process.execPath, [redocly, "lint", file, "--format", "json"]).catch((error: { stdout: string; code: number }) => error);
  const totals = JSON.parse(lint.stdout.slice(lint.stdout.indexOf("{"))).totals;
  assert.equal(totals.errors, 0, lint.stdout);

  assert.deepEqual(Object.keys(doc.paths).sort(), [
    "/",
    "/announcements",
    "/announcements/{id}",
    "/announcements/{id}/updates",
    "/api/push/{pushToken}",
    "/api/v1/endpoints/{key}/external",
    "/api/{version}/channels",
    "/api/{version}/checks",
    "/api/{version}/checks/{check}",
    "/api/{version}/checks/{check}/flips",
    "/api/{version}/checks/{check}/pause",
    "/api/{version}/checks/{check}/pings",
    "/api/{version}/checks/{check}/resume",
    "/badges/{serverId}/status.svg",
    "/badges/{serverId}/{serviceId}/latency.svg",
    "/badges/{serverId}/{serviceId}/status.svg",
    "/badges/{serverId}/{serviceId}/uptime.svg",
    "/channels",
    "/channels/{name}",
    "/channels/{name}/test",
    "/console",
    "/console/actions/{action}",
    "/console/events",
    "/console/servers/{serverId}/edit",
    "/console/services/{serverId}/{serviceId}",
    "/favicon.ico",
    "/healthz",
    "/incidents",
    "/incidents/{id}",
    "/incidents/{id}/ack",
    "/incidents/{id}/ack/{signature}",
    "/login",
    "/logout",
    "/metrics",
    "/nodes",
    "/openapi.json",
    "/ping/{key}",
    "/ping/{key}/{signal}",
    "/ping/{serverId}/{serviceId}/{signal}",
    "/push/topics/{topic}",
    "/reports",
    "/services",
    "/services/{serverId}",
    "/services/{serverId}/ping-key",
    "/services/{serverId}/{serviceId}",
    "/services/{serverId}/{serviceId}/data",
    "/services/{serverId}/{serviceId}/incidents",
    "/services/{serverId}/{serviceId}/ping-key",
    "/services/{serverId}/{serviceId}/stats",
    "/silences",
    "/silences/{id}",
    "/status",
    "/status-pages",
    "/status-pages/{slug}",
    "/status-pages/{slug}/logo",
    "/status.atom",
    "/status.json",
    "/status/p/{slug}",
    "/status/p/{slug}/badge.svg",
    "/status/p/{slug}/feed.atom",
    "/status/p/{slug}/logo",
    "/status/p/{slug}/{serverId}/{serviceId}",
    "/status/{serverId}",
    "/status/{serverId}/{serviceId}",
    "/tokens",
    "/tokens/{id}",
  ]);
  const data = doc.paths["/services/{serverId}/{serviceId}/data"].get;
  assert.deepEqual(data.parameters.map((p: { name: string }) => p.name), ["limit", "before", "since", "until", "ok"]);
  assert.equal(data.responses["200"].content["application/json"].schema.$ref, "#/components/schemas/EntryPage");
  assert.ok(data.responses["404"].content["application/problem+json"]);
  assert.deepEqual(doc.paths["/healthz"].get.security, []);
  const oneOf = doc.components.schemas.ServerDocument.properties.services.items.properties.check.oneOf;
  const [http, tcp, dns, heartbeat] = ["http", "tcp", "dns", "heartbeat"].map((type) => oneOf.find((k: { properties: { type: { const: string } } }) => k.properties.type.const === type));
  assert.deepEqual([http.required, http.additionalProperties], [["url"], false]);
  assert.deepEqual([tcp.required, tcp.additionalProperties], [["type", "host", "port"], false]);
  assert.deepEqual([dns.required, dns.additionalProperties], [["type", "name"], false]);
  assert.deepEqual([heartbeat.required, heartbeat.additionalProperties], [["type"], false]);
  assert.ok(doc.paths["/push/topics/{topic}"].post.requestBody.content["*/*"], "any body that is not JSON is the message");
});

test("real answers match the schemas the document gives them", async (t) => {
  const target = await httpTarget(t);
  const d = await testDaemon(t);
  const conforms = (schema: z.ZodType, body: unknown, what: string) => {
    const parsed = schema.safeParse(body);
    assert.ok(parsed.success, `${what}: ${JSON.stringify(parsed.error?.issues)}\n${JSON.stringify(body)}`);
  };
  const done = nextEvent(d.events, "check:done");
  const put = await d.api("PUT", "/services/web", { services: [{ id: "home", check: { url: `${target.url}/ok`, intervalSeconds: 60 } }] });
  conforms(answers.serverAnswer, put.body, "PUT /services/web");
  await done;
  conforms(answers.serverAnswer, (await d.api("GET", "/services/web")).body, "GET /services/web");
  conforms(answers.serviceAnswer, (await d.api("GET", "/services/web/home")).body, "GET /services/web/home");
  conforms(answers.serverListAnswer, (await d.api("GET", "/services")).body, "GET /services");
  conforms(answers.entriesAnswer, (await d.api("GET", "/services/web/home/data")).body, "GET …/data");
  conforms(answers.statsAnswer, (await d.api("GET", "/services/web/home/stats")).body, "GET …/stats");
  conforms(answers.healthAnswer, (await d.api("GET", "/healthz")).body, "GET /healthz");
  conforms(answers.channelAnswer, (await d.api("PUT", "/channels/hook", { type: "webhook", url: `${target.url}/ok`, secret: "s" })).body, "PUT /channels/hook");
  conforms(answers.channelListAnswer, (await d.api("GET", "/channels")).body, "GET /channels");
  conforms(answers.channelTestAnswer, (await d.api("POST", "/channels/hook/test")).body, "POST /channels/hook/test");
  const announced = await d.api("POST", "/announcements", { title: "Slow", message: "We are *on it*.", severity: "degraded", servers: ["web"] });
  conforms(answers.announcementAnswer, announced.body, "POST /announcements");
  conforms(answers.announcementAnswer, (await d.api("POST", `/announcements/${announced.body.id}/updates`, { message: "Fixed" })).body, "POST …/updates");
  conforms(answers.announcementAnswer, (await d.api("PATCH", `/announcements/${announced.body.id}`, { ended: true })).body, "PATCH /announcements/{id}");
  conforms(answers.announcementsAnswer, (await d.api("GET", "/announcements")).body, "GET /announcements");
  conforms(answers.statusPageAnswer, (await d.api("PUT", "/status-pages/shop", { title: "Shop", servers: ["web"], public: true })).body, "PUT /status-pages/shop");
  conforms(answers.statusPagesAnswer, (await d.api("GET", "/status-pages")).body, "GET /status-pages");
  conforms(answers.reportAnswer, (await d.api("GET", `/reports?month=${new Date().toISOString().slice(0, 7)}`)).body, "GET /reports");
  conforms(answers.problemAnswer, (await d.api("GET", "/services/nope")).body, "a 404");
  conforms(answers.problemAnswer, (await d.api("PUT", "/services/web", { services: 3 })).body, "a 400");
});
