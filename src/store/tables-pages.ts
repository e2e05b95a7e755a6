/**
 * The tables of what people are shown and how they sign in: announcements, status pages (their logos and
 * hostnames), API tokens and browser sessions. Part of `Tables` (tables.ts), split off to keep files small.
 */
import type { ColumnType, Generated } from "kysely";

type Bool = ColumnType<boolean | number, boolean, boolean>;

/** What people are told on the status page; `message` is Markdown. */
export interface AnnouncementsTable {
  id: Generated<number>;
  title: string;
  message: string;
  severity: string;
  /** JSON list of the servers it concerns; null: all. */
  servers: string | null;
  starts_at: number;
  ends_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface AnnouncementUpdatesTable {
  id: Generated<number>;
  announcement_id: number;
  message: string;
  /** The severity it set; null: unchanged. */
  severity: string | null;
  created_at: number;
}

/** A status page of some servers under its own slug. */
export interface StatusPagesTable {
  slug: string;
  title: string;
  description: string | null;
  /** JSON list of server ids, in the order shown. */
  servers: string;
  public: Bool;
  created_at: number;
  updated_at: number;
  /** JSON list of {title, services: ["server/service" | "server/*"]}; null: whole servers. */
  sections: string | null;
  accent_color: string | null;
  /** JSON list of {label, url}. */
  footer_links: string;
  show_uptime: Bool;
  show_latency: Bool;
  show_history: Bool;
  /** An IANA time zone name, checked by Intl when saved. */
  time_zone: string;
}

/** A named page's logo: its type (sniffed from its bytes) and its bytes in base64. */
export interface StatusPageLogosTable {
  slug: string;
  type: string;
  data: string;
  updated_at: number;
}

/** The hosts that show a page at `/`: one page per host. */
export interface StatusPageHostnamesTable {
  hostname: string;
  slug: string;
}

/** A scoped token of the API: its secret is never stored, only the SHA-256 of it (hex). */
export interface TokensTable {
  id: Generated<number>;
  name: string;
  scope: "read" | "write" | "ping" | "admin";
  /** JSON list of server ids it is limited to; null: every server. */
  servers: string | null;
  hash: string;
  created_at: number;
}

/** A browser's session (the sign-in page): hashes only, of its cookie's secret and of the token it came from. */
export interface SessionsTable {
  hash: string;
  token_hash: string;
  expires_at: number;
  created_at: number;
}
