/**
 * A channel as PUT /channels/{name} and `channels:` in a servers file take it: a type, that type's fields, the
 * events it takes and optional title and message templates. Any string field may be `${NAME}`, read from the
 * sending node's environment when a message goes out (so its format is checked then, not here).
 */
import { z } from "zod";
import { templateProblem } from "../template.ts";
import { id, integer, limits, topic } from "./common.ts";
import { sentHeaders } from "./headers.ts";

/** The channel the daemon's --ntfy-* flags make, always there. */
export const builtInChannel = "ntfy";

export const channelEvents = ["down", "recovered", "reminder", "cert", "domain", "slow", "late", "ack", "escalation", "test"] as const;
export type ChannelEvent = (typeof channelEvents)[number];

/** `${NAME}` (or `${NAME:-default}`) somewhere in a value: it is filled from the environment at send time. */
export const variablePattern = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const oneVariable = new RegExp(variablePattern.source); // without /g, whose lastIndex would carry between tests
export const hasVariable = (value: string) => oneVariable.test(value);

/** A string checked by `rule` unless it holds a `${NAME}`, which is checked when it is read. */
const filled = (max: number, rule?: (value: string) => string | undefined) =>
  z
    .string()
    .min(1, "must not be empty")
    .max(max)
    .superRefine((value, ctx) => {
      // A variable is checked when it is read; "***" is a secret as answers show it, kept from the stored channel.
      if (hasVariable(value) || value === "***") return;
      const problem = rule?.(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

function httpUrlProblem(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? undefined : "must be an http:// or https:// URL";
  } catch {
    return "must be an http:// or https:// URL (for example https://hooks.example.org/healthd)";
  }
}

const url = filled(limits.urlLength, httpUrlProblem);
const secret = filled(4096);
const template = z
  .string()
  .max(16_384)
  .superRefine((value, ctx) => {
    const problem = templateProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
const address = filled(320, (value) => (/^[^\s@<>]+@[^\s@<>]+$/.test(value) || /^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(value) ? undefined : "must be an email address (ops@example.org, or Ops <ops@example.org>)"));

/** What every type has. */
const common = {
  events: z
    .array(z.enum(channelEvents, `must be one of ${channelEvents.join(", ")}`))
    .min(1, "must name at least one event, or be null for all but test")
    .refine((events) => new Set(events).size === events.length, "names an event twice; name each once")
    .nullable()
    .default(null),
  title: template.optional(),
  message: template.optional(),
};

const webhookLike = { url, ...common };

/** Each type's fields. `url` defaults to the service's public endpoint where it has one. */
const types = {
  ntfy: z.strictObject({ type: z.literal("ntfy"), url: url.default("https://ntfy.sh"), topic: filled(64, (t) => (topic.safeParse(t).success ? undefined : "must be an ntfy topic: 1 to 64 characters of A-Z a-z 0-9 - _")), token: secret.optional(), ...common }),
  webhook: z.strictObject({
    type: z.literal("webhook"),
    url,
    method: z.enum(["POST", "PUT", "PATCH"], 'must be "POST", "PUT" or "PATCH"').default("POST"),
    // Checked as a check's are (schema/headers.ts): a CR, LF or content-length would fail every send after a 201.
    headers: sentHeaders("a channel").default({}),
    body: template.nullable().default(null),
    secret: secret.optional(),
    ...common,
  }),
  email: z.strictObject({
    type: z.literal("email"),
    to: z.array(address).min(1, "must name at least one address").max(50),
    from: address,
    host: filled(253),
    port: integer(1, 65535, 587).optional(),
    secure: z.enum(["tls", "starttls", "none"], 'must be "tls" (port 465), "starttls" (port 587) or "none" (port 25)').default("starttls"),
    user: filled(320).optional(),
    password: secret.optional(),
    // false accepts any certificate (a private SMTP relay with its own CA): the mail then travels encrypted but unverified.
    verifyTls: z.boolean().default(true),
    ...common,
  }),
  slack: z.strictObject({ type: z.literal("slack"), ...webhookLike }),
  discord: z.strictObject({ type: z.literal("discord"), ...webhookLike }),
  teams: z.strictObject({ type: z.literal("teams"), ...webhookLike }),
  mattermost: z.strictObject({ type: z.literal("mattermost"), ...webhookLike }),
  gotify: z.strictObject({ type: z.literal("gotify"), url, token: secret, ...common }),
  matrix: z.strictObject({
    type: z.literal("matrix"),
    url,
    room: filled(255, (r) => (/^![^:]+:.+$/.test(r) ? undefined : "must be a room id such as !abcdef:example.org (in Element: room settings, Advanced)")),
    token: secret,
    ...common,
  }),
  telegram: z.strictObject({ type: z.literal("telegram"), url: url.default("https://api.telegram.org"), token: secret, chatId: filled(64), ...common }),
  pagerduty: z.strictObject({ type: z.literal("pagerduty"), url: url.default("https://events.pagerduty.com/v2/enqueue"), routingKey: secret, ...common }),
};
export type ChannelType = keyof typeof types;

export const channelDocument = z.discriminatedUnion("type", Object.values(types) as unknown as [(typeof types)["ntfy"], ...(typeof types)[ChannelType][]], {
  error: (issue) => (issue.code === "invalid_union" ? `must be one of ${Object.keys(types).join(", ")}` : undefined),
});
export type ChannelDocument = z.output<typeof channelDocument>;

/** A channel's name: an id, but not `ntfy`, which the daemon's --ntfy-* flags make. */
export const channelName = id.refine((name) => name !== "ntfy", "is the channel the daemon's --ntfy-* flags make; give yours another name (ntfy-ops, say)");

