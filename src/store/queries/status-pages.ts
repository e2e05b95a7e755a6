/**
 * Named status pages as records: what each shows (whole servers, or sections of chosen services), its look,
 * and the hosts that show it at `/`. How a page is drawn is src/status/'s business.
 */
import type { Kysely, Selectable } from "kysely";
import { pageServers, splitRef, type PageSection, type StatusPageDocument } from "../../domain/schema/status-page.ts";
import type { StatusPage } from "../store.ts";
import type { StatusPagesTable, Tables } from "../tables.ts";

type Db = Kysely<Tables>;

type PageRow = Selectable<StatusPagesTable> & { logo_type: string | null; logo_updated_at: number | null };

function pageFromRow(r: PageRow, hostnames: readonly string[]): StatusPage {
  return {
    slug: r.slug,
    title: r.title,
    description: r.description,
    servers: JSON.parse(r.servers) as string[],
    sections: r.sections === null ? null : (JSON.parse(r.sections) as PageSection[]),
    logo: r.logo_type === null ? null : { type: r.logo_type, updatedAt: Number(r.logo_updated_at) },
    public: Boolean(r.public),
    accentColor: r.accent_color,
    footerLinks: JSON.parse(r.footer_links) as StatusPage["footerLinks"],
    hostnames: [...hostnames],
    showUptime: Boolean(r.show_uptime),
    showLatency: Boolean(r.show_latency),
    showHistory: Boolean(r.show_history),
    timeZone: r.time_zone,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Every page, by slug; or the one of `slug`; or (with `host`) the one that host shows. */
export async function statusPages(db: Db, query: { slug?: string; host?: string } = {}): Promise<StatusPage[]> {
  let pages = db
    .selectFrom("status_pages")
    .leftJoin("status_page_logos as l", "l.slug", "status_pages.slug")
    .selectAll("status_pages")
    .select(["l.type as logo_type", "l.updated_at as logo_updated_at"])
    .orderBy("status_pages.slug");
  if (query.slug !== undefined) pages = pages.where("status_pages.slug", "=", query.slug);
  if (query.host !== undefined) pages = pages.where("status_pages.slug", "in", db.selectFrom("status_page_hostnames").select("slug").where("hostname", "=", query.host));
  const rows = await pages.execute();
  if (rows.length === 0) return [];
  const hosts = await db.selectFrom("status_page_hostnames").selectAll().where("slug", "in", rows.map((r) => r.slug)).orderBy("hostname").execute();
  return rows.map((r) => pageFromRow(r, hosts.filter((h) => h.slug === r.slug).map((h) => h.hostname)));
}

/**
 * What a page names that does not exist, as it names it: a server ("web-01", also for "web-01/*") or a
 * service ("web-01/checkout"), in the order named.
 */
export async function unknownReferences(db: Db, doc: Pick<StatusPageDocument, "servers" | "sections">): Promise<string[]> {
  const refs = doc.servers ?? (doc.sections ?? []).flatMap((s) => s.services);
  if (refs.length === 0) return [];
  const servers = pageServers(doc);
  const [known, services] = await Promise.all([
    db.selectFrom("servers").select("id").where("id", "in", servers).execute(),
    doc.sections ? db.selectFrom("services").select(["server_id", "id"]).where("server_id", "in", servers).execute() : [],
  ]);
  const knownServers = new Set(known.map((r) => r.id));
  const knownServices = new Set(services.map((r) => `${r.server_id}/${r.id}`));
  const unknown = new Set<string>();
  for (const ref of refs) {
    const { serverId, serviceId } = splitRef(ref.includes("/") ? ref : `${ref}/*`);
    if (!knownServers.has(serverId)) unknown.add(serverId);
    else if (serviceId !== null && !knownServices.has(ref)) unknown.add(ref);
  }
  return [...unknown];
}

/** The hosts of `hostnames` that another page than `slug` has. */
export async function takenHostnames(db: Db, slug: string, hostnames: readonly string[]): Promise<{ hostname: string; slug: string }[]> {
  if (hostnames.length === 0) return [];
  return db.selectFrom("status_page_hostnames").selectAll().where("hostname", "in", hostnames).where("slug", "!=", slug).execute();
}

/** Create or replace a named page; answers whether it was created. */
export async function putStatusPage(trx: Db, slug: string, doc: StatusPageDocument, now: number): Promise<{ page: StatusPage; created: boolean }> {
  const row = {
    title: doc.title,
    description: doc.description,
    servers: JSON.stringify(pageServers(doc)),
    sections: doc.sections === undefined ? null : JSON.stringify(doc.sections),
    public: doc.public,
    accent_color: doc.accentColor,
    footer_links: JSON.stringify(doc.footerLinks),
    show_uptime: doc.showUptime,
    show_latency: doc.showLatency,
    show_history: doc.showHistory,
    time_zone: doc.timeZone,
    updated_at: now,
  };
  const existing = await trx.selectFrom("status_pages").select("created_at").where("slug", "=", slug).executeTakeFirst();
  if (existing) await trx.updateTable("status_pages").set(row).where("slug", "=", slug).execute();
  else await trx.insertInto("status_pages").values({ slug, ...row, created_at: now }).execute();
  await trx.deleteFrom("status_page_hostnames").where("slug", "=", slug).execute();
  if (doc.hostnames.length > 0) await trx.insertInto("status_page_hostnames").values(doc.hostnames.map((hostname) => ({ hostname, slug }))).execute();
  const [page] = await statusPages(trx, { slug });
  return { page: page!, created: !existing };
}

export async function deleteStatusPage(trx: Db, slug: string): Promise<boolean> {
  await trx.deleteFrom("status_page_hostnames").where("slug", "=", slug).execute();
  await trx.deleteFrom("status_page_logos").where("slug", "=", slug).execute();
  const result = await trx.deleteFrom("status_pages").where("slug", "=", slug).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Set (or with null remove) a page's logo; false when there is no such page. */
export async function putLogo(trx: Db, slug: string, logo: { type: string; bytes: Buffer } | null, now: number): Promise<boolean> {
  const page = await trx.selectFrom("status_pages").select("slug").where("slug", "=", slug).executeTakeFirst();
  if (!page) return false;
  await trx.deleteFrom("status_page_logos").where("slug", "=", slug).execute();
  if (logo) await trx.insertInto("status_page_logos").values({ slug, type: logo.type, data: logo.bytes.toString("base64"), updated_at: now }).execute();
  return true;
}

export async function logo(db: Db, slug: string): Promise<{ type: string; bytes: Buffer; updatedAt: number } | undefined> {
  const row = await db.selectFrom("status_page_logos").selectAll().where("slug", "=", slug).executeTakeFirst();
  return row && { type: row.type, bytes: Buffer.from(row.data, "base64"), updatedAt: Number(row.updated_at) };
}
