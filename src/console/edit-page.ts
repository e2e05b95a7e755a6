/**
 * Editing a server in the console: its document as YAML in a textarea (as `healthd export` writes it), the
 * problems `healthd apply` would report, each at its line and column, or what saving would change (the store's
 * dry run, policy/change.ts), and once saved the ping URL and crontab line of each new heartbeat. Works as
 * plain form posts: edit, preview, save. A component: values in, markup out.
 */
import type { ServerChange } from "../store/store.ts";
import { html, type Html } from "../status/html.ts";
import { consolePage, type Viewer } from "./layout.ts";
import { servicePath } from "./overview.ts";

export interface EditModel {
  readonly serverId: string;
  readonly serverName: string;
  /** The text in the textarea. */
  readonly yaml: string;
  /** Problems, each with where it is (line and column of the text, when known). */
  readonly errors: readonly { readonly line: number | null; readonly column: number | null; readonly message: string }[];
  /** What saving would change (a preview without errors). */
  readonly change: ServerChange | null;
  /** Once saved: the new heartbeats, with their ping URLs. */
  readonly saved: readonly { readonly id: string; readonly pingUrl: string }[] | null;
}

/** The problems of parseServersFile ("label:line:col: /path: message") read back into line, column and message. */
export function locatedErrors(lines: readonly string[], label: string): EditModel["errors"] {
  return lines.map((text) => {
    const found = new RegExp(`^${label.replace(/\./g, "\\.")}:(\\d+):(\\d+): (.*)$`, "s").exec(text);
    return found ? { line: Number(found[1]), column: Number(found[2]), message: found[3]! } : { line: null, column: null, message: text.replace(`${label}: `, "") };
  });
}

function diff(c: ServerChange): Html {
  const { created, updated, deleted } = c.services;
  if (c.outcome === "unchanged") return html`<p>Saving changes nothing.</p>`;
  return html`<ul class="diff" aria-label="What saving changes">
${c.outcome === "created" ? html`<li>+ the server ${c.serverId} (new)</li>` : ""}${c.fields.length > 0 ? html`<li>~ the server (${c.fields.join(", ")})</li>` : ""}
${created.map((id) => html`<li>+ ${id} (new)</li>`)}${updated.map((u) => html`<li>~ ${u.id} (${u.fields.join(", ")})</li>`)}${deleted.map((id) => html`<li>- ${id} (deleted, with its entries)</li>`)}
</ul>`;
}

export const cronLines = (url: string) =>
  html`<pre>0 3 * * *  /path/to/job &amp;&amp; curl -fsS -m 10 --retry 5 -o /dev/null ${url}</pre><pre>0 3 * * *  healthd run ${url} -- /path/to/job</pre>`;

export function renderEdit(m: EditModel, viewer: Viewer, version: string): string {
  const path = `/console/servers/${encodeURIComponent(m.serverId)}/edit`;
  const errors =
    m.errors.length === 0
      ? ""
      : html`<section aria-labelledby="errors-title" class="notice bad" role="alert"><h2 id="errors-title">Not saved: ${m.errors.length} problem${m.errors.length === 1 ? "" : "s"}</h2><ul id="errors">
${m.errors.map((e) => html`<li>${e.line === null ? "" : html`<a href="#yaml" data-line="${e.line}">Line ${e.line}, column ${e.column}</a>: `}${e.message}</li>`)}</ul></section>`;
  const saved =
    m.saved === null
      ? ""
      : html`<section aria-labelledby="saved-title"><h2 id="saved-title">Saved</h2>${m.saved.map(
          (s) => html`<h3>New heartbeat <a href="${servicePath(m.serverId, s.id)}">${s.id}</a></h3><p>Ping URL: <code>${s.pingUrl}</code>. In a crontab:</p>${cronLines(s.pingUrl)}`,
        )}</section>`;
  const preview = m.change && m.errors.length === 0 ? html`<section aria-labelledby="diff-title"><h2 id="diff-title">What saving changes</h2>${diff(m.change)}</section>` : "";
  const body = html`<h1>Edit ${m.serverName}</h1>
${saved}${errors}${preview}
<form method="post" action="${path}"><input type="hidden" name="csrf" value="${viewer.csrf}">
<p><label for="yaml">The server's document, YAML (as <code>healthd apply</code> reads it)</label></p>
<textarea id="yaml" name="yaml" rows="24" cols="100" spellcheck="false"${m.errors.length > 0 ? html` aria-describedby="errors"` : ""}>${m.yaml}</textarea>
<p class="actions"><button type="submit" name="step" value="preview">Preview changes</button>${preview ? html`<button type="submit" name="step" value="save">Save</button>` : ""}</p>
</form>`;
  return consolePage({ title: `Edit ${m.serverName}`, viewer, version }, body);
}
