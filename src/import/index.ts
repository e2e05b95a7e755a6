/**
 * `healthd import`: another tool's monitors as a servers document. Reads the file (the one impure step), says
 * what it is when it is not what `from` names, and hands it to the importer of that tool.
 */
import { readForeignTables } from "../store/foreign.ts";
import { NotThatFormat, renderImported, type Imported } from "./common.ts";
import { fromGatus } from "./gatus.ts";
import { fromHealthchecks, type HealthchecksOptions } from "./healthchecks.ts";
import { fromKumaBackup, fromKumaDatabase } from "./kuma.ts";

export const sources = ["uptime-kuma", "gatus", "healthchecks"] as const;
export type Source = (typeof sources)[number];

export { NotThatFormat };

/** Kuma's tables that carry what healthd takes (and what says which version it is). */
const kumaTables = ["monitor", "notification", "monitor_notification", "tag", "monitor_tag", "knex_migrations", "setting"];

/** The bytes start as a SQLite database does (Kuma's kuma.db). */
export const isSqlite = (bytes: Buffer) => bytes.subarray(0, 16).toString("latin1") === "SQLite format 3\0";

/**
 * Import `file` (its bytes; of a SQLite database the 16-byte header is enough, its tables are read from `file`)
 * as `from` says; answers the document as YAML and the notes. `healthchecks` and `gatus` hold what only those
 * imports take.
 */
export function importFile(
  from: Source,
  file: string,
  bytes: Buffer,
  defaultServer: string,
  healthchecks: HealthchecksOptions = {},
  gatus: { keepTokens?: boolean } = {},
): { yaml: string; imported: Imported } {
  const sqlite = isSqlite(bytes);
  const text = sqlite ? "" : bytes.toString("utf8");
  const what = sqlite ? "a SQLite database" : looksLike(text);
  let imported: Imported;
  switch (from) {
    case "uptime-kuma":
      if (sqlite) imported = fromKumaDatabase(readTables(file), defaultServer);
      else imported = fromKumaBackup(json(text, `it is ${what}, neither Kuma's kuma.db (SQLite) nor its JSON backup`), defaultServer);
      break;
    case "gatus":
      if (sqlite) throw new NotThatFormat("it is a SQLite database, not a Gatus configuration (YAML)");
      imported = fromGatus(text, defaultServer, gatus);
      break;
    case "healthchecks":
      if (sqlite) throw new NotThatFormat("it is a SQLite database, not the JSON of Healthchecks.io's GET /api/v3/checks/");
      imported = fromHealthchecks(json(text, `it is ${what}, not the JSON of Healthchecks.io's GET /api/v3/checks/`), defaultServer, healthchecks);
      break;
  }
  return { yaml: renderImported(imported, from !== "gatus"), imported };
}

function readTables(file: string): ReturnType<typeof readForeignTables> {
  try {
    return readForeignTables(file, kumaTables);
  } catch (error) {
    throw new NotThatFormat(`it starts like a SQLite database but cannot be read as one (${(error as Error).message})`);
  }
}

function json(text: string, otherwise: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new NotThatFormat(otherwise);
  }
}

/** A few words on what a file that is not the expected one looks like. */
function looksLike(text: string): string {
  const start = text.trimStart();
  if (start === "") return "empty";
  if (start.startsWith("{") || start.startsWith("[")) return "JSON";
  if (start.startsWith("<")) return "HTML or XML";
  return "text (YAML, perhaps)";
}
