/**
 * The frame of every console page: its head (the console's own style and script, nothing from elsewhere), a
 * skip link, the way back to the overview, who is signed in, and signing out. A component: values in, markup out.
 */
import { html, raw, type Html } from "../status/html.ts";
import { css, script } from "./look.ts";

/** Who is looking, as the pages need it: their name, whether they may act, and the CSRF token their forms carry. */
export interface Viewer {
  readonly name: string;
  readonly mayWrite: boolean;
  readonly csrf: string;
}

/** A form that POSTs an action with the viewer's CSRF token; `fields` are its visible inputs (or none). */
export function actionForm(viewer: Viewer, action: string, label: string, hidden: Readonly<Record<string, string>>, fields: Html | string = ""): Html {
  return html`<form class="act" method="post" action="/console/actions/${action}"><input type="hidden" name="csrf" value="${viewer.csrf}">${Object.entries(hidden).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  )}${fields}<button type="submit">${label}</button></form>`;
}

export function consolePage(options: { title: string; viewer: Viewer; version: string; notice?: { text: string; bad: boolean } | undefined }, body: Html): string {
  const { viewer } = options;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">
<link rel="icon" href="/favicon.ico" type="image/svg+xml"><title>${options.title}: healthd console</title>
<style>${raw(css)}</style></head>
<body><a class="skip" href="#main">Skip to content</a>
<nav class="top" aria-label="Console"><a href="/console">Overview</a><a href="/status">Status page</a>
<span>${viewer.name === "anyone" ? "Open to anyone: this daemon has no token" : html`Signed in as ${viewer.name}${viewer.mayWrite ? "" : " (read only)"}`}</span>
<form method="post" action="/logout"><button type="submit">Sign out</button></form></nav>
<main id="main">
${options.notice ? html`<p class="notice${options.notice.bad ? " bad" : ""}" role="status">${options.notice.text}</p>` : ""}
${body}
</main>
<footer>healthd ${options.version}</footer>
<script>${raw(script)}</script>
</body></html>
`.text;
}

/** A service's tags, each a link to the overview filtered by it (a plain GET, as the form's). */
export const tagLinks = (tags: readonly string[]): Html =>
  tags.length === 0 ? html`` : html` <span class="tags">${tags.map((t) => html`<a class="tag" href="/console?tag=${encodeURIComponent(t)}">${t}</a>`)}</span>`;
