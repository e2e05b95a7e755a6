import type { Kysely } from "kysely";
import { isSqlite } from "./dialect.ts";
import { exec } from "./sqlite.ts";

/**
 * status_page_logos: a named page's logo (PUT /status-pages/{slug}/logo), served from the page's own origin so
 * that a page asks nothing of anyone else. `type` is what its first bytes say it is (image/png, image/svg+xml,
 * image/webp); `data` its bytes in base64 (at most 256 KiB of image: text travels alike through both engines
 * and `healthd copy`). Apart from status_pages, which every page view reads: a logo is read only when asked for.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const int64 = isSqlite(db) ? "INTEGER" : "BIGINT";
  await exec(
    db,
    `CREATE TABLE status_page_logos (
      slug TEXT PRIMARY KEY REFERENCES status_pages (slug) ON DELETE CASCADE,
      type TEXT NOT NULL,
      data TEXT NOT NULL,
      updated_at ${int64} NOT NULL
    )`,
  );
}
