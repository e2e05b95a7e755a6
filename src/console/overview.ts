/**
 * The overview: counts by state (each a link that filters), the filters as a plain GET form (works without
 * JavaScript), and one row per service, most urgent first. A component: the read model in, markup out.
 */
import { html, type Html } from "../status/html.ts";
import type { Announcement } from "../store/store.ts";
import { actionForm, consolePage, tagLinks, type Viewer } from "./layout.ts";
import { notices } from "./service-page.ts";
import { consoleStates, type ConsoleFilters, type ConsoleModel, type ConsoleRow, type ConsoleState } from "./model.ts";

const words: Record<ConsoleState, string> = { failing: "Failing", late: "Late", degraded: "Degraded", silenced: "Silenced", paused: "Paused", pending: "Not checked yet", up: "Up" };

/** The query string of the filters with `change` applied (an undefined value drops the filter). */
function query(filters: ConsoleFilters, change: Partial<ConsoleFilters>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filters, ...change })) if (typeof value === "string" && value) params.set(name, value);
  const text = params.toString();
  return text ? `?${text}` : "";
}

export const servicePath = (serverId: string, serviceId: string) => `/console/services/${encodeURIComponent(serverId)}/${encodeURIComponent(serviceId)}`;

const ago = (ms: number | null, now: number) => {
  if (ms === null) return "never";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : s < 86_400 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86_400)} d ago`;
};

function row(r: ConsoleRow, now: number): Html {
  const note = r.state === "silenced" && r.quietUntil !== null ? `silenced until ${new Date(r.quietUntil).toISOString().slice(0, 16).replace("T", " ")} UTC` : r.error ?? "";
  const shown = r.shown !== r.state && r.shown !== "unknown" && r.shown !== "new" ? ` (${r.shown})` : "";
  return html`<tr id="row-${r.serverId}--${r.id}" data-state="${r.state}"><td><span class="state ${r.state}">${words[r.state]}${shown}</span></td>
<td><a href="${servicePath(r.serverId, r.id)}">${r.name}</a>${tagLinks(r.tags)}</td><td>${r.serverName}</td><td>${r.kind}</td><td>${ago(r.lastCheckedAt, now)}</td>
<td>${r.latencyMs === null ? "" : `${Math.round(r.latencyMs)} ms`}</td><td class="error">${note}</td></tr>
`;
}

const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${chosen === value ? html` selected` : ""}>${label}</option>`;

/** The announcements shown now, each with its End button for those who may act. */
function announcements(shown: readonly Announcement[], viewer: Viewer): Html {
  if (shown.length === 0) return html``;
  return html`<section aria-labelledby="announcements-title"><h2 id="announcements-title">Announcements shown now</h2><ul>
${shown.map((a) => html`<li>${a.title} (${a.severity})${viewer.mayWrite ? actionForm(viewer, "end-announcement", `End ${a.title}`, { announcement: String(a.id) }) : ""}</li>`)}
</ul></section>`;
}

export function renderOverview(model: ConsoleModel, viewer: Viewer, options: { version: string; announcements: readonly Announcement[]; done?: string | undefined }): string {
  const f = model.filters;
  const counts = html`<ul class="counts" id="counts" aria-label="Services by state">
<li><a href="/console${query(f, { state: undefined })}"${f.state ? "" : html` aria-current="true"`}>All: ${model.counts.all}</a></li>
${consoleStates.map((s) => html`<li><a href="/console${query(f, { state: s })}"${f.state === s ? html` aria-current="true"` : ""}>${words[s]}: ${model.counts[s]}</a></li>`)}
</ul>`;
  const filters = html`<form class="filters" method="get" action="/console" role="search" aria-label="Filter services">
<label>State <select name="state">${option("", "Any", f.state ?? "")}${consoleStates.map((s) => option(s, words[s], f.state))}</select></label>
<label>Server <select name="server">${option("", "Any", f.server ?? "")}${model.servers.map((s) => option(s.id, s.name, f.server))}</select></label>
<label>Kind <select name="kind">${option("", "Any", f.kind ?? "")}${model.kinds.map((k) => option(k, k, f.kind))}</select></label>
${model.tags.length === 0 && !f.tag ? "" : html`<label>Tag <select name="tag">${option("", "Any", f.tag ?? "")}${[...new Set([...model.tags, ...(f.tag ? [f.tag] : [])])].map((t) => option(t, t, f.tag))}</select></label>`}
<label>Text <input type="search" name="q" value="${f.q ?? ""}" maxlength="200"></label>
<button type="submit">Filter</button>${Object.values(f).some(Boolean) ? html` <a href="/console">Clear</a>` : ""}
</form>`;
  const table = html`<p class="live" id="live" aria-live="polite"></p>
<table id="rows"><caption>${model.rows.length} of ${model.counts.all} services</caption>
<thead><tr><th scope="col">State</th><th scope="col">Service</th><th scope="col">Server</th><th scope="col">Kind</th><th scope="col">Last check</th><th scope="col">Latency</th><th scope="col">Note</th></tr></thead>
<tbody>
${model.rows.length === 0 ? html`<tr><td colspan="7">No service matches these filters.</td></tr>` : model.rows.map((r) => row(r, model.generatedAt))}</tbody></table>`;
  const notice = options.done !== undefined && notices[options.done] !== undefined ? { text: notices[options.done]!, bad: false } : undefined;
  return consolePage({ title: "Overview", viewer, version: options.version, notice }, html`<h1>Console</h1>${counts}${announcements(options.announcements, viewer)}${filters}${table}`);
}
