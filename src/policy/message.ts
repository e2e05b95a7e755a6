/**
 * What a DOWN, RECOVERED, reminder or CERT notification says: pure. ntfy's JSON publishing form, so titles and messages
 * travel as UTF-8 whatever they contain.
 */
import type { CheckType, ErrorKind, IncidentState, NotificationBody } from "../domain/model.ts";
import type { Notice } from "./incident.ts";
import { outageMs } from "./outage.ts";

/** What a notification says of the result (or, with several locations, the verdict) that called for it. */
export interface Judged {
  readonly ok: boolean;
  readonly checkedAt: number;
  readonly errorKind: ErrorKind | null;
  readonly error: string | null;
  /** A heartbeat's failed run: the last lines of what it printed (lastLines), which its DOWN carries. */
  readonly output?: string | null;
}

/** How much of a failed run's output a DOWN carries, at most. */
export const outputChars = 1000;

/**
 * The end of a job's output, as a DOWN quotes it: at most `max` characters, whole lines from a line's start
 * (the last lines are what says why a job failed), without the blank lines around them. A last line longer
 * than `max` on its own keeps its end, after an ellipsis. Null when there is nothing to show.
 */
export function lastLines(text: string | null | undefined, max = outputChars): string | null {
  if (!text) return null;
  const trimmed = text.replace(/\s+$/, "");
  if (trimmed.length <= max) return trimmed.replace(/^(?:[ \t]*\r?\n)+/, "") || null;
  const tail = trimmed.slice(trimmed.length - max);
  const start = tail.search(/\n/);
  // The cut fell inside a line: begin at the next line's start; with no line start in reach, keep the end.
  if (start >= 0 && start < tail.length - 1) return tail.slice(start + 1).replace(/^(?:[ \t]*\r?\n)+/, "") || null;
  // Room for the ellipsis, and never half of a surrogate pair (a lone half would be stored as U+FFFD).
  const end = tail.slice(1);
  return `…${/^[\uDC00-\uDFFF]/.test(end) ? end.slice(1) : end}`;
}

export interface Subject {
  readonly serverId: string;
  readonly serviceId: string;
  readonly type: CheckType;
  /** What is checked (model.ts targetOf): an http check's URL, a tcp or dns target; empty for a heartbeat. */
  readonly url: string;
}

/** The line that says what is checked, and where a click on the notification goes (an http check's URL). */
function checked(subject: Subject): { line: string[]; click?: string } {
  if (subject.type === "heartbeat") return { line: [] };
  return subject.type === "http" ? { line: [`URL: ${subject.url}`], click: subject.url } : { line: [`Target: ${subject.url}`] };
}

/** What failed, counted: a heartbeat is not checked, its runs fail or its pings go missing. */
const failed = (subject: Subject, n: number) =>
  subject.type === "heartbeat" ? `${n} ${n === 1 ? "failure" : "consecutive failures"}` : `${n} ${n === 1 ? "failed check" : "consecutive failed checks"}`;

/** ntfy shows tags that are emoji short codes as emoji in front of the title. */
const tags = {
  down: ["rotating_light", "healthd", "down"],
  recovered: ["white_check_mark", "healthd", "recovered"],
  reminder: ["hourglass", "healthd", "down"],
};

export function renderNotification(
  kind: Notice,
  subject: Subject,
  result: Judged,
  before: IncidentState,
  after: IncidentState,
  /** The incident's failed checks (RECOVERED says how many); by default the failures in a row before this result. */
  failures = before.consecutiveFailures,
  /** The incident's first failed check (its stored startedAt): every notice counts its outage from it. */
  startedAt = before.failingSince ?? after.failingSince ?? result.checkedAt,
): NotificationBody {
  const name = `${subject.serverId}/${subject.serviceId}`;
  const at = iso(result.checkedAt);
  const { line: what, click } = checked(subject);
  // While it is open, the outage so far; a RECOVERED's result is the pass that closed it.
  const lasted = duration(outageMs({ startedAt, closedAt: result.checkedAt }, result.checkedAt));
  if (kind === "down") {
    return {
      title: `DOWN: ${name}`,
      message: [
        `${result.errorKind}: ${result.error}`,
        ...what,
        `${failed(subject, after.consecutiveFailures)} since ${iso(startedAt)}`,
        `Checked at ${at}`,
        // Last, so that a channel that cuts long messages (Discord at 2,000) cuts the output, not the facts.
        ...(result.output ? ["", "Last lines of its output:", result.output] : []),
      ].join("\n"),
      priority: 4,
      tags: tags.down,
      ...(click && { click }),
    };
  }
  if (kind === "reminder") {
    return {
      title: `Still DOWN: ${name}`,
      message: [
        `still DOWN for ${lasted} (${failed(subject, after.consecutiveFailures)})`,
        `${result.errorKind}: ${result.error}`,
        ...what,
        `Down since ${iso(startedAt)}, checked at ${at}`,
      ].join("\n"),
      priority: 4,
      tags: tags.reminder,
      ...(click && { click }),
    };
  }
  const alertedAt = before.incidentOpenSince ?? startedAt;
  return {
    title: `RECOVERED: ${name}`,
    message: [
      `Passing again after ${failures} ${subject.type === "heartbeat" ? (failures === 1 ? "failure" : "failures") : failures === 1 ? "failed check" : "failed checks"}; down for ${lasted}`,
      ...what,
      `Down since ${iso(startedAt)}, alerted at ${iso(alertedAt)}, recovered at ${at}`,
    ].join("\n"),
    priority: 3,
    tags: tags.recovered,
    ...(click && { click }),
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

/** The warning that a service's TLS certificate expires soon (priority default, tags healthd, certificate). */
export function renderCertWarning(subject: Subject, expiresAt: number, checkedAt: number, warnDays: number): NotificationBody {
  const left = expiresAt - checkedAt;
  return {
    title: `CERT: ${subject.serverId}/${subject.serviceId} expires in ${duration(Math.max(0, left))}`,
    message: [
      `The TLS certificate expires at ${iso(expiresAt)}, fewer than ${warnDays} days from now (certWarnDays).`,
      ...checked(subject).line,
      `Checked at ${iso(checkedAt)}`,
    ].join("\n"),
    priority: 3,
    tags: ["healthd", "certificate"],
    ...(subject.type === "http" ? { click: subject.url } : {}),
  };
}

/** A check passing, but slower than its slowMs for `streak` checks in a row (priority default, tags healthd, slow). */
export function renderSlow(subject: Subject, result: { latencyMs: number; checkedAt: number }, streak: number, slowMs: number): NotificationBody {
  const { line: what, click } = checked(subject);
  return {
    title: `SLOW: ${subject.serverId}/${subject.serviceId} took ${Math.round(result.latencyMs)} ms`,
    message: [
      `${streak} ${streak === 1 ? "check" : "checks in a row"} slower than ${slowMs} ms (slowMs); it still passes`,
      ...what,
      `Checked at ${iso(result.checkedAt)}`,
    ].join("\n"),
    priority: 3,
    tags: ["snail", "healthd", "slow"],
    ...(click && { click }),
  };
}

/** The end of slow checks a SLOW notice told of (priority low, tags healthd, normal). */
export function renderNormal(subject: Subject, result: { latencyMs: number; checkedAt: number }, streak: number, slowMs: number): NotificationBody {
  const { line: what, click } = checked(subject);
  return {
    title: `NORMAL: ${subject.serverId}/${subject.serviceId} took ${Math.round(result.latencyMs)} ms`,
    message: [`Back under ${slowMs} ms (slowMs) after ${streak} slow ${streak === 1 ? "check" : "checks"}`, ...what, `Checked at ${iso(result.checkedAt)}`].join("\n"),
    priority: 2,
    tags: ["white_check_mark", "healthd", "slow"],
    ...(click && { click }),
  };
}

/** The warning that the registration of a service's domain expires soon (priority high: a lapsed domain takes everything down). */
export function renderDomainWarning(subject: Subject, domain: string, expiresAt: number, checkedAt: number, warnDays: number): NotificationBody {
  const { line: what, click } = checked(subject);
  return {
    title: `DOMAIN: ${domain} expires in ${duration(Math.max(0, expiresAt - checkedAt))} (${subject.serverId}/${subject.serviceId})`,
    message: [
      `The registration of ${domain} expires at ${iso(expiresAt)}, fewer than ${warnDays} days from now (domainWarnDays); renew it with its registrar.`,
      ...what,
      `Checked at ${iso(checkedAt)}`,
    ].join("\n"),
    priority: 4,
    tags: ["healthd", "domain"],
    ...(click && { click }),
  };
}
