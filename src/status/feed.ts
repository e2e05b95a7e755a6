/**
 * The announcements as an Atom feed (RFC 4287), GET /status.atom: people who will not watch a page subscribe
 * to what it says. One entry per announcement (shown now, scheduled, or ended in the last 30 days), its
 * updates in its content, newest first. Pure.
 */
import { escape } from "./html.ts";
import { markdown } from "./markdown.ts";
import type { StatusModel } from "./read-model.ts";
import type { AnnouncementView } from "./telling.ts";

/** `self`: the page the feed is of (default /status), for its link and, without a base, its id. */
export function announcementFeed(announcements: readonly AnnouncementView[], options: { title: string; generatedAt: string; base: string | null; self?: string }): string {
  const self = options.self ?? "/status";
  // Stable ids: the announcement's own URL when the daemon knows its address, else a tag of its id.
  const idOf = (a: AnnouncementView) => (options.base ? `${options.base}/announcements/${a.id}` : `tag:healthd,2026:announcement-${a.id}`);
  const link = options.base ? `<link rel="alternate" type="text/html" href="${escape(`${options.base}${self}`)}"/>` : "";
  const entries = [...announcements]
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
    .map((a) => {
      const updates = a.updates.map((u) => `<p><time datetime="${u.at}">${u.at}</time>${u.severity ? ` (${u.severity})` : ""}</p>${markdown(u.message).text}`).join("");
      const span = `<p>${a.severity}: from ${a.startsAt}${a.endsAt ? ` until ${a.endsAt}` : ""}</p>`;
      return `<entry><id>${escape(idOf(a))}</id><title>${escape(a.title)}</title><updated>${a.updatedAt}</updated><published>${a.startsAt}</published>${link}<category term="${a.severity}"/><content type="html">${escape(updates + span + markdown(a.message).text)}</content></entry>`;
    });
  const updated = announcements.map((a) => a.updatedAt).sort().at(-1) ?? options.generatedAt;
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><id>${escape(options.base ? `${options.base}${self === "/status" ? "/status.atom" : `${self}/feed.atom`}` : self === "/status" ? "tag:healthd,2026:announcements" : `tag:healthd,2026:page-${self}`)}</id><title>${escape(options.title)}</title><updated>${updated}</updated><author><name>healthd</name></author>${link}
${entries.join("\n")}
</feed>
`;
}

/**
 * A named page's feed: its announcements, and its services' incidents (open ones, and those closed in the last
 * 30 days), by display name. An incident's entry is updated when it closes.
 */
export function pageFeed(
  model: Pick<StatusModel, "announcements" | "scheduled" | "past" | "incidents" | "generatedAt">,
  options: { title: string; base: string | null; path: string; words: (ms: number) => string },
): string {
  const announcements = [...model.announcements, ...model.scheduled.announcements, ...model.past.announcements];
  const incidents: FeedIncident[] = [
    ...model.incidents.map((s) => ({ key: `${s.serverId}/${s.id}`, name: s.name, startedAt: s.incident!.since, closedAt: null, durationMs: s.incident!.durationMs })),
    ...model.past.incidents.map((i) => ({ key: `${i.serverId}/${i.serviceId}`, name: i.name, startedAt: i.startedAt, closedAt: i.closedAt, durationMs: i.durationMs })),
  ];
  const link = options.base ? `<link rel="alternate" type="text/html" href="${escape(options.base + options.path)}"/>` : "";
  const entries = incidents.map((i) => {
    const title = i.closedAt ? `${i.name} was down for ${options.words(i.durationMs)}` : `${i.name} is down`;
    const text = i.closedAt ? `From ${i.startedAt} to ${i.closedAt}.` : `Since ${i.startedAt} (${options.words(i.durationMs)} so far).`;
    // The id says which incident (its service and start), not its text: a reader's feed keeps one entry for it.
    const id = `tag:healthd,2026:incident-${encodeURIComponent(i.key)}-${Date.parse(i.startedAt)}`;
    return { updated: i.closedAt ?? i.startedAt, xml: `<entry><id>${escape(id)}</id><title>${escape(title)}</title><updated>${i.closedAt ?? i.startedAt}</updated><published>${i.startedAt}</published>${link}<category term="incident"/><content type="text">${escape(text)}</content></entry>` };
  });
  const told = announcementFeed(announcements, { title: options.title, generatedAt: model.generatedAt, base: options.base, self: options.path });
  const updated = [told.match(/<updated>([^<]*)<\/updated>/)?.[1] ?? model.generatedAt, ...entries.map((e) => e.updated)].sort().at(-1)!;
  return told.replace(/<updated>[^<]*<\/updated>/, `<updated>${updated}</updated>`).replace("\n</feed>", `${entries.map((e) => `\n${e.xml}`).join("")}\n</feed>`);
}

interface FeedIncident {
  readonly key: string;
  readonly name: string;
  readonly startedAt: string;
  readonly closedAt: string | null;
  readonly durationMs: number;
}
