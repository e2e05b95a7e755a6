/**
 * The status page: functions that take the read model and return markup (no queries here), rendered on the
 * server with escaping templates (html.ts). Complete without JavaScript; one small inline script, allowed by
 * its hash in the page's CSP, refreshes it in place every 30 s and moves along a history bar with the arrow
 * keys. Styles are inline too (allowed by hash): nothing is loaded from anywhere.
 */
import { createHash } from "node:crypto";
import { duration } from "../policy/message.ts";
import type { Severity } from "../domain/schema/announcement.ts";
import { html, raw, type Html } from "./html.ts";
import { markdown } from "./markdown.ts";
import { css } from "./style.ts";
import { defaultTimeZone, moment, spoken, withDates, type Face } from "./when.ts";
import { pastDays, type AnnouncementView } from "./telling.ts";
import { dayMs, worst, type History90, type ServerStatus, type ServiceStatus, type StatusModel } from "./read-model.ts";

export const percent = (uptime: number | null) =>
  uptime === null ? "no data" : `${uptime === 1 ? "100" : (Math.floor(uptime * 10_000) / 100).toFixed(2)} %`;
export const label = { up: "Up", down: "Down", unknown: "Not checked yet", blocked: "Blocked", paused: "Paused", new: "Not pinged yet", late: "Late", degraded: "Slow" } as const;

/** A day's colour class: n (no checks), then by uptime: f (full), h (high), m (middling), l (low). */
function band(uptime: number | null): string {
  if (uptime === null) return "n";
  if (uptime === 1) return "f";
  if (uptime >= 0.999) return "h";
  if (uptime >= 0.99) return "m";
  return "l";
}

/** The dates of a history, YYYY-MM-DD: made once per page, shared by every service's bar. */
export function historyDates(history: History90): string[] {
  const first = Date.parse(`${history.from}T00:00:00Z`);
  return history.uptime.map((_, i) => new Date(first + i * dayMs).toISOString().slice(0, 10));
}

/**
 * A history bar's cells as markup, the page's bulk (90 per service), written as one string. The values are
 * dates and numbers that healthd made, never user text, so there is nothing to escape. The label shows on hover and on focus (CSS);
 * only the last cell (today) is a tab stop, and the arrow keys move along the bar (roving tabindex).
 */
export function barCells(uptime: readonly (number | null)[], dates: readonly string[], start = 0, end = uptime.length): string {
  // Joined from an array: a string grown by += is a rope, which every page's join had to walk again (the
  // settled part is kept from page to page); a joined one is flat. 13 to 7 ms a page of 1,000 services.
  const cells: string[] = [];
  const today = dates.length - 1;
  for (let i = start; i < end; i++) {
    const u = uptime[i]!;
    // Most days are 100 % or have no checks: their text is known without formatting a number.
    const [cls, text] = u === 1 ? full : u === null ? none : [band(u), percent(u)];
    cells.push(`<li class="${cls}" aria-label="${dates[i]}: ${text}"${i === today ? ' tabindex="0"' : ""}></li>`);
  }
  return cells.join("");
}
const full = ["f", "100 %"] as const;
const none = ["n", "no data"] as const;

/**
 * The settled part of each service's bar (all but the last day or two), kept from one page to the next:
 * it reads the same until the history's revision moves. Bounded by the services shown.
 */
const settledBars = new Map<string, { revision: number; from: string; html: string }>();

function bar(s: ServiceStatus, revision: number, dates: readonly string[]): string {
  const id = `${s.serverId}/${s.id}`;
  let settled = settledBars.get(id);
  if (!settled || settled.revision !== revision || settled.from !== s.history.from) {
    settled = { revision, from: s.history.from, html: barCells(s.history.uptime, dates, 0, s.history.settled) };
    settledBars.set(id, settled);
  }
  return settled.html + barCells(s.history.uptime, dates, s.history.settled);
}

/**
 * The badge: what it is shown as, but a silenced or in-maintenance service that fails says that instead of a
 * red Down (people were told it would be quiet).
 */
function badge(s: ServiceStatus): Html {
  if (s.quiet && s.status !== "up" && s.status !== "degraded") {
    return html`<span class="badge quiet">${s.quiet.kind === "silence" ? "Silenced" : "Maintenance"} (${label[s.status]})</span>`;
  }
  return html`<span class="badge ${s.status}">${label[s.status]}</span>`;
}

/** What a page's cards show (a named page's toggles), how to name a service, and what every card shares. */
interface Cards {
  readonly now: number;
  /** Moments are told against the page's build and in its time zone (when.ts). */
  readonly face: Face;
  readonly dates: readonly string[];
  readonly revision: number;
  /** Where the services' own pages are (/status, or a named page's path). */
  readonly links: string;
  readonly show: Pick<PageLook, "showUptime" | "showLatency" | "showHistory">;
  /** The display names of the services shown, by "serverId/serviceId": a page never shows an id. */
  readonly names: ReadonlyMap<string, string>;
}

/**
 * Each card as last rendered, by page and service, with what it was rendered from: from one page to the next
 * most cards read the same (a page is built again every second while read), and rendering 1,000 of them was
 * most of a page's time. Bounded: cleared when it holds more cards than a few pages of the largest size.
 */
const renderedCards = new Map<string, { readonly from: string; readonly before: string; readonly after: string }>();

/**
 * Where a card's open incident goes: its duration moves every second, so it is written into the kept card at
 * each page rather than kept with it. A comment no escaped text can contain.
 */
const incidentSlot = "<!--incident-->";
const incidentLine = (s: ServiceStatus, face: Face): Html =>
  s.incident ? html`<p class="incident">Down for ${duration(s.incident.durationMs)}, since ${moment(s.incident.since, face, "date")}</p>` : html``;

function serviceCard(s: ServiceStatus, cards: Cards): Html {
  const { face, show } = cards;
  // Everything the card shows, as it shows it: the moments by their words (which move by the minute).
  const said = (iso: string | null | undefined) => (iso ? `${iso}~${spoken(Date.parse(iso), face)}` : "");
  const from = [
    face.timeZone, cards.revision, show.showUptime, show.showLatency, show.showHistory, s.name, s.status, s.uptime24h, s.uptime30d, life(cards.now - Date.parse(s.createdAt)),
    s.latencyMs, s.lastRunMs, s.error, s.quiet?.kind, s.quiet?.until, s.quiet?.reason, s.blockedBy?.map((ref) => cards.names.get(ref)).join("\n"),
    s.incident?.since, said(s.dueAt), said(s.lastCheckedAt), s.history.from, s.history.uptime.slice(s.history.settled).join(),
  ].join("\u0000");
  const id = `${cards.links}\u0000${s.serverId}/${s.id}`;
  let kept = renderedCards.get(id);
  if (kept?.from !== from) {
    if (renderedCards.size >= 20_000) renderedCards.clear();
    const [before = "", after = ""] = service(s, cards).text.split(incidentSlot);
    renderedCards.set(id, (kept = { from, before, after }));
  }
  return s.incident ? raw(kept.before + incidentLine(s, face).text + kept.after) : raw(kept.before);
}

function service(s: ServiceStatus, cards: Cards): Html {
  const { face, dates, revision, links, show } = cards;
  const headingId = `s-${s.serverId}-${s.id}`;
  const uptime = show.showUptime && uptimeFacts(s, cards.now);
  const timing = show.showLatency && latencyFact(s);
  const blockedBy = s.blockedBy?.flatMap((ref) => cards.names.get(ref) ?? []);
  return html`<li class="service ${s.quiet ? "quiet" : s.status}" aria-labelledby="${headingId}"><div class="head"><h3 id="${headingId}"><a href="${links}/${s.serverId}/${s.id}">${s.name}</a></h3>${badge(s)}</div>
${(uptime || timing) && html`<dl class="facts">${uptime}${timing}</dl>`}
${s.incident && raw(incidentSlot)}
${s.quiet && html`<p class="waiting">${s.quiet.kind === "silence" ? "Silenced" : "In maintenance"} until ${moment(s.quiet.until, face, "date")}${s.quiet.reason ? html`: ${s.quiet.reason}` : ""}</p>`}
${blockedBy && html`<p class="waiting">${blockedBy.length === 0 ? "Waiting on a service it depends on, which is down" : html`Waiting on ${blockedBy.join(", ")}, which ${blockedBy.length === 1 ? "is" : "are"} down`}</p>`}
${s.status === "late" && s.dueAt && html`<p class="waiting">Its ping was due ${moment(s.dueAt, face)}</p>`}
${s.error && (s.status === "down" || s.status === "blocked") && html`<p class="error">${withDates(s.error, face.timeZone)}</p>`}
${show.showHistory && barOf(s, revision, dates)}
${s.lastCheckedAt && html`<p class="checked">Checked ${moment(s.lastCheckedAt, face)}</p>`}</li>
`;
}

/**
 * Its uptime over 24 hours and 30 days; said once, not "no data" twice, while nothing is measured yet. A
 * service younger than a window has had only its life to be up in: the figure is labelled with that ("Uptime,
 * 5 min so far"), and said once while it is younger than a day (both windows are its whole life).
 */
export function uptimeFacts(s: ServiceStatus, now: number): Html {
  if (s.uptime24h === null && s.uptime30d === null) return html`<div><dt>Uptime</dt><dd>not measured yet</dd></div>`;
  const age = now - Date.parse(s.createdAt);
  if (age < dayMs) return html`<div><dt>Uptime, ${life(age)} so far</dt><dd>${percent(s.uptime24h)}</dd></div>`;
  const month = age < 30 * dayMs ? `Uptime, ${life(age)} so far` : "Uptime 30 d";
  return html`<div><dt>Uptime 24 h</dt><dd>${percent(s.uptime24h)}</dd></div><div><dt>${month}</dt><dd>${percent(s.uptime30d)}</dd></div>`;
}

/** A service's age as its uptime's label says it, to the minute, hour or day: "5 min", "3 h", "4 days". */
export function life(ms: number): string {
  if (ms < 3_600_000) return `${Math.max(1, Math.floor(ms / 60_000))} min`;
  if (ms < dayMs) return `${Math.floor(ms / 3_600_000)} h`;
  const days = Math.floor(ms / dayMs);
  return `${days} day${days === 1 ? "" : "s"}`;
}

/**
 * A card's timing fact: a check's last latency; a heartbeat has none (it is told, not checked), so its last
 * run's duration, labelled as such, or nothing while no run's start was seen.
 */
export function latencyFact(s: ServiceStatus, latencyLabel = "Latency"): Html {
  if (s.lastRunMs !== undefined) return s.lastRunMs === null ? html`` : html`<div><dt>Last run took</dt><dd>${s.lastRunMs < 1000 ? `${Math.round(s.lastRunMs)} ms` : duration(s.lastRunMs)}</dd></div>`;
  // None yet (not checked, or no answer to time): nothing, rather than a bare dash.
  return s.latencyMs === null ? html`` : html`<div><dt>${latencyLabel}</dt><dd>${Math.round(s.latencyMs)} ms</dd></div>`;
}

/** A service's history bar: its uptime per day, oldest first. */
export function barOf(s: ServiceStatus, revision: number, dates: readonly string[] = historyDates(s.history)): Html {
  return html`<ol class="bar" aria-label="${s.name}: uptime of the last ${dates.length} days">${raw(bar(s, revision, dates))}</ol>`;
}

/** The announcements shown now, leading a page. */
export const announcementsOf = (list: readonly AnnouncementView[], face: Face) => announcements(list, "Announcements", "now", face);

/** A server's services, or a section's (`key` tells their headings apart). */
function group(key: string, g: Pick<ServerStatus, "name" | "status" | "services">, cards: Cards): Html {
  return html`<section class="server" aria-labelledby="${key}"><h2 id="${key}">${g.name} <span class="badge ${g.status}">${label[g.status]}</span></h2>
<ul class="services">
${g.services.map((s) => serviceCard(s, cards))}</ul></section>
`;
}

/** What a named page looks like and what its cards show (PUT /status-pages/{slug}); the daemon's pages show all. */
export interface PageLook {
  readonly accentColor: string | null;
  readonly footerLinks: readonly { readonly label: string; readonly url: string }[];
  readonly showUptime: boolean;
  readonly showLatency: boolean;
  readonly showHistory: boolean;
  /** Where its logo is (on the page's own origin); absent or null: none. */
  readonly logoSrc?: string | null;
}
const plain: PageLook = { accentColor: null, footerLinks: [], showUptime: true, showLatency: true, showHistory: true };

/** The part the refresh replaces. `links`: where the services' own pages are (/status, or a named page's path). */
function content(model: StatusModel, links: string, description: string | null, look: PageLook, timeZone: string): Html {
  const now = Date.parse(model.generatedAt);
  const face: Face = { now, timeZone };
  const first = model.servers[0]?.services[0];
  const dates = first ? historyDates(first.history) : [];
  const { overall } = model;
  const state = worst(overall);
  const serverNames = new Map(model.servers.map((srv) => [srv.id, srv.name]));
  const names = new Map(model.servers.flatMap((srv) => srv.services.map((s) => [`${s.serverId}/${s.id}`, s.name] as const)));
  const cards: Cards = { now, face, dates, revision: model.historyRevision, links, show: look, names };
  // On a page of sections the server is the operator's word, not the reader's: a service's name alone.
  const who = (serverId: string, name: string, serverName = serverNames.get(serverId)) => (model.sections || !serverName ? name : `${name} (${serverName})`);
  return html`<div id="content">${description && html`<div class="description">${markdown(description)}</div>`}
${announcements(model.announcements, "Announcements", "now", face)}
<p class="overall ${state}" role="status">${overall.summary}</p>
<p class="updated">Updated ${moment(model.generatedAt, face)}</p>
${scheduled(model.scheduled, names, face)}
${
  model.incidents.length > 0 &&
  html`<section class="incidents" aria-labelledby="incidents"><h2 id="incidents">Open incidents</h2><ul>
${model.incidents.map(
  (s) => html`<li><strong>${who(s.serverId, s.name)}</strong> down for ${duration(s.incident!.durationMs)}, since ${moment(s.incident!.since, face, "date")}</li>
`,
)}</ul></section>`
}
${model.sections ? model.sections.map((g, i) => group(`section-${i}`, { ...g, name: g.title }, cards)) : model.servers.map((srv) => group(`server-${srv.id}`, srv, cards))}${model.servers.length === 0 && html`<p>No services are monitored yet.</p>`}
${past(model.past, (i) => who(i.serverId, i.name, i.serverName), face)}</div>`;
}

/**
 * The whole page as HTML. Written with escaping templates rather than react-dom/server: at 1,000 services
 * React's render alone took 63 ms (median) of the page's 50 ms budget, the templates a few; what React gave,
 * escaping by default, html.ts gives too.
 */
export function renderStatusPage(
  model: StatusModel,
  options: { title: string; version: string; links?: string; description?: string | null; named?: boolean; look?: PageLook; timeZone?: string },
): string {
  // A named page is for its own readers: the daemon's JSON and feed cover every server, and may need a token.
  const look = options.look ?? plain;
  const also = { ...(options.named ? {} : { json: "/status.json", feed: "/status.atom" }), look };
  return layout(`${options.title}: ${model.overall.summary}`, options.title, content(model, options.links ?? "/status", options.description ?? null, look, options.timeZone ?? defaultTimeZone), options.version, also);
}

/**
 * Every page's frame: head, style, heading, footer and the refresh script. `also`: where its data is as JSON,
 * and the announcements' feed.
 */
export function layout(title: string, heading: string | Html, main: Html, version: string, also: { json?: string; feed?: string; look?: PageLook } = {}): string {
  const accent = also.look?.accentColor;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark">
<link rel="icon" href="/favicon.ico" type="image/svg+xml">${also.feed && html`<link rel="alternate" type="application/atom+xml" title="Announcements" href="${also.feed}">`}<title>${title}</title>
<style>${raw(css)}</style>${accent && html`<style>${raw(accentStyle(accent))}</style>`}</head>
<body><header>${also.look?.logoSrc && html`<img class="logo" src="${also.look.logoSrc}" alt="">`}<h1>${heading}</h1></header>
<main>${main}</main>
<footer>${also.look?.footerLinks.map((l) => html`<a href="${l.url}" rel="nofollow noopener noreferrer">${l.label}</a> &middot; `)}healthd ${version}${also.json && html` &middot; <a href="${also.json}">as JSON</a>`}${also.feed && html` &middot; <a href="${also.feed}">announcements as a feed</a>`} &middot; refreshed every 30 s</footer>
<script>${raw(script)}</script></body></html>
`.text;
}

const severityLabel: Record<Severity, string> = { info: "Information", maintenance: "Maintenance", degraded: "Degraded", outage: "Outage" };

/** Rendered messages, by announcement and version: Markdown is rendered once, not once a second. */
const rendered = new Map<string, Html>();
function message(key: string, text: string): Html {
  let done = rendered.get(key);
  if (!done) {
    if (rendered.size >= 1000) rendered.clear();
    rendered.set(key, (done = markdown(text)));
  }
  return done;
}

function announcement(a: AnnouncementView, when: "now" | "ahead" | "past", face: Face): Html {
  const id = `announcement-${a.id}-${when}`;
  const span = html`${when === "ahead" ? "Begins" : "Began"} ${moment(a.startsAt, face)}`;
  const end = a.endsAt && html`, ${when === "past" ? "ended" : "ends"} ${moment(a.endsAt, face)}`;
  return html`<article class="announcement ${a.severity}" aria-labelledby="${id}"><h3 id="${id}"><span class="badge ${a.severity}">${severityLabel[a.severity]}</span> ${a.title}</h3>
<p class="when">${span}${end}</p>
<div class="md">${message(`${a.id}:${a.updatedAt}`, a.message)}</div>
${
  a.updates.length > 0 &&
  html`<ol class="updates" aria-label="Updates, newest first">${a.updates.map(
    (u, i) => html`<li><p class="when">${moment(u.at, face)}${u.severity && html` &middot; ${severityLabel[u.severity]}`}</p><div class="md">${message(`${a.id}:${a.updatedAt}:${i}`, u.message)}</div></li>`,
  )}</ol>`
}</article>
`;
}

function announcements(list: readonly AnnouncementView[], heading: string, when: "now" | "ahead" | "past", face: Face): Html | false {
  return list.length > 0 && html`<section class="announcements" aria-label="${heading}">${list.map((a) => announcement(a, when, face))}</section>`;
}

function scheduled(model: StatusModel["scheduled"], names: ReadonlyMap<string, string>, face: Face): Html | false {
  if (model.announcements.length === 0 && model.maintenance.length === 0) return false;
  return html`<section class="scheduled" aria-labelledby="scheduled"><h2 id="scheduled">Scheduled maintenance</h2>
${announcements(model.announcements, "Scheduled announcements", "ahead", face)}${
    model.maintenance.length > 0 &&
    html`<ul>${model.maintenance.map(
      (m) => html`<li><strong>${m.serverName}</strong>${m.services && html` (${m.services.flatMap((id) => names.get(`${m.serverId}/${id}`) ?? []).join(", ")})`}: ${moment(m.startsAt, face, "date")} to ${moment(m.endsAt, face, "date")}${m.reason && html`: ${m.reason}`} <span class="when">(repeats: <code>${m.repeats}</code> ${m.timezone})</span></li>
`,
    )}</ul>`
  }</section>`;
}

function past(model: StatusModel["past"], who: (i: StatusModel["past"]["incidents"][number]) => string, face: Face): Html {
  const items = [
    ...model.announcements.map((a) => ({ at: a.endsAt!, html: announcement(a, "past", face) })),
    ...model.incidents.map((i) => ({
      at: i.closedAt,
      html: html`<p class="past-incident"><strong>${who(i)}</strong> was down for ${duration(i.durationMs)}, from ${moment(i.startedAt, face, "date")} to ${moment(i.closedAt, face, "date")} (${moment(i.closedAt, face)})</p>
`,
    })),
  ].sort((a, b) => b.at.localeCompare(a.at));
  return html`<section class="past" aria-labelledby="past"><h2 id="past">Past incidents</h2>
${items.length === 0 ? html`<p class="quiet-note">None in the last ${pastDays} days.</p>` : html`<ol class="past-list">${items.map((i) => html`<li>${i.html}</li>`)}</ol>`}</section>`;
}

export const at = (time: string) => time.replace("T", " ").slice(0, 19) + " UTC";

/**
 * Every 30 s: fetch this page again and put its content in place of the current one (focus and scroll stay).
 * Arrow keys move along a history bar. Plain ES2017, no dependencies; failures leave the page as it was.
 */
const script = `(() => {
  const refresh = async () => {
    try {
      const answer = await fetch(location.href, { headers: { accept: "text/html" }, cache: "no-store" });
      if (!answer.ok) return;
      const next = new DOMParser().parseFromString(await answer.text(), "text/html");
      const content = next.getElementById("content");
      const current = document.getElementById("content");
      if (!content || !current) return;
      const focused = document.activeElement && document.activeElement.closest(".bar") ? document.activeElement.getAttribute("aria-label") : null;
      current.replaceWith(document.adoptNode(content));
      document.title = next.title;
      if (focused) {
        const again = document.querySelector('.bar li[aria-label="' + focused.replace(/"/g, '') + '"]');
        if (again) again.focus();
      }
    } catch (error) {}
  };
  setInterval(refresh, 30000);
  document.addEventListener("keydown", (event) => {
    const cell = event.target;
    if (!(cell instanceof HTMLLIElement) || !cell.parentElement || !cell.parentElement.classList.contains("bar")) return;
    const to = event.key === "ArrowLeft" ? cell.previousElementSibling : event.key === "ArrowRight" ? cell.nextElementSibling
      : event.key === "Home" ? cell.parentElement.firstElementChild : event.key === "End" ? cell.parentElement.lastElementChild : null;
    if (!to) return;
    event.preventDefault();
    cell.tabIndex = -1;
    to.tabIndex = 0;
    to.focus();
  });
})();`;


/**
 * The page's policy: nothing from another origin, and only its own inline style and script, named by their
 * hashes. A hash pins the exact text (a nonce allows any script that carries it), and it is the same for every
 * answer, so one rendering can be sent to every reader.
 */
const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** A named page's accent colour (#rrggbb, validated when saved): the heading's rule, never text (contrast stays). */
export const accentStyle = (color: string) => `:root { --accent: ${color}; }`;

/** The policy of a page with an accent colour: its style allowed by its hash too. */
export const policyWithAccent = (color: string) => pagePolicy.replace(`style-src ${hash(css)}`, `style-src ${hash(css)} ${hash(accentStyle(color))}`);

export const pagePolicy = (() => {
  return [
    "default-src 'none'",
    `script-src ${hash(script)}`,
    `style-src ${hash(css)}`,
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
})();
