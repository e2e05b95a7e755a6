/**
 * A status page people are shown (PUT /status-pages/{slug}): what it lists, in sections of chosen services or
 * whole servers, how it looks (title, Markdown description, accent colour, footer links), where it answers
 * (its hostnames) and what its cards show. The page of slug `main` is /status itself.
 */
import { z } from "zod";
import { id, limits } from "./common.ts";
import { maxMessageLength } from "./announcement.ts";

/** The page /status shows when it exists (else every server). */
export const mainSlug = "main";
export const maxSections = 50;
export const maxFooterLinks = 20;
export const maxHostnames = 20;

const title = z.string().trim().min(1, "must not be empty").max(limits.nameLength, `must be at most ${limits.nameLength} characters`);

/** "server/service", or "server/*" for every service of that server (those added later too). */
export const serviceRef = z.string().superRefine((text, ctx) => {
  const [serverId, serviceId, ...rest] = text.split("/");
  const ok = rest.length === 0 && serviceId !== undefined && id.safeParse(serverId).success && (serviceId === "*" || id.safeParse(serviceId).success);
  if (!ok) ctx.addIssue({ code: "custom", message: `must be "server/service" or "server/*" (for example "web-01/checkout"), not ${JSON.stringify(text.slice(0, 100))}` });
});

/** A reference split in its parts; service null: every service of the server. */
export const splitRef = (ref: string) => {
  const [serverId, serviceId] = ref.split("/") as [string, string];
  return { serverId, serviceId: serviceId === "*" ? null : serviceId };
};

const section = z.strictObject({
  title: title.describe("The section's heading"),
  services: z
    .array(serviceRef)
    .min(1, 'must name at least one service ("server/service") or server ("server/*")')
    .max(limits.servicesPerServer)
    .refine((refs) => new Set(refs).size === refs.length, "names a service twice; name each once")
    .describe('What it lists, in order: "server/service", or "server/*" for all of a server\'s'),
});
export type PageSection = z.output<typeof section>;

const link = z.strictObject({
  label: title.describe("The link's text"),
  url: z
    .string()
    .max(limits.urlLength)
    .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), "must be an http:// or https:// URL (for example https://shop.example/help)"),
});

/** A host name as a Host header carries it, without a port; lowercase, so a lookup is one comparison. */
const hostname = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, "must be a host name such as status.example.com (no scheme, port or path)");

const servers = z
  .array(id)
  .min(1, "must name at least one server")
  .max(limits.servicesPerServer)
  .refine((ids) => new Set(ids).size === ids.length, "names a server twice; name each once");

export const statusPageBody = z
  .strictObject({
    title: title.describe("The page's heading"),
    description: z.string().trim().max(maxMessageLength).nullable().default(null).describe("Markdown shown under the title"),
    servers: servers.optional().describe("Whole servers it shows, in order (or give sections)"),
    sections: z.array(section).min(1, "must have at least one section").max(maxSections).optional().describe("What it shows, in sections of chosen services (or give servers)"),
    public: z.boolean().default(false).describe("true: anyone may read it, without a token (showing no URLs or error texts)"),
    accentColor: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/, "must be a colour as #rrggbb (for example #0b5fff)")
      .transform((c) => c.toLowerCase())
      .nullable()
      .default(null)
      .describe("Links and the heading's rule in this colour; null: healthd's"),
    footerLinks: z.array(link).max(maxFooterLinks).default([]).describe("Links in the footer, in order (http and https only)"),
    hostnames: z
      .array(hostname)
      .max(maxHostnames)
      .refine((h) => new Set(h).size === h.length, "names a host twice; name each once")
      .default([])
      .describe("Hosts that show this page at / (a request's Host header, without its port)"),
    showUptime: z.boolean().default(true).describe("Show each service's uptime"),
    showLatency: z.boolean().default(true).describe("Show each check's last latency (heartbeats never have one)"),
    showHistory: z.boolean().default(true).describe("Show each service's 90-day history bar"),
    timeZone: z
      .string()
      .max(100)
      .refine(isTimeZone, "must be an IANA time zone name such as Europe/Paris, America/New_York or UTC")
      .default("UTC")
      .describe("The time zone its dates are told in (an IANA name); recent moments read as \"12 minutes ago\""),
  })
  .superRefine((p, ctx) => {
    if ((p.servers === undefined) === (p.sections === undefined)) {
      ctx.addIssue({ code: "custom", path: ["sections"], message: 'give either sections ([{"title": "Shop", "services": ["web-01/*"]}]) or servers (["web-01"]), not both' });
    }
  });
export type StatusPageDocument = z.output<typeof statusPageBody>;

/** Whether Intl knows the IANA time zone name (the runtime's own list, so nothing is kept here to go stale). */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The servers a page shows anything of, in the order it names them. */
export function pageServers(p: Pick<StatusPageDocument, "servers" | "sections">): string[] {
  if (p.servers) return [...p.servers];
  return [...new Set((p.sections ?? []).flatMap((s) => s.services.map((ref) => splitRef(ref).serverId)))];
}
