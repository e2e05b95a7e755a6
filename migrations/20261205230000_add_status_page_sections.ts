import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * Status pages people are shown: chosen services, a look of their own, and hosts of their own.
 *
 * - status_pages.sections: JSON list of {title, services: ["server/service" | "server/*"]}; null: the page
 *   shows whole servers (its `servers`, which stays the list of every server it shows anything of).
 * - accent_color (#rrggbb, null: healthd's), footer_links (JSON list of {label, url}), and whether its cards show
 *   uptime, latency and the history bar (show_*; every existing page keeps showing all three).
 * - status_page_hostnames: the hosts that show a page at `/`; one page per host, which the key enforces.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const yes = isSqlite(db) ? "INTEGER NOT NULL DEFAULT 1" : "BOOLEAN NOT NULL DEFAULT TRUE";
  await exec(
    db,
    `ALTER TABLE status_pages ADD COLUMN sections TEXT`,
    `ALTER TABLE status_pages ADD COLUMN accent_color TEXT`,
    `ALTER TABLE status_pages ADD COLUMN footer_links TEXT NOT NULL DEFAULT '[]'`,
    `ALTER TABLE status_pages ADD COLUMN show_uptime ${yes}`,
    `ALTER TABLE status_pages ADD COLUMN show_latency ${yes}`,
    `ALTER TABLE status_pages ADD COLUMN show_history ${yes}`,
    `CREATE TABLE status_page_hostnames (
      hostname TEXT PRIMARY KEY,
      slug TEXT NOT NULL REFERENCES status_pages (slug) ON DELETE CASCADE
    )`,
    `CREATE INDEX status_page_hostnames_by_slug ON status_page_hostnames (slug)`,
  );
}
