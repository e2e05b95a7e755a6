/**
 * What every importer shares: the servers document it builds, the ids it makes from names, and the list of
 * what it could not carry over. Importers are pure: what was read from the other tool in, a document out.
 */
import { stringify } from "yaml";
import { channelDocument } from "../domain/schema/channel.ts";
import { id as serviceId, limits, serverDocument } from "../domain/schema/index.ts";
import { channelsKey } from "../cli/servers-file.ts";
import { validate } from "../domain/validate.ts";

/** A check as a servers file writes it (the input shape of PUT /services/{id}: defaults left out). */
export type Check = Record<string, unknown>;

export interface Imported {
  /** Channel name → channel, as `channels:` of a servers file (the other tool's notification settings). */
  readonly channels: Record<string, Record<string, unknown>>;
  /** Server id → server document, as `healthd apply` reads it (`pingKey`: the first segment of its slug URLs). */
  readonly servers: Record<string, { name?: string; pingKey?: string; services: { id: string; name?: string; tags?: string[]; check: Check }[] }>;
  /** One line per monitor, condition or setting not carried over, and why. */
  readonly notes: string[];
  /** Secrets a job sends that healthd can keep as tokens (Gatus's external-endpoint tokens); never printed. */
  readonly tokens?: readonly CarriedToken[];
}

/** Another tool's token, as its jobs send it (`${VAR}` not yet filled), and the heartbeats it reports to. */
export interface CarriedToken {
  readonly secret: string;
  /** The servers of its heartbeats: what a healthd ping token needs to be limited to. */
  readonly servers: readonly string[];
  /** The other tool's keys of the endpoints that use it, to name it. */
  readonly keys: readonly string[];
}

/** Thrown when the file is not what --from says: the message says what it looked like (exit 2). */
export class NotThatFormat extends Error {}

/** An id from a name: lower case, runs of anything else than a-z 0-9 . _ - as one dash, at most 64. */
export function slug(name: string, fallback: string): string {
  const id = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "")
    .slice(0, 64)
    .replace(/[-.]+$/, "");
  return id === "" ? fallback : id;
}

/** Whether apply takes `text` as an id as it is (1 to 64 of A-Z a-z 0-9 . _ -). */
const validId = (text: string) => serviceId.safeParse(text).success;

/** A server's id in the document: `channels` is the key of the channels, so a server called that is renamed. */
const serverKey = (id: string) => (id === channelsKey ? `${channelsKey}-server` : id);

/** Builds the document: servers in order of first use, service ids made unique within their server. */
export class DocumentBuilder {
  readonly channels: Imported["channels"] = {};
  readonly servers: Imported["servers"] = {};
  readonly notes: string[] = [];

  /** Add a channel; answers the name it got (the slug of its name, never `ntfy`, with -2, -3... when taken). */
  channel(name: string, doc: Record<string, unknown>, fallback: string): string {
    const base = slug(name, fallback).replace(/^ntfy$/, "ntfy-imported");
    let id = base;
    for (let n = 2; id in this.channels; n++) id = `${base.slice(0, 60)}-${n}`;
    this.channels[id] = doc;
    return id;
  }

  server(id: string, name?: string): void {
    this.servers[serverKey(id)] ??= { ...(name !== undefined && name !== id ? { name } : {}), services: [] };
  }

  /**
   * Add a service; answers the id it got: `keep` when given, free and a valid id (the other tool's own, which its
   * URLs name), else the slug of its name, with -2, -3... when taken.
   */
  add(serverId: string, name: string, check: Check, fallbackId: string, keep?: string, tags: readonly string[] = []): string {
    this.server(serverId);
    const services = this.servers[serverKey(serverId)]!.services;
    const labels = (id: string) => ({ ...(name !== id ? { name: name.slice(0, 200) } : {}), ...(tags.length > 0 ? { tags: this.tags(`${serverId}/${id}`, tags) } : {}) });
    if (keep !== undefined && validId(keep) && !services.some((s) => s.id === keep)) {
      services.push({ id: keep, ...labels(keep), check });
      return keep;
    }
    const base = slug(name, fallbackId);
    let id = base;
    for (let n = 2; services.some((s) => s.id === id); n++) id = `${base.slice(0, 60)}-${n}`;
    services.push({ id, ...labels(id), check });
    return id;
  }

  /**
   * The other tool's tags as healthd's: lowercased, a run of other characters (a space in a Kuma tag's name) as
   * one "-", at most 64 characters, each once, at most 20; what changed or was left out is noted.
   */
  tags(service: string, given: readonly string[]): string[] {
    const made = given.map((t) => t.toLowerCase().replace(/[^a-z0-9_.:/-]+/g, "-").replace(/^[^a-z0-9]+/, "").slice(0, 64));
    const changed = given.filter((t, i) => made[i] !== t.toLowerCase());
    if (changed.length > 0) this.note(service, `tags ${changed.map((t) => JSON.stringify(t)).join(", ")} are written as healthd's tags are (1 to 64 of a-z 0-9 _ . : / -; an empty one is left out)`);
    const unique = [...new Set(made.filter((t) => t !== ""))];
    if (unique.length > limits.tagsPerService) this.note(service, `${unique.length} tags, of which the first ${limits.tagsPerService} are kept (healthd's limit)`);
    return unique.slice(0, limits.tagsPerService);
  }

  note(what: string, why: string): void {
    this.notes.push(`${what}: ${why}`);
  }

  /**
   * The document, each server validated as apply would: a service apply would refuse is left out and noted
   * with the reason, so what is printed always applies. With `variables`, a `${NAME}` (or `${NAME:-default}`)
   * is validated as its default or as a plain word, since apply fills it from the environment.
   */
  finish({ variables = false } = {}): Imported {
    // A channel apply would refuse is left out, and taken out of the checks that named it.
    for (const [name, doc] of Object.entries(this.channels)) {
      const parsed = validate(channelDocument, doc);
      if (parsed.ok) continue;
      delete this.channels[name];
      this.note(`channel ${name}`, `left out: ${parsed.errors.map((e) => `${e.path || "/"} ${e.message}`).join("; ")}`);
      for (const server of Object.values(this.servers)) {
        for (const service of server.services) {
          const named = service.check.channels as string[] | undefined;
          if (!named?.includes(name)) continue;
          const left = named.filter((n) => n !== name);
          if (left.length > 0) service.check.channels = left;
          else delete service.check.channels;
        }
      }
    }
    const filled = (value: unknown): unknown =>
      typeof value === "string"
        ? value.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(?::-([^}]*))?\}/g, (_, fallback: string | undefined) => fallback ?? "variable")
        : Array.isArray(value)
          ? value.map(filled)
          : typeof value === "object" && value !== null
            ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, filled(v)]))
            : value;
    for (const [serverId, server] of Object.entries(this.servers)) {
      for (;;) {
        const parsed = validate(serverDocument, variables ? filled(server) : server);
        // A field made of a variable is checked when apply fills it, not here.
        const error = parsed.ok ? undefined : parsed.errors.find((e) => !(variables && holdsVariable(server, e.path)));
        if (!error) break;
        const index = /^\/services\/(\d+)/.exec(error.path)?.[1];
        if (index === undefined) throw new Error(`an imported server ${serverId} is invalid at ${error.path}: ${error.message}`);
        const [dropped] = server.services.splice(Number(index), 1);
        this.note(`${serverId}/${dropped!.id}`, `left out: ${error.path.replace(/^\/services\/\d+/, "")} ${error.message}`);
      }
    }
    return { channels: this.channels, servers: this.servers, notes: this.notes };
  }
}

/** Whether the value at JSON Pointer `path` in `document` (or the deepest one there) is a string with a ${...}. */
function holdsVariable(document: unknown, path: string): boolean {
  let value = document;
  for (const segment of path.split("/").slice(1)) {
    const next = (value as Record<string, unknown> | null)?.[segment];
    if (next === undefined) break;
    value = next;
  }
  return typeof value === "string" && value.includes("${");
}

/**
 * The document as YAML. `escapeDollars`: the other tool's values are literal, so a `$` that apply would read
 * as a variable (`${` or `$$`) is written `$$`; Gatus's own `${VAR}` are variables, and stay.
 */
export function renderImported(imported: Imported, escapeDollars: boolean): string {
  const channels = Object.keys(imported.channels).length > 0 ? { [channelsKey]: imported.channels } : {};
  const text = stringify({ ...channels, ...imported.servers }, { lineWidth: 0 });
  return escapeDollars ? text.replace(/\$(?=[{$])/g, "$$$$") : text;
}

/** Seconds from a Go-style duration (Gatus): 30s, 5m, 1h30m, 250ms, 10d; undefined when it is none. */
export function durationSeconds(text: unknown): number | undefined {
  if (typeof text === "number" && Number.isFinite(text)) return text;
  if (typeof text !== "string") return undefined;
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 };
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text.trim()) return undefined;
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit!]!, 0);
}

export const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, Math.round(value)));
