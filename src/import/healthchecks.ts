/**
 * Healthchecks.io: the JSON of its Management API's check list (`GET /api/v3/checks/`, also v1 and v2), as
 * heartbeats of one server. Each keeps its ping key (the UUID at the end of `ping_url`, or `uuid`), so a job
 * keeps its URL path and only the base URL changes (hc-ping.com/KEY becomes healthd's /ping/KEY).
 *
 * What carries over: name, timeout (periodSeconds) or schedule and tz (cron, timezone), grace, paused. Not:
 * tags and desc (healthd has neither yet: said for each check that has them), channels (make them healthd
 * channels by hand), email filters, methods, manual_resume.
 */
import { cron } from "../domain/schema/common.ts";
import { clamp, DocumentBuilder, NotThatFormat, type Check, type Imported } from "./common.ts";

const uuid = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/?$/i;

interface HcCheck {
  name?: unknown;
  slug?: unknown;
  timeout?: unknown;
  grace?: unknown;
  schedule?: unknown;
  tz?: unknown;
  tags?: unknown;
  desc?: unknown;
  status?: unknown;
  ping_url?: unknown;
  uuid?: unknown;
  unique_key?: unknown;
}

export function fromHealthchecks(data: unknown, defaultServer: string): Imported {
  const list = (data as { checks?: unknown } | null)?.checks;
  if (typeof data !== "object" || data === null || !Array.isArray(list)) {
    const keys = typeof data === "object" && data !== null ? Object.keys(data).slice(0, 8).join(", ") : typeof data;
    throw new NotThatFormat(`it is JSON without a "checks" list (it has: ${keys || "nothing"}), so not the answer of Healthchecks.io's GET /api/v3/checks/`);
  }
  const builder = new DocumentBuilder();
  builder.server(defaultServer);
  let withoutKey = 0;
  for (const [i, c] of (list as HcCheck[]).entries()) {
    const name = typeof c.name === "string" && c.name !== "" ? c.name : typeof c.slug === "string" && c.slug !== "" ? c.slug : `check ${i + 1}`;
    const what = `check ${JSON.stringify(name)}`;
    const key = [c.ping_url, c.uuid].map((v) => (typeof v === "string" ? uuid.exec(v)?.[1]?.toLowerCase() : undefined)).find(Boolean);
    if (!key) withoutKey++;
    const schedule: Check = {};
    // A cron check has schedule and tz; a simple one, timeout.
    if (typeof c.schedule === "string" && c.schedule !== "") {
      if (!cron.safeParse(c.schedule).success) {
        builder.note(what, `its schedule ${JSON.stringify(c.schedule)} is not a cron expression healthd reads (OnCalendar is not); not carried over`);
        continue;
      }
      Object.assign(schedule, { cron: c.schedule, ...(typeof c.tz === "string" && c.tz !== "UTC" ? { timezone: c.tz } : {}) });
    } else if (typeof c.timeout === "number") schedule.periodSeconds = clamp(c.timeout, 1, 31_536_000);
    else {
      builder.note(what, "it has neither timeout nor schedule; not carried over");
      continue;
    }
    const check: Check = {
      type: "heartbeat",
      ...schedule,
      ...(typeof c.grace === "number" ? { graceSeconds: clamp(c.grace, 1, 31_536_000) } : {}),
      ...(key ? { pingKey: key } : {}),
      ...(c.status === "paused" ? { paused: true } : {}),
    };
    const id = builder.add(defaultServer, name, check, typeof c.slug === "string" && c.slug !== "" ? c.slug : `check-${i + 1}`);
    // Healthchecks.io writes tags as one space-separated string.
    const tags = typeof c.tags === "string" ? c.tags.split(" ").filter(Boolean) : [];
    if (tags.length > 0) builder.note(what, `its tags (${tags.join(", ")}) do not carry over: healthd has no tags yet; ${defaultServer}/${id} is carried over without them`);
    if (typeof c.desc === "string" && c.desc.trim() !== "") builder.note(what, `its description does not carry over: healthd has no descriptions yet; ${defaultServer}/${id} is carried over without it`);
  }
  if (withoutKey > 0) {
    builder.note("ping keys", `${withoutKey} check${withoutKey === 1 ? " has" : "s have"} no ping_url or uuid (a read-only API key leaves them out): healthd makes new keys, so those jobs need their new URL; export with a read-write key to keep them`);
  }
  if (builder.servers[defaultServer]?.services.length === 0) delete builder.servers[defaultServer];
  return builder.finish();
}
