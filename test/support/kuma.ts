/**
 * An Uptime Kuma database for import tests: a SQLite file with Kuma's tables and columns as its schema defines
 * them (db/knex_init_db.js and the patches and knex migrations after it: monitor with parent, timeout,
 * json_path, expected_value, json_path_operator...), written here from that schema, filled with `monitors`.
 */
import Database from "better-sqlite3";

const schema = [
  `CREATE TABLE user (id INTEGER PRIMARY KEY AUTOINCREMENT, username VARCHAR(255) NOT NULL UNIQUE, password VARCHAR(255),
    active BOOLEAN NOT NULL DEFAULT 1, timezone VARCHAR(150), twofa_secret VARCHAR(64), twofa_status BOOLEAN NOT NULL DEFAULT 0,
    twofa_last_token VARCHAR(6))`,
  `CREATE TABLE monitor (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(150), active BOOLEAN NOT NULL DEFAULT 1,
    user_id INTEGER REFERENCES user (id) ON DELETE SET NULL ON UPDATE CASCADE, interval INTEGER NOT NULL DEFAULT 20, url TEXT,
    restart_url TEXT, type VARCHAR(20), weight INTEGER DEFAULT 2000, hostname VARCHAR(255), port INTEGER,
    created_date DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, keyword VARCHAR(255), maxretries INTEGER NOT NULL DEFAULT 0,
    ignore_tls BOOLEAN NOT NULL DEFAULT 0, upside_down BOOLEAN NOT NULL DEFAULT 0, maxredirects INTEGER NOT NULL DEFAULT 10,
    accepted_statuscodes_json TEXT NOT NULL DEFAULT '["200-299"]', dns_resolve_type VARCHAR(5), dns_resolve_server VARCHAR(255),
    dns_last_result VARCHAR(255), retry_interval INTEGER NOT NULL DEFAULT 0, push_token VARCHAR(32) DEFAULT NULL,
    method TEXT NOT NULL DEFAULT 'GET', body TEXT DEFAULT NULL, headers TEXT DEFAULT NULL, basic_auth_user TEXT DEFAULT NULL,
    basic_auth_pass TEXT DEFAULT NULL, docker_host INTEGER, docker_container VARCHAR(255), proxy_id INTEGER,
    expiry_notification BOOLEAN DEFAULT 1, mqtt_topic TEXT, mqtt_success_message VARCHAR(255), mqtt_username VARCHAR(255),
    mqtt_password VARCHAR(255), database_connection_string VARCHAR(2000), database_query TEXT, auth_method VARCHAR(250),
    auth_domain TEXT, auth_workstation TEXT, grpc_url VARCHAR(255) DEFAULT NULL, grpc_protobuf TEXT DEFAULT NULL,
    grpc_body TEXT DEFAULT NULL, grpc_metadata TEXT DEFAULT NULL, grpc_method TEXT DEFAULT NULL, grpc_service_name TEXT DEFAULT NULL,
    grpc_enable_tls BOOLEAN NOT NULL DEFAULT 0, radius_username VARCHAR(255), radius_password VARCHAR(255),
    radius_calling_station_id VARCHAR(50), radius_called_station_id VARCHAR(50), radius_secret VARCHAR(255),
    resend_interval INTEGER NOT NULL DEFAULT 0, packet_size INTEGER NOT NULL DEFAULT 56, game VARCHAR(255),
    http_body_encoding VARCHAR(25), description TEXT DEFAULT NULL, tls_ca TEXT DEFAULT NULL, tls_cert TEXT DEFAULT NULL,
    tls_key TEXT DEFAULT NULL, parent INTEGER REFERENCES monitor (id) ON DELETE SET NULL ON UPDATE CASCADE,
    invert_keyword BOOLEAN NOT NULL DEFAULT 0, json_path TEXT, expected_value VARCHAR(255), kafka_producer_topic VARCHAR(255),
    kafka_producer_brokers TEXT, kafka_producer_ssl BOOLEAN NOT NULL DEFAULT 0,
    kafka_producer_allow_auto_topic_creation BOOLEAN NOT NULL DEFAULT 0, kafka_producer_sasl_options TEXT,
    kafka_producer_message TEXT, oauth_client_id TEXT DEFAULT NULL, oauth_client_secret TEXT DEFAULT NULL,
    oauth_token_url TEXT DEFAULT NULL, oauth_scopes TEXT DEFAULT NULL, oauth_auth_method TEXT DEFAULT NULL,
    timeout DOUBLE NOT NULL DEFAULT 0, gamedig_given_port_only BOOLEAN NOT NULL DEFAULT 1, json_path_operator VARCHAR(255),
    conditions TEXT NOT NULL DEFAULT '[]', ws_ignore_sec_websocket_accept_header BOOLEAN NOT NULL DEFAULT 0,
    ws_subprotocol VARCHAR(255) NOT NULL DEFAULT '')`,
  `CREATE TABLE heartbeat (id INTEGER PRIMARY KEY AUTOINCREMENT, important BOOLEAN NOT NULL DEFAULT 0,
    monitor_id INTEGER NOT NULL REFERENCES monitor (id) ON DELETE CASCADE ON UPDATE CASCADE, status SMALLINT NOT NULL, msg TEXT,
    time DATETIME NOT NULL, ping INTEGER, duration INTEGER NOT NULL DEFAULT 0, down_count INTEGER NOT NULL DEFAULT 0)`,
  `CREATE TABLE notification (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(255), active BOOLEAN NOT NULL DEFAULT 1,
    user_id INTEGER, is_default BOOLEAN NOT NULL DEFAULT 0, config TEXT)`,
  `CREATE TABLE monitor_notification (id INTEGER PRIMARY KEY AUTOINCREMENT,
    monitor_id INTEGER NOT NULL REFERENCES monitor (id) ON DELETE CASCADE ON UPDATE CASCADE,
    notification_id INTEGER NOT NULL REFERENCES notification (id) ON DELETE CASCADE ON UPDATE CASCADE)`,
  `CREATE TABLE tag (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(255) NOT NULL, color VARCHAR(255) NOT NULL,
    created_date DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
  `CREATE TABLE monitor_tag (id INTEGER PRIMARY KEY AUTOINCREMENT,
    monitor_id INTEGER NOT NULL REFERENCES monitor (id) ON DELETE CASCADE ON UPDATE CASCADE,
    tag_id INTEGER NOT NULL REFERENCES tag (id) ON DELETE CASCADE ON UPDATE CASCADE, value TEXT)`,
  `CREATE TABLE setting (id INTEGER PRIMARY KEY AUTOINCREMENT, key VARCHAR(200) NOT NULL UNIQUE, value TEXT, type VARCHAR(20))`,
  `CREATE TABLE knex_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name VARCHAR(255), batch INTEGER, migration_time DATETIME)`,
];

/** Write a kuma.db at `file` holding `monitors` (columns by name; the rest take Kuma's defaults). */
/** A notification setting of Kuma: its name, its config JSON (with `type`) and the monitors that use it. */
export interface KumaNotification {
  readonly name: string;
  readonly config: Record<string, unknown>;
  readonly active?: boolean;
  readonly monitors: readonly number[];
}

/** A tag of Kuma: its name and the monitors that carry it, each with its value ("" or null: none). */
export interface KumaTag {
  readonly name: string;
  readonly monitors: readonly (readonly [monitor: number, value: string | null])[];
}

export function kumaDatabase(file: string, monitors: readonly Record<string, unknown>[], options: { migrations?: readonly string[]; notifications?: readonly KumaNotification[]; tags?: readonly KumaTag[] } = {}): void {
  const db = new Database(file);
  try {
    for (const statement of schema) db.exec(statement);
    db.prepare("INSERT INTO user (username, password) VALUES ('admin', 'x')").run();
    for (const name of options.migrations ?? ["2023-06-30-1348-http-body-encoding.js", "2024-03-25-0000-json-data-operators.js", "2025-10-15-0000-stat-table-fix.js"]) {
      db.prepare("INSERT INTO knex_migrations (name, batch, migration_time) VALUES (?, 1, CURRENT_TIMESTAMP)").run(name);
    }
    for (const monitor of monitors) {
      const row = { user_id: 1, ...monitor };
      const names = Object.keys(row);
      db.prepare(`INSERT INTO monitor (${names.map((n) => `"${n}"`).join(", ")}) VALUES (${names.map((n) => `@${n}`).join(", ")})`).run(
        Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "boolean" ? Number(v) : v])),
      );
    }
    for (const n of options.notifications ?? []) {
      const { lastInsertRowid } = db.prepare("INSERT INTO notification (name, active, user_id, config) VALUES (?, ?, 1, ?)").run(n.name, n.active === false ? 0 : 1, JSON.stringify(n.config));
      for (const monitor of n.monitors) db.prepare("INSERT INTO monitor_notification (monitor_id, notification_id) VALUES (?, ?)").run(monitor, lastInsertRowid);
    }
    for (const tag of options.tags ?? []) {
      const { lastInsertRowid } = db.prepare("INSERT INTO tag (name, color) VALUES (?, '#059669')").run(tag.name);
      for (const [monitor, value] of tag.monitors) db.prepare("INSERT INTO monitor_tag (monitor_id, tag_id, value) VALUES (?, ?, ?)").run(monitor, lastInsertRowid, value);
    }
  } finally {
    db.close();
  }
}
