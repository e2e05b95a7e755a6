import type { Kysely } from "kysely";
import { exec } from "./sqlite.ts";

// The first schema, as it was first shipped. Its flaws are mended by the migrations after it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await exec(
    db,
    `CREATE TABLE servers (
      id TEXT PRIMARY KEY,
      name TEXT
    )`,
    `CREATE TABLE services (
      key INTEGER PRIMARY KEY,
      server_id TEXT REFERENCES servers (id),
      id TEXT,
      name TEXT
    )`,
    `CREATE TABLE http_check_configs (
      service_key INTEGER PRIMARY KEY REFERENCES services (key),
      url TEXT,
      method TEXT,
      interval_seconds INTEGER,
      timeout_ms INTEGER,
      expected_status INTEGER,
      notify INTEGER,
      notify_threshold INTEGER
    )`,
    `CREATE TABLE health_check_data_entries (
      id INTEGER PRIMARY KEY,
      service_key INTEGER REFERENCES services (key),
      checked_at TEXT,
      ok INTEGER,
      status INTEGER,
      latency_ms REAL,
      error TEXT,
      UNIQUE (service_key, checked_at)
    )`,
  );
}
