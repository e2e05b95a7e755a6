/**
 * The servers file of `healthd apply` and `healthd export`: every server document, keyed by server id, in
 * YAML or JSON (JSON is read as the YAML it also is), with `${NAME}` filled from the environment. Pure: text
 * and environment in, validated documents or located errors out.
 */
import { isDeepStrictEqual } from "node:util";
import { isNode, LineCounter, parseDocument, stringify, type Document } from "yaml";
import { checkInput, id, serverDocument, type ServerDocument } from "../domain/schema/index.ts";
import { pointer, validate } from "../domain/validate.ts";
import { channelDocument, channelName, type ChannelDocument } from "../domain/schema/channel.ts";
import { masked } from "../domain/schema/secrets.ts";
import type { MaintenanceWindow, StoredCheck } from "../domain/model.ts";

/** A server as a file holds it: its services' checks as stored. */
export interface FileServer {
  readonly id: string;
  readonly name: string;
  readonly maintenance: readonly MaintenanceWindow[];
  readonly channels: readonly string[] | null;
  /** Its slug URLs' ping key (kept by export, so that apply elsewhere keeps its jobs' URLs), and what ?create=1 may make. */
  readonly pingKey?: string;
  readonly autoProvision?: boolean;
  readonly heartbeatDefaults?: Readonly<Record<string, unknown>> | null;
  readonly groupThreshold?: number;
  readonly escalate?: readonly { readonly afterMinutes: number; readonly channels: readonly string[] }[];
  readonly services: readonly { readonly id: string; readonly name: string; readonly tags: readonly string[]; readonly check: StoredCheck }[];
}

export type ParsedFile =
  | {
      readonly ok: true;
      readonly servers: ReadonlyMap<string, ServerDocument>;
      /** The file's `channels:`, by name; undefined when it has none (then apply leaves the stored channels be). */
      readonly channels: ReadonlyMap<string, ChannelDocument> | undefined;
      /** `file:line:column` of a JSON Pointer into the file, for errors found later (by the store). */
      readonly where: (pointer: string) => string;
    }
  | { readonly ok: false; readonly errors: readonly string[] };

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Parse and validate `text`, its `${NAME}` filled from `env` first; errors read
 * `file:line:column: /path: message`.
 */
export function parseServersFile(text: string, file: string, env: Environment): ParsedFile {
  const filled = interpolate(text, file, env);
  if (!filled.ok) return filled;
  const lineCounter = new LineCounter();
  const doc = parseDocument(filled.text, { lineCounter, uniqueKeys: true, prettyErrors: false });
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
  if (data === null || data === undefined) return { ok: true, servers: new Map(), channels: undefined, where };
  if (typeof data !== "object" || Array.isArray(data)) {
    return { ok: false, errors: [`${at(0)}: the file must map server ids to server documents, e.g. "web-01: {services: [...]}"`] };
  }
  const errors: string[] = [];
  const servers = new Map<string, ServerDocument>();
  const { [channelsKey]: channelsBody, ...serverBodies } = data as Record<string, unknown>;
  const channels = channelsBody === undefined ? undefined : parseChannels(channelsBody, (path) => at(locate(doc, path)), errors);
  for (const [serverId, body] of Object.entries(serverBodies)) {
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
  return errors.length > 0 ? { ok: false, errors } : { ok: true, servers, channels, where };
}

/** The top-level key that holds channels, not a server (so no server in a file can have this id). */
export const channelsKey = "channels";

function parseChannels(body: unknown, at: (path: (string | number)[]) => string, errors: string[]): Map<string, ChannelDocument> {
  const channels = new Map<string, ChannelDocument>();
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    errors.push(`${at([channelsKey])}: /${channelsKey}: must map channel names to channels, e.g. "slack-ops: {type: slack, url: ...}"`);
    return channels;
  }
  for (const [name, channel] of Object.entries(body as Record<string, unknown>)) {
    const named = channelName.safeParse(name);
    if (!named.success) errors.push(`${at([channelsKey, name])}: /${channelsKey}/${name}: a channel name ${named.error.issues[0]!.message}`);
    const parsed = validate(channelDocument, channel);
    if (!parsed.ok) {
      for (const e of parsed.errors) {
        const path = [channelsKey, name, ...e.path.split("/").slice(1).map(unescape)];
        errors.push(`${at(path)}: ${pointer(path)}: ${e.message}`);
      }
    } else if (named.success) channels.set(name, parsed.value);
  }
  return channels;
}

/**
 * The stored servers and channels as a file that `healthd apply` reads back to the same state. Channels'
 * secrets are written as "***", which apply reads as "keep the stored one".
 */
export function renderServersFile(servers: readonly FileServer[], channels: readonly { name: string; doc: ChannelDocument }[], format: "yaml" | "json"): string {
  const data: Record<string, unknown> = {};
  if (channels.length > 0) {
    data[channelsKey] = Object.fromEntries(
      channels.map(({ name, doc }) => [name, Object.fromEntries(Object.entries(masked(doc)).filter(([, v]) => v !== null && !(typeof v === "object" && Object.keys(v).length === 0)))]),
    );
  }
  for (const server of servers) {
    data[server.id] = {
      name: server.name,
      services: server.services.map((s) => ({ id: s.id, ...(s.name !== s.id ? { name: s.name } : {}), ...(s.tags.length > 0 ? { tags: s.tags } : {}), check: withoutDefaults(s.check) })),
      ...(server.maintenance.length > 0 ? { maintenance: server.maintenance } : {}),
      ...(server.channels !== null ? { channels: server.channels } : {}),
      ...(server.pingKey !== undefined ? { pingKey: server.pingKey } : {}),
      ...(server.autoProvision ? { autoProvision: true } : {}),
      ...(server.heartbeatDefaults ? { heartbeatDefaults: server.heartbeatDefaults } : {}),
      ...(server.groupThreshold !== undefined && server.groupThreshold !== 5 ? { groupThreshold: server.groupThreshold } : {}),
      ...(server.escalate ? { escalate: server.escalate } : {}),
    };
  }
  const text = format === "json" ? JSON.stringify(data, null, 2) + "\n" : stringify(data, { lineWidth: 0 });
  // What apply would read as a variable or an escape stays what it is: `${` and `$$` are written `$${` and `$$$`.
  return text.replace(/\$(?=[{$])/g, "$$$$");
}

/**
 * `${NAME}` is the variable's value, `${NAME:-default}` the default when it is unset or empty, `$$` a dollar;
 * any other `$` is itself (a regex's `^ok$`). The whole text is filled before it is parsed, as Gatus and
 * Compose files are, so a value may be a number (`intervalSeconds: ${INTERVAL}`). Every unset name is an
 * error naming its line.
 */
export function interpolate(text: string, file: string, env: Environment): { ok: true; text: string } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  const at = (offset: number) => {
    const before = text.slice(0, offset);
    const line = before.split("\n").length;
    return `${file}:${line}:${offset - before.lastIndexOf("\n")}`;
  };
  const filled = text.replace(/\$(\$|\{([^}\n]*)\}?)/g, (match, _body: string, inside: string | undefined, offset: number) => {
    if (match === "$$") return "$";
    const parts = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(inside ?? "");
    if (!match.endsWith("}") || !parts) {
      errors.push(`${at(offset)}: ${match} is not a variable: write \${NAME} or \${NAME:-default} (letters, digits and _), or $$ for a dollar`);
      return match;
    }
    const [, name, fallback] = parts as unknown as [string, string, string | undefined];
    const value = env[name];
    if (value !== undefined && (value !== "" || fallback === undefined)) return value;
    if (fallback !== undefined) return fallback;
    errors.push(`${at(offset)}: \${${name}} is not set: set ${name} in the environment, give a default (\${${name}:-value}), or write $$ for a dollar`);
    return match;
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, text: filled };
}

/**
 * A stored check as a file writes it: without the fields that hold their default (`type` of an http check,
 * `timeoutMs: 10000`, `dependsOn: []`...), as a person writes one. A field goes only when the check read back
 * without it is the same check, so apply of the export changes nothing.
 */
export function withoutDefaults(check: StoredCheck): Record<string, unknown> {
  const read = (doc: Record<string, unknown>) => {
    const parsed = checkInput.safeParse(doc);
    if (!parsed.success) return undefined;
    // The data layer's defaults for what a document leaves out (rows.ts): notify on, 2 failures (0 for a heartbeat),
    // no push token for a new heartbeat.
    const c = parsed.data as Record<string, unknown>;
    const heartbeat = c.type === "heartbeat" ? { pushToken: c.pushToken ?? null } : {};
    return { ...c, notify: c.notify ?? true, notifyThreshold: c.notifyThreshold ?? (c.type === "heartbeat" ? 0 : 2), ...heartbeat };
  };
  const whole = read(check as unknown as Record<string, unknown>);
  let doc: Record<string, unknown> = { ...check };
  if (whole === undefined) return doc;
  for (const key of Object.keys(check)) {
    const { [key]: _, ...without } = doc;
    if (isDeepStrictEqual(read(without), whole)) doc = without;
  }
  return doc;
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
