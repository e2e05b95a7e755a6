/**
 * Announcements' Markdown as HTML, with markdown-it (well kept, CommonMark): paragraphs, emphasis, links,
 * lists, code spans and line breaks, and nothing else. HTML in a message is shown as text (html: false);
 * links other than http(s) and mailto are shown as text too, so `javascript:` never becomes a link; images
 * would load from elsewhere, which the page's policy forbids, so they are off.
 */
import MarkdownIt from "markdown-it";
import { raw, type Html } from "./html.ts";

const md = new MarkdownIt("zero", { html: false, linkify: false, breaks: true }).enable([
  "paragraph",
  "emphasis",
  "link",
  "list",
  "newline",
  "escape",
  "backticks",
  "autolink",
  "entity",
]);

const safeLink = /^(https?:|mailto:)/i;
md.validateLink = (url) => safeLink.test(url.trim());

// Links leave the page for somewhere its readers did not choose: no referrer, no ranking for what they point at.
const defaultOpen = md.renderer.rules.link_open ?? ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
md.renderer.rules.link_open = (tokens, i, options, env, self) => {
  tokens[i]!.attrSet("rel", "nofollow noopener noreferrer");
  return defaultOpen(tokens, i, options, env, self);
};

/** A message as HTML, in ASCII (as the rest of the page: html.ts). */
export function markdown(text: string): Html {
  return raw(md.render(text).replace(/[^\x00-\x7e]/gu, (c) => `&#x${c.codePointAt(0)!.toString(16)};`));
}
