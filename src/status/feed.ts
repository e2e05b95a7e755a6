/**
 * The announcements as an Atom feed (RFC 4287), GET /status.atom: people who will not watch a page subscribe
 * to what it says. One entry per announcement (shown now, scheduled, or ended in the last 30 days), its
 * updates in its content, newest first. Pure.
 */
import { escape } from "./html.ts";
import { markdown } from "./markdown.ts";
import type { AnnouncementView } from "./telling.ts";

export function announcementFeed(announcements: readonly AnnouncementView[], options: { title: string; generatedAt: string; base: string | null }): string {
  // Stable ids: the announcement's own URL when the daemon knows its address, else a tag of its id.
  const idOf = (a: AnnouncementView) => (options.base ? `${options.base}/announcements/${a.id}` : `tag:healthd,2026:announcement-${a.id}`);
  const link = options.base ? `<link rel="alternate" type="text/html" href="${escape(`${options.base}/status`)}"/>` : "";
  const entries = [...announcements]
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
    .map((a) => {
      const updates = a.updates.map((u) => `<p><time datetime="${u.at}">${u.at}</time>${u.severity ? ` (${u.severity})` : ""}</p>${markdown(u.message).text}`).join("");
      const span = `<p>${a.severity}: from ${a.startsAt}${a.endsAt ? ` until ${a.endsAt}` : ""}</p>`;
      return `<entry><id>${escape(idOf(a))}</id><title>${escape(a.title)}</title><updated>${a.updatedAt}</updated><published>${a.startsAt}</published>${link}<category term="${a.severity}"/><content type="html">${escape(updates + span + markdown(a.message).text)}</content></entry>`;
    });
  const updated = announcements.map((a) => a.updatedAt).sort().at(-1) ?? options.generatedAt;
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><id>${escape(options.base ? `${options.base}/status.atom` : "tag:healthd,2026:announcements")}</id><title>${escape(options.title)}</title><updated>${updated}</updated><author><name>healthd</name></author>${link}
${entries.join("\n")}
</feed>
`;
}
