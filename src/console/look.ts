/**
 * The console's stylesheet, its one small script and its policy. Both are inline and allowed by their hashes,
 * as the status pages' are (status/page.ts): nothing is loaded from another origin, and no library is needed
 * for what the script does (EventSource and DOMParser are in every browser), so none is shipped.
 */
import { createHash } from "node:crypto";
import { css as statusCss } from "../status/style.ts";

/** The status pages' colours and type, and what the console adds: a table, counts, forms. */
export const css = `${statusCss}
body { max-width: 90rem; }
nav.top { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin: 0 0 1rem; }
nav.top form { margin-left: auto; }
a { color: var(--focus); }
a:focus, button:focus, input:focus, select:focus, textarea:focus, summary:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding: 0; margin: 0 0 1rem; }
.counts a { display: block; padding: .35rem .75rem; border: 1px solid var(--line); border-radius: .5rem; text-decoration: none; color: var(--fg); }
.counts a[aria-current="true"] { border-color: var(--focus); font-weight: 600; }
form.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; margin: 0 0 1rem; }
form.filters label, form.act label { display: flex; flex-direction: column; font-size: .875rem; color: var(--muted); }
input, select, button, textarea { font: inherit; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: .375rem; padding: .3rem .5rem; }
button { background: var(--card); cursor: pointer; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.error { color: var(--muted); overflow-wrap: anywhere; max-width: 28rem; }
.state { display: inline-block; padding: 0 .5rem; border-radius: 1rem; font-weight: 600; white-space: nowrap; }
.state.failing { background: var(--down-bg); color: var(--down); }
.state.late, .state.degraded, .state.silenced { background: var(--blocked-bg); color: var(--blocked); }
.state.paused, .state.pending { background: var(--unknown-bg); color: var(--unknown); }
.state.up { background: var(--up-bg); color: var(--up); }
.tags { margin-left: .35rem; } a.tag { display: inline-block; margin: 0 .25rem 0 0; padding: 0 .4rem; border: 1px solid var(--line); border-radius: .75rem; font-size: .8rem; text-decoration: none; }
.live { color: var(--muted); font-size: .875rem; min-height: 1.3em; }
.actions { display: flex; flex-wrap: wrap; gap: .75rem; align-items: end; }
form.act { display: flex; gap: .5rem; align-items: end; margin: 0; }
.notice { padding: .5rem .75rem; border-radius: .5rem; background: var(--card); border: 1px solid var(--line); }
.notice.bad { background: var(--down-bg); color: var(--down); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); padding: .5rem; border-radius: .375rem; margin: 0; max-height: 12rem; overflow: auto; }
ol.timeline { padding-left: 1.25rem; }
.placeholder { color: var(--muted); font-style: italic; }
.skip { position: absolute; left: -9999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .25rem .5rem; }
`;

/**
 * Live updates: the daemon says on /console/events which services changed; the page fetches itself again (with
 * its filters) and swaps the counts and the rows, so a failure appears, in its place, without a reload. Without
 * JavaScript the page is whole as served. Focus inside the rows is kept by the row's id. And in the editor, a
 * problem's "Line 4, column 7" selects that line of the text.
 */
export const script = `(() => {
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[data-line]") : null;
    const area = document.getElementById("yaml");
    if (!link || !area) return;
    event.preventDefault();
    const lines = area.value.split("\\n");
    const line = Number(link.getAttribute("data-line"));
    const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
    area.focus();
    area.setSelectionRange(start, start + (lines[line - 1] || "").length);
  });
  const rows = document.getElementById("rows");
  if (!rows || !window.EventSource) return;
  let due = null;
  const swap = async () => {
    due = null;
    try {
      const answer = await fetch(location.href, { headers: { accept: "text/html" }, cache: "no-store" });
      if (!answer.ok) return;
      const next = new DOMParser().parseFromString(await answer.text(), "text/html");
      const focused = document.activeElement && document.activeElement.closest("tr") ? document.activeElement.closest("tr").id : null;
      for (const id of ["rows", "counts"]) {
        const fresh = next.getElementById(id);
        const current = document.getElementById(id);
        if (fresh && current) current.replaceWith(document.adoptNode(fresh));
      }
      if (focused) {
        const again = document.querySelector("#" + CSS.escape(focused) + " a");
        if (again) again.focus();
      }
      const live = document.getElementById("live");
      if (live) live.textContent = "Updated " + new Date().toLocaleTimeString();
    } catch (error) {}
  };
  const events = new EventSource("/console/events");
  events.addEventListener("changed", () => { if (due === null) due = setTimeout(swap, 200); });
})();`;

const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** Nothing from another origin; only this style and script; forms post to this origin only. */
export const consolePolicy = [
  "default-src 'none'",
  `script-src ${hash(script)}`,
  `style-src ${hash(css)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const consoleHeaders: Record<string, string> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": consolePolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};
