/**
 * Moments as a page's readers say them: "12 minutes ago", "in 3 hours", "3 days ago" while recent, else a date
 * in the page's time zone ("6 Dec 2026, 14:05 CET"); the exact time always in the `<time>` element's
 * `datetime` (for machines) and `title` (on hover). Rendered on the server: the page needs no script for it.
 */
import { html, type Html } from "./html.ts";

/** What a page's moments are told against: when it was built, and its time zone (an IANA name). */
export interface Face {
  readonly now: number;
  readonly timeZone: string;
}

export const defaultTimeZone = "UTC";

/** One formatter per time zone: making one costs far more than using it. */
const formats = new Map<string, Intl.DateTimeFormat>();
const relative = new Intl.RelativeTimeFormat("en", { numeric: "always" });

/** A moment as a date and time in `timeZone`, to the minute: "6 Dec 2026, 14:05 UTC". */
export function dated(ms: number, timeZone: string): string {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone, timeZoneName: "short" });
    formats.set(timeZone, format);
  }
  return format.format(ms);
}

const minuteMs = 60_000;
const steps = [
  { unit: "minute", ms: minuteMs, below: 60 * minuteMs },
  { unit: "hour", ms: 60 * minuteMs, below: 24 * 60 * minuteMs },
  { unit: "day", ms: 24 * 60 * minuteMs, below: 7 * 24 * 60 * minuteMs },
] as const;

/** In words while within a week ("just now", "12 minutes ago", "in 3 hours"), else the date in the zone. */
export function spoken(ms: number, face: Face): string {
  const away = ms - face.now;
  if (Math.abs(away) < minuteMs) return "just now";
  for (const step of steps) {
    if (Math.abs(away) < step.below) return relative.format(Math.trunc(away / step.ms), step.unit);
  }
  return `on ${dated(ms, face.timeZone)}`;
}

/**
 * A moment as the page shows it: in words (`"words"`), or as a date in the page's zone (`"date"`: for the end
 * of a silence or a window, which people plan by); the exact time in `datetime` and `title` either way.
 */
export function moment(iso: string, face: Face, style: "words" | "date" = "words"): Html {
  const ms = Date.parse(iso);
  const exact = dated(ms, face.timeZone);
  return html`<time datetime="${iso}" title="${exact}">${style === "words" ? spoken(ms, face) : exact}</time>`;
}

/** ISO 8601 timestamps as checks and pings write them into their error texts. */
const isoInText = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})\b/g;

/** A text with every ISO timestamp in it told as a date in the page's zone: no raw timestamp reaches a reader. */
export function withDates(text: string, timeZone: string): string {
  return text.replace(isoInText, (iso) => {
    const ms = Date.parse(iso);
    return Number.isNaN(ms) ? iso : dated(ms, timeZone);
  });
}
