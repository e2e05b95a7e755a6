/**
 * The servers file of `healthd apply` and `healthd export`: every server document, keyed by server id, in
 * YAML or JSON (JSON is read as the YAML it also is). Pure: text in, validated documents or located errors out.
 */
import { isNode, LineCounter, parseDocument, stringify, type Document } from "yaml";
import { id, serverDocument, type ServerDocument } from "./schema/index.ts";
import { pointer, validate } from "./validate.ts";
import type { MaintenanceWindow, StoredCheck } from "./model.ts";

/** A server as a file holds it: its services' checks as stored. */
export interface FileServer {
  readonly id: string;
  readonly name: string;
  readonly maintenance: readonly MaintenanceWindow[];
  readonly services: readonly { readonly id: string; readonly name: string; readonly check: StoredCheck }[];
}

export type ParsedFile =
  | {
      readonly ok: true;
      readonly servers: ReadonlyMap<string, ServerDocument>;
      /** `file:line:column` of a JSON Pointer into the file, for errors found later (by the store). */
      readonly where: (pointer: string) => string;
    }
  | { readonly ok: false; readonly errors: readonly string[] };

/** Parse and validate `text`; errors read `file:line:column: /path: message`. */
export function parseServersFile(text: string, file: string): ParsedFile {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const at = (offset: number | undefined) => {
    if (offset === undefined) return `${file}`;
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  if (doc.errors.length > 0) return { ok: false, errors: doc.errors.map((e) => `${at(e.pos[0])}: ${e.message.split("\n")[0]}`) };

  let data: unknown;
  try {
    data = doc.toJS();
  } catch (error) {
    // An alias to an anchor that does not exist, say: YAML that parses but has no value.
    return { ok: false, errors: [`${at(0)}: ${(error as Error).message.split("\n")[0]}`] };
  }
  const where = (path: string) => at(locate(doc, path.split("/").slice(1).map(unescape)));
  if (data === null || data === undefined) return { ok: true, servers: new Map(), where };
  if (typeof data !== "object" || Array.isArray(data)) {
    return { ok: false, errors: [`${at(0)}: the file must map server ids to server documents, e.g. "web-01: {services: [...]}"`] };
  }
  const errors: string[] = [];
  const servers = new Map<string, ServerDocument>();
  for (const [serverId, body] of Object.entries(data as Record<string, unknown>)) {
    if (!id.safeParse(serverId).success) {
      errors.push(`${at(locate(doc, [serverId]))}: /${serverId}: a server id must be 1 to 64 characters of A-Z a-z 0-9 . _ -`);
      continue;
    }
    const parsed = validate(serverDocument, body);
    const bodyId = (body as { id?: unknown } | null)?.id;
    if (typeof bodyId === "string" && bodyId !== serverId) {
      errors.push(`${at(locate(doc, [serverId, "id"]))}: /${serverId}/id: must equal its key (${serverId}), or be left out`);
    }
    if (!parsed.ok) {
      for (const e of parsed.errors) {
        const path = [serverId, ...e.path.split("/").slice(1).map(unescape)];
        errors.push(`${at(locate(doc, path))}: ${pointer(path)}: ${e.message}`);
      }
    } else servers.set(serverId, parsed.value);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, servers, where };
}

/** The stored servers as a file that `healthd apply` reads back to the same state. */
export function renderServersFile(servers: readonly FileServer[], format: "yaml" | "json"): string {
  const data: Record<string, unknown> = {};
  for (const server of servers) {
    data[server.id] = {
      name: server.name,
      services: server.services.map((s) => ({ id: s.id, name: s.name, check: s.check })),
      ...(server.maintenance.length > 0 ? { maintenance: server.maintenance } : {}),
    };
  }
  return format === "json" ? JSON.stringify(data, null, 2) + "\n" : stringify(data, { lineWidth: 0 });
}

/** The offset of the deepest node of `path` that exists, for pointing at a line. */
function locate(doc: Document, path: readonly (string | number)[]): number | undefined {
  for (let depth = path.length; depth >= 0; depth--) {
    const segments = path.slice(0, depth).map((p) => (typeof p === "string" && /^\d+$/.test(p) ? Number(p) : p));
    const node = depth === 0 ? doc.contents : doc.getIn(segments, true);
    if (isNode(node) && node.range) return node.range[0];
  }
  return undefined;
}

const unescape = (segment: string) => segment.replaceAll("~1", "/").replaceAll("~0", "~");
