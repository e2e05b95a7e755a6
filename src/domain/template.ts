/**
 * Templates of channels (a webhook's body, a title or message on any channel): Mustache, which is logic-less (it
 * can name a field, or show a part when a field is set, and nothing else: no code, no calls, no partials), with
 * every {{field}} escaped for where the text goes (a JSON string, HTML, or plain text as is).
 */
import Mustache from "mustache";

/** What a template may name: a notification's event (policy/event.ts), as docs/guide/notifications.md documents it. */
export const eventFieldNames = [
  "id", "event", "server", "service", "serverName", "serviceName", "url", "error", "since", "duration", "statusPage", "incidentId", "at",
  "title", "message", "output", "held", "services", "group", "ackUrl", "ackedBy", "ackNote",
] as const;
export type EventField = (typeof eventFieldNames)[number];
const known = new Set<string>(eventFieldNames);

/** Where a rendered template goes, which says how a field's text is escaped. */
export type Target = "json" | "html" | "text";

const escapes: Record<Target, (text: string) => string> = {
  json: (text) => JSON.stringify(String(text)).slice(1, -1),
  html: (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`),
  text: (text) => String(text),
};

type Token = [string, string, number, number, Token[]?];

/** Why `template` cannot be used (a syntax error, a partial, a field that no event has); undefined when it can. */
export function templateProblem(template: string): string | undefined {
  let tokens: Token[];
  try {
    tokens = Mustache.parse(template) as Token[];
  } catch (error) {
    return `is not a valid template: ${(error as Error).message}`;
  }
  const walk = (list: readonly Token[]): string | undefined => {
    for (const [type, name, , , inner] of list) {
      if (type === ">") return `uses a partial ({{>${name}}}), which templates here cannot; write the text in place`;
      if (type === "=") return "changes the delimiters, which templates here cannot; use {{ and }}";
      if ((type === "name" || type === "&" || type === "#" || type === "^") && name !== "." && !known.has(name)) {
        return `names {{${name}}}, which is not a field of an event; the fields are ${eventFieldNames.join(", ")}`;
      }
      const problem = inner && walk(inner);
      if (problem) return problem;
    }
    return undefined;
  };
  return walk(tokens);
}

/** `template` with the event's fields, escaped for `target`. The template was checked when it was stored. */
export function render(template: string, fields: Readonly<Partial<Record<EventField, string | number | null | readonly string[]>>>, target: Target): string {
  return Mustache.render(template, fields, {}, { escape: escapes[target] });
}
