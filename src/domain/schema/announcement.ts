/**
 * What people are told on the status page: announcements and their updates (POST /announcements, `healthd
 * announce`); named status pages are in status-page.ts. Messages are Markdown, rendered with HTML off
 * (src/status/markdown.ts).
 */
import { z } from "zod";
import { id, limits, time } from "./common.ts";

export const severities = ["info", "maintenance", "degraded", "outage"] as const;
export type Severity = (typeof severities)[number];

/** Past this a message is a document, not an announcement; it also bounds what one page may carry. */
export const maxMessageLength = 10_000;
/** Updates of one announcement: past this, post a new one. */
export const maxUpdates = 100;

const severity = z.enum(severities, 'must be "info", "maintenance", "degraded" or "outage"');
const title = z.string().trim().min(1, "must not be empty").max(limits.nameLength, `must be at most ${limits.nameLength} characters`);
const message = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(maxMessageLength, `must be at most ${maxMessageLength} characters; link to a longer write-up instead`);
const servers = z
  .array(id)
  .min(1, "must name at least one server, or be null for all")
  .max(limits.servicesPerServer)
  .refine((ids) => new Set(ids).size === ids.length, "names a server twice; name each once");

export const announcementBody = z.strictObject({
  title: title.describe("One line: what is happening"),
  message: message.describe("Markdown: paragraphs, emphasis, links, lists; HTML is shown as text"),
  severity: severity.default("info"),
  servers: servers.nullable().default(null).describe("The servers it concerns (it leads their pages too); null or absent: all"),
  startsAt: time.optional().describe("When it is shown from (ISO 8601); default now. A later one is listed as scheduled"),
  endsAt: time.nullable().optional().describe("When it ends (ISO 8601); null or absent: when it is ended (PATCH)"),
});
export type AnnouncementInput = z.output<typeof announcementBody>;

export const updateBody = z.strictObject({
  message: message.describe("Markdown, as the announcement's"),
  severity: severity.optional().describe("The announcement's severity from now on; absent: unchanged"),
});

export const patchBody = z
  .strictObject({
    title: title.optional(),
    message: message.optional(),
    severity: severity.optional(),
    servers: servers.nullable().optional(),
    startsAt: time.optional(),
    endsAt: time.nullable().optional().describe("When it ends; null: not until ended"),
    ended: z.literal(true, "can only be true (end it now)").optional().describe("true: end it now"),
  })
  .refine((p) => !(p.ended && p.endsAt !== undefined), { path: ["ended"], message: "give either ended or endsAt, not both" })
  .refine((p) => Object.keys(p).length > 0, { message: 'says nothing to change; send for example {"ended": true}' });
export type AnnouncementPatch = z.output<typeof patchBody>;
