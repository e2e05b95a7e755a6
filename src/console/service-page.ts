/**
 * A service's page in the console: what it is and its state, what may be done (write tokens only), a heartbeat's
 * ping URL and crontab line, its latency chart, its incidents with their timelines, and its recent entries (a
 * heartbeat's are its ping log: method, user agent, address, body). A component: the read model in, markup out.
 */
import type { Entry } from "../domain/model.ts";
import { builtInChannel } from "../domain/schema/channel.ts";
import { latencyChart } from "../status/chart.ts";
import { html, type Html } from "../status/html.ts";
import { actionForm, consolePage, tagLinks, type Viewer } from "./layout.ts";
import type { ConsoleIncident, ServiceModel } from "./service-model.ts";

const when = (ms: number | null) => (ms === null ? "" : html`<time datetime="${new Date(ms).toISOString()}">${new Date(ms).toISOString().slice(0, 19).replace("T", " ")}</time>`);
const duration = (ms: number) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min` : `${(ms / 3_600_000).toFixed(1)} h`);

/** The notices an action leaves (by a fixed word, so that a link cannot make the page say anything else). */
export const notices: Readonly<Record<string, string>> = {
  silenced: "Silenced: its notifications wait until the silence ends.",
  paused: "Paused: its check does not run until resumed.",
  resumed: "Resumed: its check runs again.",
  run: "Its check runs within a second; this page shows the result once you reload it.",
  "ping-key": "A new ping key: the old URL no longer works. Update the job's crontab line below.",
  tested: "The channel took the test message.",
  "announcement-ended": "The announcement has ended.",
  acknowledged: "Acknowledged: its reminders and escalations stop, and its channels are told you are on it.",
};

function actions(m: ServiceModel, viewer: Viewer): Html {
  if (!viewer.mayWrite) return html``;
  const s = m.service;
  const target = { server: s.serverId, service: s.id };
  const heartbeat = s.check.type === "heartbeat";
  const minutes = html`<label>For <select name="minutes"><option value="15">15 minutes</option><option value="60" selected>1 hour</option><option value="240">4 hours</option><option value="1440">1 day</option></select></label><label>Why <input name="reason" maxlength="200"></label>`;
  const channels = s.check.channels ?? [builtInChannel];
  return html`<section aria-labelledby="actions-title"><h2 id="actions-title">Actions</h2><div class="actions">
${actionForm(viewer, "silence", "Silence", target, minutes)}
${s.check.paused ? actionForm(viewer, "resume", "Resume", target) : actionForm(viewer, "pause", "Pause", target)}
${heartbeat || s.check.paused ? "" : actionForm(viewer, "run", "Run now", target)}
${heartbeat ? actionForm(viewer, "ping-key", "Rotate ping key", target) : ""}
${channels.map((c) => actionForm(viewer, "test-channel", `Test channel ${c}`, { ...target, channel: c }))}
<a href="/console/servers/${encodeURIComponent(s.serverId)}/edit">Edit server ${s.serverName}</a>
</div></section>`;
}

/** A heartbeat's ping URL and the crontab line to paste (docs/guide/cron-jobs.md), for those who may see its key. */
function pinging(m: ServiceModel, viewer: Viewer, base: string): Html {
  const check = m.service.check;
  if (check.type !== "heartbeat" || !viewer.mayWrite || !check.pingKey) return html``;
  const url = `${base}/ping/${check.pingKey}`;
  const slug = m.serverPingKey && `${base}/ping/${m.serverPingKey}/${m.service.id}`;
  return html`<section aria-labelledby="ping-title"><h2 id="ping-title">Pinging it</h2>
<p>Ping URL: <code>${url}</code>${slug ? html` (or by slug: <code>${slug}</code>)` : ""}</p>
<p>In a crontab, with curl:</p><pre>0 3 * * *  /path/to/job &amp;&amp; curl -fsS -m 10 --retry 5 -o /dev/null ${url}</pre>
<p>Or with <code>healthd run</code>, which also reports failures, durations and output:</p><pre>0 3 * * *  healthd run ${url} -- /path/to/job</pre></section>`;
}

/** An open incident's acknowledgement: who took it on (its timeline says when), or the button, for write tokens. */
function acknowledge(i: ConsoleIncident, viewer: Viewer): Html {
  const ack = i.incident.acknowledged;
  if (ack) return html`<p>Acknowledged by ${ack.by}${ack.note ? html`: ${ack.note}` : ""}.</p>`;
  if (!viewer.mayWrite) return html``;
  const target = { server: i.incident.serverId, service: i.incident.serviceId, incident: String(i.incident.id) };
  return actionForm(viewer, "ack", "Acknowledge", target, html`<label>Note <input name="note" maxlength="1000"></label>`);
}

function incidents(m: ServiceModel, viewer: Viewer): Html {
  if (m.incidents.length === 0) return html`<section aria-labelledby="incidents-title"><h2 id="incidents-title">Incidents</h2><p>No incident.</p></section>`;
  return html`<section aria-labelledby="incidents-title"><h2 id="incidents-title">Incidents</h2>
${m.incidents.map(
  (i) => html`<article class="incident-card"><h3>${i.incident.closedAt === null ? "Open" : "Closed"} incident from ${when(i.incident.startedAt)} (${duration(i.durationMs)})</h3>
${i.incident.closedAt === null ? acknowledge(i, viewer) : ""}
<ol class="timeline">${i.timeline.map((e) => html`<li>${when(e.at)}: ${e.text}</li>`)}</ol></article>`,
)}</section>`;
}

function entries(m: ServiceModel): Html {
  const heartbeat = m.service.check.type === "heartbeat";
  const body = (e: Entry) => (e.body ? html`<details><summary>${e.body.length} characters</summary><pre>${e.body}</pre></details>` : "");
  const rows = m.entries.map((e) =>
    heartbeat
      ? html`<tr><td>${when(e.checkedAt)}</td><td>${e.kind ?? ""}${e.exitCode === null ? "" : ` (exit ${e.exitCode})`}</td><td>${e.method ?? ""}</td><td>${e.userAgent ?? ""}</td><td>${e.remoteAddr ?? ""}</td><td>${body(e)}</td></tr>\n`
      : html`<tr><td>${when(e.checkedAt)}</td><td>${e.ok ? "passed" : "failed"}</td><td>${e.status ?? ""}</td><td>${Math.round(e.latencyMs)} ms</td><td>${e.location}</td><td class="error">${e.error ?? ""}</td></tr>\n`,
  );
  const head = heartbeat ? ["Time", "Ping", "Method", "User agent", "Address", "Body"] : ["Time", "Result", "Status", "Latency", "Location", "Error"];
  return html`<section aria-labelledby="entries-title"><h2 id="entries-title">${heartbeat ? "Ping log" : "Recent checks"}</h2>
${m.entries.length === 0 ? html`<p>Nothing yet.</p>` : html`<table><caption>The last ${m.entries.length}, newest first (UTC)</caption><thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>
${rows}</tbody></table>`}</section>`;
}

export function renderService(m: ServiceModel, viewer: Viewer, options: { version: string; base: string; done?: string | undefined }): string {
  const s = m.service;
  const notice = options.done !== undefined && notices[options.done] !== undefined ? { text: notices[options.done]!, bad: false } : undefined;
  const quiet = m.shown.quiet ? html` until ${when(m.shown.quiet.until)}` : "";
  const body = html`<h1>${s.name}</h1>
<p><span class="state ${m.state}">${m.state}${m.shown.status !== m.state ? ` (${m.shown.status})` : ""}</span>${quiet} · server ${s.serverName} · ${s.check.type}${m.service.lastEntry?.error ? html` · last error: ${m.service.lastEntry.error}` : ""}</p>
${s.tags.length === 0 ? "" : html`<p>Tags:${tagLinks(s.tags)}</p>`}
${actions(m, viewer)}
${pinging(m, viewer, options.base)}
${s.check.type === "heartbeat" ? "" : html`<section aria-labelledby="latency-title"><h2 id="latency-title">Latency</h2>${latencyChart(m.latency, { title: "Latency, last 24 hours", per: "hour", id: "chart" })}</section>`}
${incidents(m, viewer)}
${entries(m)}`;
  return consolePage({ title: s.name, viewer, version: options.version, notice }, body);
}
