/**
 * Channels (named destinations of notifications) and what routing reads of them. A channel's fields are kept
 * as written, secrets and `${NAME}`s included: masking is the answer's business (notify/secrets.ts).
 */
import { builtInChannel } from "../../domain/schema/channel.ts";
import type { Kysely } from "kysely";
import type { Routes } from "../../domain/notification.ts";
import type { ChannelDocument, ChannelEvent } from "../../domain/schema/channel.ts";
import { keepSecrets, maskedSecrets } from "../../domain/schema/secrets.ts";
import type { Backend } from "../backend.ts";
import { ChannelsRefused, SecretsMissing } from "../errors.ts";
import type { StoredChannel } from "../store.ts";
import type { Tables } from "../tables.ts";
import { compiledOnce } from "./compiled.ts";

type Db = Kysely<Tables>;

/** The channel `ntfy`, which the daemon's --ntfy-* flags make: always there, never stored. */

function fromRow(row: { name: string; type: string; config: string; events: string | null; created_at: number; updated_at: number }): StoredChannel {
  const doc = { type: row.type, ...(JSON.parse(row.config) as object), events: JSON.parse(row.events ?? "null") as ChannelEvent[] | null } as ChannelDocument;
  return { name: row.name, doc, createdAt: row.created_at, updatedAt: row.updated_at };
}

export async function channels(db: Db, name?: string): Promise<StoredChannel[]> {
  let query = db.selectFrom("channels").selectAll().orderBy("name");
  if (name !== undefined) query = query.where("name", "=", name);
  return (await query.execute()).map(fromRow);
}

/**
 * Create or replace a channel; answers whether it was created, and whether anything changed. A secret sent
 * back as answers show it ("***") keeps the stored value.
 */
export async function putChannel(trx: Db, name: string, sent: ChannelDocument, now: number): Promise<{ created: boolean; changed: boolean }> {
  const existing = await trx.selectFrom("channels").selectAll().where("name", "=", name).executeTakeFirst();
  const doc = keepSecrets(sent, existing && fromRow(existing).doc);
  const masked = maskedSecrets(doc);
  if (masked.length > 0) throw new SecretsMissing(name, masked);
  const { type, events, ...fields } = doc;
  const row = { type, config: JSON.stringify(fields), events: events === null ? null : JSON.stringify(events) };
  if (!existing) {
    await trx.insertInto("channels").values({ name, ...row, created_at: now, updated_at: now }).execute();
    return { created: true, changed: true };
  }
  if (existing.type === row.type && existing.config === row.config && existing.events === row.events) return { created: false, changed: false };
  await trx.updateTable("channels").set({ ...row, updated_at: now }).where("name", "=", name).execute();
  return { created: false, changed: true };
}

/** The channel names in a stored `channels` list and in the steps of a stored `escalate` (JSON, or null). */
function namesIn(channels: string | null, escalate: string | null): string[] {
  const steps = JSON.parse(escalate ?? "[]") as { channels: string[] }[];
  return [...new Set([...(JSON.parse(channels ?? "[]") as string[]), ...steps.flatMap((s) => s.channels)])];
}

/** The checks and servers that name `channel` (to send to, or to escalate to), as "serverId/serviceId" and "serverId". */
export async function namedBy(db: Db, channel: string): Promise<string[]> {
  // JSON lists of ids, which cannot hold a quote: a LIKE finds the candidates, the parse decides.
  const pattern = `%"${channel}"%`;
  const checks = await db
    .selectFrom("http_check_configs as c")
    .innerJoin("services as s", "s.key", "c.service_key")
    .select(["s.server_id", "s.id", "c.channels", "c.escalate"])
    .where((eb) => eb.or([eb("c.channels", "like", pattern), eb("c.escalate", "like", pattern)]))
    .execute();
  const servers = await db
    .selectFrom("servers")
    .select(["id", "channels", "escalate"])
    .where((eb) => eb.or([eb("channels", "like", pattern), eb("escalate", "like", pattern)]))
    .execute();
  const names = (r: { channels: string | null; escalate: string | null }) => namesIn(r.channels, r.escalate).includes(channel);
  return [...servers.filter(names).map((s) => s.id), ...checks.filter(names).map((c) => `${c.server_id}/${c.id}`)];
}

/** Delete a channel no check or server names; answers whether it existed, or who names it. */
export async function deleteChannel(trx: Db, name: string): Promise<{ deleted: boolean; namedBy: string[] }> {
  const users = await namedBy(trx, name);
  if (users.length > 0) return { deleted: false, namedBy: users };
  const result = await trx.deleteFrom("channels").where("name", "=", name).executeTakeFirst();
  return { deleted: Number(result.numDeletedRows) > 0, namedBy: [] };
}

/** Refuse (ChannelsRefused) a write that leaves a check or server naming a channel that does not exist. */
export async function checkChannelNames(trx: Db, serverIds: readonly string[]): Promise<void> {
  if (serverIds.length === 0) return;
  const known = new Set([builtInChannel, ...(await trx.selectFrom("channels").select("name").execute()).map((c) => c.name)]);
  const servers = await trx
    .selectFrom("servers")
    .select(["id", "channels", "escalate"])
    .where("id", "in", serverIds)
    .where((eb) => eb.or([eb("channels", "is not", null), eb("escalate", "is not", null)]))
    .execute();
  const checks = await trx
    .selectFrom("http_check_configs as c")
    .innerJoin("services as s", "s.key", "c.service_key")
    .select(["s.server_id", "s.id", "c.channels", "c.escalate"])
    .where("s.server_id", "in", serverIds)
    .where((eb) => eb.or([eb("c.channels", "is not", null), eb("c.escalate", "is not", null)]))
    .execute();
  const unknownIn = (serverId: string, serviceId: string | null, channels: string | null, escalate: string | null) => [
    ...namesIn(channels, null).filter((c) => !known.has(c)).map((channel) => ({ serverId, serviceId, channel, field: "channels" as const })),
    ...namesIn(null, escalate).filter((c) => !known.has(c)).map((channel) => ({ serverId, serviceId, channel, field: "escalate" as const })),
  ];
  const unknown = [
    ...servers.flatMap((s) => unknownIn(s.id, null, s.channels, s.escalate)),
    ...checks.flatMap((c) => unknownIn(c.server_id, c.id, c.channels, c.escalate)),
  ];
  if (unknown.length > 0) throw new ChannelsRefused(unknown);
}

/** What routing needs (policy/route.ts): each stored channel's events, and the cluster's default channels. */
export async function readRoutes(db: Db, backend: Backend): Promise<Routes> {
  const { rows } = await channelEvents(db, backend);
  const events = new Map(rows.map((r) => [r.name, JSON.parse(r.events ?? "null") as ChannelEvent[] | null]));
  return { events, defaults: await clusterChannels(db, backend) };
}

const channelEvents = compiledOnce((db: Db) => db.selectFrom("channels").select(["name", "events"]));

/** The cluster's default channels (serve --channel), as the last node given them shared them; null: ntfy. */
export async function clusterChannels(db: Db, backend: Backend): Promise<string[] | null> {
  const { rows } = await defaultChannels(db, backend);
  return rows[0] ? (JSON.parse(rows[0].value) as string[]) : null;
}

const defaultChannels = compiledOnce((db: Db) => db.selectFrom("cluster_settings").select("value").where("name", "=", "channels"));

/** Make `names` the cluster's default channels (null: back to ntfy); answers whether that changed anything. */
export async function shareChannels(trx: Db, backend: Backend, names: readonly string[] | null): Promise<boolean> {
  const before = await clusterChannels(trx, backend);
  if (JSON.stringify(before) === JSON.stringify(names)) return false;
  await trx.deleteFrom("cluster_settings").where("name", "=", "channels").execute();
  if (names !== null) await trx.insertInto("cluster_settings").values({ name: "channels", value: JSON.stringify(names) }).execute();
  return true;
}
