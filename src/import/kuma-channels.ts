/** Uptime Kuma's notification settings, carried over as healthd channels where healthd has their kind. */
import type { DocumentBuilder } from "./common.ts";
import { bool, num, str } from "./kuma-values.ts";

/**
 * Kuma's notification settings as channels, where healthd has a channel of the kind: Slack, Discord, Teams,
 * Mattermost, Telegram, Gotify, Matrix, PagerDuty, SMTP, webhooks and ntfy (the field names are those of Kuma's
 * server/notification-providers). Answers the channel each carried setting became, by Kuma's id.
 */
export function channelsFrom(settings: readonly Record<string, unknown>[], builder: DocumentBuilder): Map<number, string> {
  const made = new Map<number, string>();
  for (const setting of settings) {
    const id = num(setting.id, 0);
    const name = str(setting.name) ?? `notification ${id}`;
    let config: Record<string, unknown>;
    try {
      config = typeof setting.config === "string" ? (JSON.parse(setting.config) as Record<string, unknown>) : ((setting.config ?? {}) as Record<string, unknown>);
    } catch {
      builder.note(`notification ${JSON.stringify(name)}`, "its settings are not JSON; not carried over");
      continue;
    }
    const what = `notification ${JSON.stringify(name)} (${String(config.type)})`;
    if (setting.active !== undefined && !bool(setting.active)) {
      builder.note(what, "it is turned off in Kuma; not carried over");
      continue;
    }
    const doc = channelOf(config, (why) => builder.note(what, why));
    if (doc) made.set(id, builder.channel(name, Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null && v !== undefined)), `kuma-${id}`));
  }
  return made;
}

function channelOf(c: Record<string, unknown>, note: (why: string) => void): Record<string, unknown> | undefined {
  const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : null);
  switch (String(c.type).toLowerCase()) {
    case "slack":
      return { type: "slack", url: text(c.slackwebhookURL) };
    case "discord":
      return { type: "discord", url: text(c.discordWebhookUrl) };
    case "teams":
      note("healthd posts an Adaptive Card, which a Teams Workflows webhook takes; an old Office 365 connector URL needs replacing");
      return { type: "teams", url: text(c.webhookUrl) };
    case "mattermost":
      return { type: "mattermost", url: text(c.mattermostWebhookUrl) };
    case "telegram":
      return { type: "telegram", token: text(c.telegramBotToken), chatId: text(c.telegramChatID) };
    case "gotify":
      return { type: "gotify", url: text(c.gotifyserverurl), token: text(c.gotifyapplicationToken) };
    case "matrix":
      return { type: "matrix", url: text(c.homeserverUrl), room: text(c.internalRoomId), token: text(c.accessToken) };
    case "pagerduty":
      return { type: "pagerduty", routingKey: text(c.pagerdutyIntegrationKey), url: text(c.pagerdutyIntegrationUrl) };
    case "smtp": {
      // Kuma's "secure" off lets nodemailer upgrade when it can; healthd asks for STARTTLS outright.
      const to = [c.smtpTo, c.smtpCC, c.smtpBCC].flatMap((list) => (typeof list === "string" ? list.split(",").map((a) => a.trim()).filter(Boolean) : []));
      if (text(c.smtpCC) || text(c.smtpBCC)) note("its CC and BCC become recipients beside To");
      return {
        type: "email", host: text(c.smtpHost), port: num(c.smtpPort, 587), secure: bool(c.smtpSecure) ? "tls" : "starttls", user: text(c.smtpUsername),
        password: text(c.smtpPassword), from: text(c.smtpFrom), to, ...(bool(c.smtpIgnoreTLSError) ? { verifyTls: false } : {}),
      };
    }
    case "webhook": {
      note("healthd's webhook body is its own event JSON, not Kuma's {heartbeat, monitor, msg}: check the receiver");
      let headers: unknown = {};
      try {
        headers = typeof c.webhookAdditionalHeaders === "string" && c.webhookAdditionalHeaders.trim() !== "" ? JSON.parse(c.webhookAdditionalHeaders) : {};
      } catch {
        note("its additional headers are not JSON; left out");
      }
      return { type: "webhook", url: text(c.webhookURL), ...(headers && typeof headers === "object" && Object.keys(headers).length > 0 ? { headers } : {}) };
    }
    case "ntfy":
      if (c.ntfyAuthenticationMethod === "usernamePassword") note("a user and password do not carry over (an ntfy channel takes a token): give it one");
      return { type: "ntfy", url: text(c.ntfyserverurl), topic: text(c.ntfytopic), token: c.ntfyAuthenticationMethod === "accessToken" ? text(c.ntfyaccesstoken) : null };
    default:
      note("healthd has no channel of this kind; not carried over (a webhook channel may stand in)");
      return undefined;
  }
}
