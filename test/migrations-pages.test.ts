/**
 * The migration that gives status pages sections, a look and hostnames, on both engines: a page saved before
 * it reads after it as the same page, showing its servers whole with every card fact, on no host of its own;
 * a hostname belongs to one page, and goes with it; so does a logo (the migration after it).
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { migrationNames } from "../src/store/migrate.ts";
import type { KyselyStore } from "../src/store/kysely-store.ts";
import { engines, testDatabase, type TestEngine } from "./support/databases.ts";
import { open as openStore, rawQuery } from "./support/raw.ts";

const sections = "20261205230000_add_status_page_sections";
const before = migrationNames[migrationNames.indexOf(sections) - 1]!;

async function open(t: TestContext, engine: TestEngine): Promise<KyselyStore> {
  const store = await openStore(await testDatabase(t, engine), { mode: "raw" });
  t.after(() => store.close());
  return store;
}

for (const engine of engines) {
  test(`${engine}: a named page made before sections reads as the same page after ${sections}`, async (t) => {
    assert.ok(migrationNames.includes(sections));
    const store = await open(t, engine);
    assert.ok((await store.backend.migrate(before)).ok);
    await rawQuery(store, `INSERT INTO servers (id, name, created_at, updated_at) VALUES ('web-01', 'Web', 1, 1)`);
    await rawQuery(store, `INSERT INTO status_pages (slug, title, description, servers, public, created_at, updated_at) VALUES ('shop', 'Shop', 'The *shop*', '["web-01"]', TRUE, 5, 6)`);
    const report = await store.backend.migrate();
    assert.ok(report.ok, report.ok ? "" : report.error.message);
    assert.deepEqual(await store.statusPages(), [
      {
        slug: "shop", title: "Shop", description: "The *shop*", servers: ["web-01"], sections: null, logo: null, public: true,
        accentColor: null, footerLinks: [], hostnames: [], showUptime: true, showLatency: true, showHistory: true, timeZone: "UTC", createdAt: 5, updatedAt: 6,
      },
    ]);

    await rawQuery(store, `INSERT INTO status_page_hostnames (hostname, slug) VALUES ('status.shop.test', 'shop')`);
    await assert.rejects(rawQuery(store, `INSERT INTO status_page_hostnames (hostname, slug) VALUES ('status.shop.test', 'shop')`), "one page per host");
    await assert.rejects(rawQuery(store, `INSERT INTO status_page_hostnames (hostname, slug) VALUES ('other.shop.test', 'ghost')`), "only a page's");
    assert.deepEqual((await store.statusPages({ host: "status.shop.test" })).map((p) => [p.slug, p.hostnames]), [["shop", ["status.shop.test"]]]);
    // 20261206040000_add_status_page_time_zone: an existing page tells its dates in UTC, as it did (above).
    // 20261205230100_add_status_page_logos: a logo is a page's, and goes with it.
    await assert.rejects(rawQuery(store, `INSERT INTO status_page_logos (slug, type, data, updated_at) VALUES ('ghost', 'image/png', 'iVBORw0KGgo=', 7)`), "only a page's");
    assert.equal(await store.putStatusPageLogo("shop", { type: "image/png", bytes: Buffer.from("iVBORw0KGgo=", "base64") }, 7), true);
    assert.deepEqual((await store.statusPages({ slug: "shop" }))[0]!.logo, { type: "image/png", updatedAt: 7 });
    assert.equal(await store.deleteStatusPage("shop"), true);
    assert.deepEqual(await rawQuery(store, "SELECT hostname FROM status_page_hostnames"), []);
    assert.deepEqual(await rawQuery(store, "SELECT slug FROM status_page_logos"), []);
  });
}
