/**
 * What a DOWN or RECOVERED notification says: pure. ntfy's JSON publishing form, so titles and messages
 * travel as UTF-8 whatever they contain.
 */
import type { CheckResult } from "../model.ts";
import type { IncidentState, Transition } from "./incident.ts";

/** ntfy's JSON publish body (https://docs.ntfy.sh/publish/#publish-as-json). */
export interface NtfyMessage {
  readonly topic: string;
  readonly title?: string;
  readonly message?: string;
  /** 1 min, 2 low, 3 default, 4 high, 5 urgent. */
  readonly priority?: number;
  readonly tags?: readonly string[];
  readonly click?: string;
}

export type NotificationBody = Omit<NtfyMessage, "topic">;

export interface Subject {
  readonly serverId: string;
  readonly serviceId: string;
  readonly url: string;
}

/** ntfy shows tags that are emoji short codes as emoji in front of the title. */
const tags = { down: ["rotating_light", "healthd", "down"], recovered: ["white_check_mark", "healthd", "recovered"] };

export function renderNotification(
  kind: Transition,
  subject: Subject,
  result: CheckResult & { readonly checkedAt: number },
  before: IncidentState,
  after: IncidentState,
): NotificationBody {
  const name = `${subject.serverId}/${subject.serviceId}`;
  const at = iso(result.checkedAt);
  if (kind === "down") {
    const since = after.failingSince ?? result.checkedAt;
    return {
      title: `DOWN: ${name}`,
      message: [
        `${result.errorKind}: ${result.error}`,
        `URL: ${subject.url}`,
        `${after.consecutiveFailures} consecutive failed checks since ${iso(since)}`,
        `Checked at ${at}`,
      ].join("\n"),
      priority: 4,
      tags: tags.down,
      click: subject.url,
    };
  }
  const downSince = before.incidentOpenSince ?? before.failingSince ?? result.checkedAt;
  return {
    title: `RECOVERED: ${name}`,
    message: [
      `Passing again after ${before.consecutiveFailures} failed checks; down for ${duration(result.checkedAt - (before.failingSince ?? downSince))}`,
      `URL: ${subject.url}`,
      `Alerted at ${iso(downSince)}, recovered at ${at}`,
    ].join("\n"),
    priority: 3,
    tags: tags.recovered,
    click: subject.url,
  };
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h}h ${m % 60}m` : `${Math.floor(h / 24)}d ${h % 24}h`;
}
