/**
 * The pages of an acknowledgement link (notify/ack-link.ts): what a GET shows (the incident and a button that
 * POSTs: a GET changes nothing, since mail scanners and chat previews fetch links), and what became of a POST.
 * No script; the policy allows its own style and posting the form to this origin, nothing else.
 */
import { createHash } from "node:crypto";
import { html, raw } from "./html.ts";

const css = `
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --muted: #59636e; --accent: #0969da; --button: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #f0f6fc; --bg: #0d1117; --muted: #9198a1; --accent: #4493f8; --button: #1f6feb; } }
body { font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0; display: grid; place-items: center; min-height: 100vh; }
main { width: min(28rem, 100vw - 2rem); }
h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
p { color: var(--muted); margin: 0 0 1rem; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
input { box-sizing: border-box; width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--muted); border-radius: 6px; background: var(--bg); color: var(--fg); }
input:focus, button:focus { outline: 3px solid var(--accent); outline-offset: 1px; }
button { margin-top: .75rem; font: inherit; font-weight: 600; padding: .5rem 1rem; border: 0; border-radius: 6px; background: var(--button); color: #fff; cursor: pointer; }
`;

export const ackPagePolicy = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(css).digest("base64")}'`,
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** What the pages say of the incident. */
export interface AckSubject {
  readonly server: string;
  readonly service: string;
  readonly since: string;
  readonly error: string | null;
}

const page = (title: string, body: ReturnType<typeof html>) =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex"><title>${title}: healthd</title>
<style>${raw(css)}</style></head>
<body><main>
${body}
</main></body></html>
`.text;

/** The confirmation: the incident, an optional note, and the button that acknowledges it. */
export function renderAckForm(subject: AckSubject, action: string): string {
  return page(
    "Acknowledge",
    html`<h1>Acknowledge ${subject.server}/${subject.service}?</h1>
<p>Down since ${subject.since}${subject.error ? html`: ${subject.error}` : ""}.</p>
<p>Acknowledging tells the team you are on it and stops its reminders and escalations; its RECOVERED still comes.</p>
<form method="post" action="${action}">
<label for="note">Note (optional)</label>
<input id="note" name="note" maxlength="1000" autocomplete="off">
<button type="submit">Acknowledge</button>
</form>`,
  );
}

/** What became of it: acknowledged, or why not (already, over, a link that is not healthd's). */
export function renderAckResult(title: string, detail: string): string {
  return page(title, html`<h1>${title}</h1>
<p>${detail}</p>`);
}
