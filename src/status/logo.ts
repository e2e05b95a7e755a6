/**
 * A named page's logo: what its bytes are (never what a request's Content-Type claims), and how it is served.
 * Pure. PNG and WebP by their signatures; SVG by its text beginning with an <svg> element (after an XML
 * declaration, comments or a doctype). An SVG can carry script: a page shows it through <img>, where none
 * runs, and the logo's own URL answers with a policy that lets nothing run or load even when opened directly.
 */

/** The largest logo taken. */
export const maxLogoBytes = 256 * 1024;

export const logoTypes = ["image/png", "image/svg+xml", "image/webp"] as const;
export type LogoType = (typeof logoTypes)[number];

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
// A comment cannot hold its own end (`-->`), so a run of comments has one reading: no backtracking through
// them, whatever an upload holds (`(<!--[\s\S]*?-->\s*)*` was exponential on a run of empty comments).
const comment = String.raw`<!--(?:[^-]|-(?!->))*-->\s*`;
const svgStart = new RegExp(String.raw`^\uFEFF?\s*(<\?xml[^>]*\?>\s*)?(${comment})*(<!DOCTYPE[^>]*>\s*(${comment})*)?<svg[\s>]`, "i");

/** What `bytes` are, by their first bytes; undefined: none of PNG, SVG and WebP. */
export function sniffLogo(bytes: Buffer): LogoType | undefined {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(png)) return "image/png";
  if (bytes.length >= 12 && bytes.toString("latin1", 0, 4) === "RIFF" && bytes.toString("latin1", 8, 12) === "WEBP") return "image/webp";
  if (svgStart.test(bytes.toString("utf8", 0, Math.min(bytes.length, 4096)))) return "image/svg+xml";
  return undefined;
}

/**
 * The headers a logo is served with: nothing in an SVG may run, load or be framed, whoever opens it. A private
 * page's is for its reader's browser alone, never a shared cache's.
 */
export function logoHeaders(type: string, isPublic: boolean): Record<string, string> {
  return {
    "content-type": type,
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'self'",
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": isPublic ? "max-age=300" : "private, max-age=300",
  };
}
