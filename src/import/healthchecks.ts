/**
 * Healthchecks.io: the JSON of its Management API's check list (`GET /api/v3/checks/`, also v1 and v2), as
 * heartbeats of one server. Each keeps its ping key (the UUID at the end of `ping_url`, or `uuid`), so a job
 * keeps its URL path and only the base URL changes (hc-ping.com/KEY becomes healthd's /ping/KEY).
 *
 * Slug URLs (/ping/<project ping key>/<slug>) carry over too: each check's slug is its service's id, and the
 * project's ping key becomes the server's pingKey. The export does not hold that key (its ping_url is the UUID
 * form), so it is given (import --ping-key), or read from a ping_url of the slug form when one has it.
 *
 * What carries over: name, timeout (periodSeconds) or schedule and tz (cron, timezone), grace, paused,
 * manual_resume (manualResume), tags (HC's space-separated words, lowercased). Not: desc (healthd has no
 * descriptions yet: said for each check that has one), channels (make them healthd channels by hand), email
 * filters, methods.
 */
import { cron } from "../domain/schema/common.ts";
import { UsageError } from "../platform/usage.ts";
import { clamp, DocumentBuilder, NotThatFormat, type Check, type Imported } from "./common.ts";

const uuid = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/?$/i;
/** A ping URL of the slug form: the project's ping key (22 URL-safe characters), then the slug. */
const slugUrl = /\/([A-Za-z0-9_-]{22})\/([A-Za-z0-9_-]+)\/?$/;

/** A Healthchecks.io project's ping key, as a server's pingKey holds it. */
export const projectPingKey = /^[A-Za-z0-9_-]{22}$/;

export interface HealthchecksOptions {
  /** The project's ping key (import --ping-key): the first segment of its checks' slug URLs. */
  readonly pingKey?: string;
}

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
  manual_resume?: unknown;
}

export function fromHealthchecks(data: unknown, defaultServer: string, options: HealthchecksOptions = {}): Imported {
  const list = (data as { checks?: unknown } | null)?.checks;
  if (typeof data !== "object" || data === null || !Array.isArray(list)) {
    const keys = typeof data === "object" && data !== null ? Object.keys(data).slice(0, 8).join(", ") : typeof data;
    throw new NotThatFormat(`it is JSON without a "checks" list (it has: ${keys || "nothing"}), so not the answer of Healthchecks.io's GET /api/v3/checks/`);
  }
  const builder = new DocumentBuilder();
  builder.server(defaultServer);
  const pingKey = projectKeyOf(list as HcCheck[], options.pingKey, builder);
  let withoutKey = 0;
  const slugsMoved: string[] = [];
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
      ...(c.manual_resume === true ? { manualResume: true } : {}),
    };
    // The slug is the id, so that /ping/<project ping key>/<slug> names the same check here.
    const slug = typeof c.slug === "string" && c.slug !== "" ? c.slug : undefined;
    // Healthchecks.io writes tags as one space-separated string.
    const tags = typeof c.tags === "string" ? c.tags.split(/\s+/).filter(Boolean) : [];
    const id = builder.add(defaultServer, name, check, slug ?? `check-${i + 1}`, slug, tags);
    if (slug !== undefined && id !== slug) slugsMoved.push(`${slug} (now ${id})`);
    if (typeof c.desc === "string" && c.desc.trim() !== "") builder.note(what, `its description does not carry over: healthd has no descriptions yet; ${defaultServer}/${id} is carried over without it`);
  }
  if (withoutKey > 0) {
    builder.note("ping keys", `${withoutKey} check${withoutKey === 1 ? " has" : "s have"} no ping_url or uuid (a read-only API key leaves them out): healthd makes new keys, so those jobs need their new URL; export with a read-write key to keep them`);
  }
  if (slugsMoved.length > 0) {
    builder.note("slugs", `${slugsMoved.join(", ")}: taken by another check or not a healthd id (1 to 64 of A-Z a-z 0-9 . _ -), so their slug URLs change; their UUID URLs do not`);
  }
  const server = builder.servers[defaultServer];
  if (server && pingKey !== undefined) server.pingKey = pingKey;
  const slugged = (list as HcCheck[]).some((c) => typeof c.slug === "string" && c.slug !== "");
  if (server && pingKey === undefined && slugged) {
    builder.note("slug URLs", `/ping/<ping key>/<slug> needs the project's ping key, which the export does not hold: give it with --ping-key (Healthchecks.io: the project's Settings, "Ping key"); the UUID URLs work without it`);
  }
  if (server?.services.length === 0) delete builder.servers[defaultServer];
  return builder.finish();
}

/**
 * The project's ping key: from a ping_url of the slug form when the export has one (the export's own word),
 * else as given. A given key that differs from the export's is a mistake, said as one.
 */
function projectKeyOf(checks: readonly HcCheck[], given: string | undefined, builder: DocumentBuilder): string | undefined {
  const found = new Set(checks.map((c) => (typeof c.ping_url === "string" ? slugUrl.exec(c.ping_url.split(/[?#]/)[0]!)?.[1] : undefined)).filter((k) => k !== undefined));
  const [fromExport, ...others] = found;
  if (others.length > 0) builder.note("ping key", `the ping URLs carry ${found.size} project ping keys (${[...found].join(", ")}); ${fromExport} is kept, import each project on its own (--server) to keep the others`);
  if (fromExport !== undefined && given !== undefined && given !== fromExport) {
    throw new UsageError(`--ping-key ${given} is not the project ping key the export's ping URLs carry (${fromExport}): leave --ping-key out, or give ${fromExport}`);
  }
  return fromExport ?? given;
}
