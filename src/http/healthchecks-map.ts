/**
 * Healthchecks.io's management API v3 over healthd's data, the pure part: a heartbeat as HC's check object, its
 * entries as HC's pings, its incidents as HC's flips, and HC's create/update fields read (with HC's own error
 * texts) and turned into a heartbeat check. No store, clock or request in here: healthchecks-api.ts hands the
 * facts in. What healthd lacks and why is in docs/guide/coming-from-another-tool.md.
 *
 * A check's `uuid` is its heartbeat's pingKey: HC's clients build the ping URL from it (PING_ENDPOINT + uuid),
 * and healthd's /ping/{pingKey} is that URL. Its `slug` is the service id (the id of a service is what a slug
 * URL names); `name`, the service's name.
 */
import { createHash } from "node:crypto";
import { Cron } from "croner";
import type { Entry, HeartbeatCheck } from "../domain/model.ts";
import type { ShownStatus } from "../status/shown.ts";
import type { Incident } from "../store/store.ts";

/** HC's check statuses (v2, v3: `started` is a field of its own there; v1 also says `started` as a status). */
export type HcStatus = "new" | "up" | "grace" | "down" | "paused";

/** The versions of HC's API served: the same endpoints, under /api/v1/, /api/v2/ and /api/v3/. */
export type HcVersion = 1 | 2 | 3;

/** healthd's shown status as HC says it: late is HC's grace, blocked is down, degraded is up. */
export function hcStatus(shown: ShownStatus): HcStatus {
  switch (shown) {
    case "late":
      return "grace";
    case "blocked":
      return "down";
    case "degraded":
      return "up";
    case "unknown":
      return "new";
    default:
      return shown;
  }
}

/** ISO 8601 as HC writes it: `+00:00`, seconds precision (its `isostring`), or with microseconds (a ping's date). */
export function hcTime(ms: number, precise = false): string {
  const iso = new Date(ms).toISOString();
  // Python's isoformat() leaves the fraction out when it is zero.
  if (precise && ms % 1000 !== 0) return iso.replace(/\.(\d{3})Z$/, ".$1000+00:00");
  return iso.replace(/\.\d{3}Z$/, "+00:00");
}

/** HC's `unique_key` of a check: the SHA-1 of the first 16 hex digits of its UUID (what read-only keys see instead of it). */
export const uniqueKey = (uuid: string) => createHash("sha1").update(uuid.replaceAll("-", "").slice(0, 16)).digest("hex");

/**
 * A channel's id in HC's form (a UUID). healthd names channels; the id is made from the name (SHA-1 based, as a
 * version-5 UUID is), so it stays the same across restarts and nodes and can be given back in `channels`.
 */
export function channelUuid(name: string): string {
  const hex = createHash("sha1").update(`healthd channel ${name}`).digest("hex");
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** What healthd knows of a heartbeat service, as healthchecks-api.ts reads it. */
export interface CheckFacts {
  readonly serverId: string;
  readonly serviceId: string;
  readonly name: string;
  readonly tags: readonly string[];
  readonly check: HeartbeatCheck & { readonly pingKey: string };
  readonly status: HcStatus;
  /** A run is going (a start not finished yet). */
  readonly started: boolean;
  readonly lastPingAt: number | null;
  readonly lastDurationMs: number | null;
  /** When the next ping is due (HC's grace start). */
  readonly dueAt: number | null;
  readonly nPings: number;
}

/**
 * HC's Check.to_dict: the read-write view, or the read-only one (no uuid nor URLs; a unique_key instead). Of
 * the API's version: v1 says a check with a run going is `started` (unless down or paused), and its URLs are v1's.
 */
export function checkDict(facts: CheckFacts, options: { readonly readOnly: boolean; readonly base: string; readonly version: HcVersion }) {
  const { check } = facts;
  const uuid = check.pingKey;
  const dict: Record<string, unknown> = {
    name: facts.name,
    slug: facts.serviceId,
    tags: facts.tags.join(" "),
    desc: "",
    grace: check.graceSeconds,
    n_pings: facts.nPings,
    status: options.version === 1 && facts.started && facts.status !== "down" && facts.status !== "paused" ? "started" : facts.status,
    started: facts.started,
    last_ping: facts.lastPingAt === null ? null : hcTime(facts.lastPingAt),
    // HC gives the grace start only while the check is up (its grace is computed, its stored status still up).
    next_ping: (facts.status === "up" || facts.status === "grace") && facts.dueAt !== null ? hcTime(facts.dueAt) : null,
    manual_resume: check.manualResume,
    methods: "",
    subject: "",
    subject_fail: "",
    start_kw: "",
    success_kw: "",
    failure_kw: "",
    filter_subject: false,
    filter_body: false,
    filter_http_body: false,
    filter_default_fail: false,
    badge_url: `${options.base}/badges/${encodeURIComponent(facts.serverId)}/${encodeURIComponent(facts.serviceId)}/status.svg`,
  };
  if (facts.lastDurationMs) dict.last_duration = Math.floor(facts.lastDurationMs / 1000);
  if (options.readOnly) dict.unique_key = uniqueKey(uuid);
  else {
    const update = `${options.base}/api/v${options.version}/checks/${uuid}`;
    Object.assign(dict, {
      uuid,
      ping_url: `${options.base}/ping/${uuid}`,
      update_url: update,
      pause_url: `${update}/pause`,
      resume_url: `${update}/resume`,
      channels: (check.channels ?? []).map(channelUuid).sort().join(","),
    });
  }
  if (check.cron === null) dict.timeout = check.periodSeconds;
  else Object.assign(dict, { schedule: check.cron, tz: check.timezone ?? "UTC" });
  return dict;
}

/** The entries that are pings (not what healthd saw itself: a missed deadline, a run too long). */
export const isPing = (e: Entry) => e.kind !== null && e.kind !== "missed" && e.kind !== "too-long";

/**
 * HC's pings, newest first, from a heartbeat's entries (newest first). `n` counts the kept pings from the
 * oldest, 1 up. What healthd does not keep of a ping (address, method, agent, scheme, run id) HC would have
 * told; here it is empty ("http" for the scheme). A body is given inline, not behind a body_url.
 */
export function pingDicts(entries: readonly Entry[]) {
  const pings = entries.filter(isPing);
  return pings.map((e, i) => {
    const type = e.kind === "exit" ? (e.exitCode === 0 ? "success" : "fail") : e.kind;
    const dict: Record<string, unknown> = {
      type,
      date: hcTime(e.checkedAt, true),
      n: pings.length - i,
      scheme: "http",
      remote_addr: null,
      method: "",
      ua: "",
      rid: null,
      body_url: null,
    };
    if ((type === "success" || type === "fail") && e.durationMs !== null) dict.duration = Math.round(e.durationMs / 10) / 100;
    return dict;
  });
}

/** HC's flips from incidents (newest first): down when one opened, up when it closed; newest first, in [start, end). */
export function flipDicts(incidents: readonly Incident[], window: { readonly start: number; readonly end: number }) {
  const flips = incidents.flatMap((i) => [
    ...(i.closedAt === null ? [] : [{ at: i.closedAt, up: 1 }]),
    { at: i.openedAt, up: 0 },
  ]);
  return flips
    .filter((f) => f.at >= window.start && f.at < window.end)
    .sort((a, b) => b.at - a.at)
    .map((f) => ({ timestamp: hcTime(f.at), up: f.up }));
}

/** The fields HC's create and update take (its `Spec`), as read from a body. */
export interface HcSpec {
  readonly name?: string;
  readonly slug?: string;
  readonly tags?: string;
  readonly desc?: string;
  readonly timeout?: number;
  readonly grace?: number;
  readonly schedule?: string;
  readonly tz?: string;
  readonly manual_resume?: boolean;
  readonly methods?: string;
  readonly channels?: string;
  readonly unique?: readonly ("name" | "slug" | "tags" | "timeout" | "grace")[];
  /** healthd's own: the server (HC's project) a new check goes to. */
  readonly server?: string;
}

const year = 31_536_000;
const strings = ["tags", "desc", "start_kw", "success_kw", "failure_kw", "subject", "subject_fail"] as const;
const booleans = ["manual_resume", "filter_subject", "filter_body", "filter_http_body", "filter_default_fail"] as const;
const uniqueFields = ["name", "slug", "tags", "timeout", "grace"];
// HC rewrites these legacy zone names before it validates them.
const legacyZones: Readonly<Record<string, string>> = { "Europe/Kiev": "Europe/Kyiv", UCT: "Etc/UTC", CET: "Europe/Brussels" };

/**
 * HC's create/update body read with HC's rules and texts: the first problem, as `json validation error: ...`
 * (HC's clients show it as it is). Unknown keys are ignored, as HC does.
 */
export function readSpec(body: Readonly<Record<string, unknown>>): { readonly ok: true; readonly spec: HcSpec } | { readonly ok: false; readonly error: string } {
  const fail = (message: string) => ({ ok: false as const, error: `json validation error: ${message}` });
  const spec: Record<string, unknown> = {};
  const text = (key: string, max: number): string | undefined => {
    const value = body[key];
    if (value === undefined) return undefined;
    if (typeof value !== "string") return `${key} is not a string`;
    if (value.length > max) return `${key} is too long`;
    spec[key] = value;
    return undefined;
  };
  const seconds = (key: "timeout" | "grace"): string | undefined => {
    const value = body[key];
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isFinite(value)) return `${key} is not a number`;
    if (value < 60) return `${key} is too small`;
    if (value > year) return `${key} is too large`;
    spec[key] = Math.round(value);
    return undefined;
  };
  const problem =
    text("name", 100) ??
    text("slug", 100) ??
    (typeof spec.slug === "string" && !/^[a-z0-9-_]*$/.test(spec.slug) ? "slug does not match pattern" : undefined) ??
    strings.map((key) => text(key, key === "tags" || key === "desc" ? Infinity : 200)).find(Boolean) ??
    seconds("timeout") ??
    seconds("grace") ??
    text("schedule", 100) ??
    (typeof spec.schedule === "string" ? scheduleProblem(spec.schedule) : undefined) ??
    text("tz", 100) ??
    (typeof spec.tz === "string" ? zoneProblem(spec, spec.tz) : undefined) ??
    booleans.map((key) => (body[key] === undefined || typeof body[key] === "boolean" ? undefined : `${key} is not a boolean`)).find(Boolean) ??
    (body.methods === undefined || body.methods === "" || body.methods === "POST" ? undefined : "methods has unexpected value") ??
    text("channels", Infinity) ??
    uniqueProblem(body.unique, spec) ??
    text("server", 64);
  if (problem) return fail(problem);
  if (typeof body.manual_resume === "boolean") spec.manual_resume = body.manual_resume;
  if (typeof body.methods === "string") spec.methods = body.methods;
  return { ok: true, spec: spec as HcSpec };
}

/** A cron expression healthd can run (HC also takes systemd OnCalendar, which healthd does not). */
function scheduleProblem(schedule: string): string | undefined {
  if (schedule === "") return undefined;
  const invalid = "schedule is not a valid cron or OnCalendar expression";
  if (schedule.includes("\n") || schedule.trim().split(/\s+/).length !== 5) return `${invalid} (healthd takes 5-field cron expressions only, such as "0 3 * * *")`;
  try {
    if (new Cron(schedule, { paused: true }).nextRun() === null) return invalid;
  } catch {
    return invalid;
  }
  return undefined;
}

function zoneProblem(spec: Record<string, unknown>, zone: string): string | undefined {
  const named = legacyZones[zone] ?? zone;
  try {
    new Intl.DateTimeFormat("en", { timeZone: named });
  } catch {
    return "tz is not a valid timezone";
  }
  spec.tz = named;
  return undefined;
}

function uniqueProblem(unique: unknown, spec: Record<string, unknown>): string | undefined {
  if (unique === undefined) return undefined;
  if (!Array.isArray(unique)) return "unique is not an array";
  if (unique.some((field) => typeof field !== "string" || !uniqueFields.includes(field))) return "an item in 'unique' has unexpected value";
  spec.unique = unique;
  return undefined;
}

/** The heartbeat fields a check of HC's takes when created: HC's defaults (a day, an hour of grace). */
export const hcDefaults = { periodSeconds: 86_400, cron: null, timezone: null, graceSeconds: 3600 } as const;

/**
 * A heartbeat check (as a document writes it) from `before` (its stored check, or HC's defaults for a new one)
 * changed as `spec` says: a non-empty schedule makes it a cron check (timeout then ignored, as HC does), else a
 * timeout makes it a periodic one; manual_resume is manualResume. `channels` are the channel names the spec's `channels` resolved to (null:
 * the server's default; undefined: unchanged).
 */
export function heartbeatInput(before: Readonly<Record<string, unknown>> & { readonly cron: string | null; readonly timezone: string | null }, spec: HcSpec, channels: readonly string[] | null | undefined) {
  const check: Record<string, unknown> = { ...before, type: "heartbeat" };
  if (spec.schedule) Object.assign(check, { cron: spec.schedule, periodSeconds: null, timezone: spec.tz ?? before.timezone ?? "UTC" });
  else if (spec.timeout !== undefined) Object.assign(check, { periodSeconds: spec.timeout, cron: null, timezone: null });
  else if (spec.tz !== undefined && before.cron !== null) check.timezone = spec.tz;
  if (spec.grace !== undefined) check.graceSeconds = spec.grace;
  // HC's manual_resume is healthd's manualResume: a ping does not resume the paused heartbeat.
  if (spec.manual_resume !== undefined) check.manualResume = spec.manual_resume;
  if (channels !== undefined) check.channels = channels;
  return check;
}

/**
 * Whether a check matches a create's `unique` fields (HC's upsert): every field listed must be given and equal.
 * Tags compare as HC's do, as one space-separated string (healthd's, lowercased, in their order).
 */
export function matchesUnique(spec: HcSpec, dict: Readonly<Record<string, unknown>>): boolean {
  const unique = spec.unique ?? [];
  if (unique.length === 0) return false;
  return unique.every((field) => spec[field] !== undefined && (dict[field] ?? null) === spec[field]);
}

/** HC's space-separated tags as healthd's list: each once (the schema lowercases and checks them). */
export const hcTags = (text: string): string[] => [...new Set(text.split(/\s+/).filter(Boolean).map((t) => t.toLowerCase()))];

/** A service id from a name, as HC's slugify would make a slug. */
export const slugify = (name: string) => name.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60);

/** `id`, or `id-2`, `id-3`... the first not `taken`. */
export function freeId(id: string, taken: ReadonlySet<string>): string {
  if (!taken.has(id)) return id;
  let n = 2;
  while (taken.has(`${id}-${n}`)) n++;
  return `${id}-${n}`;
}
