/**
 * What a ping does beyond its entry, as Healthchecks.io's does: it resumes a paused heartbeat (unless the
 * heartbeat has manualResume), and a slug URL's `?create=1` makes the heartbeat it names when its server has
 * autoProvision. Both are changes of configuration, made through the store as a PUT of the service would be and
 * followed by the schedule before the ping is stored, so the ping counts as the resumed heartbeat's first.
 */
import { BlockList, isIP } from "node:net";
import type { Checking } from "./checking.ts";
import { UsageError } from "../platform/config.ts";
import { StoreUnavailable } from "../store/errors.ts";
import type { Clock } from "../platform/clock.ts";
import type { Ping } from "../domain/batch.ts";
import type { ScheduleChange } from "../domain/model.ts";
import { serviceDocument } from "../domain/schema/index.ts";
import type { ConfigurationStore, Store } from "../store/store.ts";

/** Healthchecks.io's defaults for a check it makes on a ping: a period of a day, a grace of an hour. */
const hcDefaults = { periodSeconds: 86_400, graceSeconds: 3600 };

export interface PingingContext {
  readonly store: ConfigurationStore;
  readonly checking: Checking;
  readonly clock: Clock;
  readonly scheduleChanged: (change: ScheduleChange) => Promise<void>;
}

/** Store a ping, resuming its heartbeat first when it is paused and the ping is a finish (a start or log leaves it paused). */
export async function pingResuming(ctx: PingingContext, pingKey: string, ping: Ping, at: number): Promise<boolean> {
  const beat = ctx.checking.heartbeat(pingKey);
  if (beat?.check.type === "heartbeat" && beat.check.paused && !beat.check.manualResume && ping.signal !== "start" && ping.signal !== "log") {
    const [stored] = await ctx.store.services({ serverId: beat.serverId, serviceId: beat.serviceId });
    if (stored?.check.type === "heartbeat" && stored.check.paused && !stored.check.manualResume) {
      const result = await ctx.store.putService(beat.serverId, { id: stored.id, name: stored.name, tags: [...stored.tags], check: { ...stored.check, paused: false } }, ctx.clock.now());
      if (result && result.outcome !== "unchanged") await ctx.scheduleChanged(result.schedule);
    }
  }
  return ctx.checking.ping(pingKey, ping, at);
}

/**
 * Make the heartbeat `serverId/serviceId` from its server's heartbeatDefaults: its ping key, or undefined when
 * the server does not allow it, the id is taken by a check of another kind, or the server is full.
 */
export async function provision(ctx: PingingContext, serverId: string, serviceId: string): Promise<string | undefined> {
  const [server] = await ctx.store.servers(serverId);
  if (!server?.autoProvision) return undefined;
  if ((await ctx.store.findService(serverId, serviceId)).key !== undefined) return ctx.checking.pingKeyOf(serverId, serviceId);
  const doc = serviceDocument.safeParse({ id: serviceId, check: { ...(server.heartbeatDefaults ?? hcDefaults), type: "heartbeat" } });
  if (!doc.success) return undefined;
  // Refused for the server's sake (full, a channel gone): not found. The store unavailable throws, and the
  // ping is answered 503 as any ping that cannot be stored.
  const result = await ctx.store.putService(serverId, doc.data, ctx.clock.now()).catch((error: unknown) => {
    if (error instanceof StoreUnavailable) throw error;
    return undefined;
  });
  if (!result) return undefined;
  if (result.outcome !== "unchanged") await ctx.scheduleChanged(result.schedule);
  return ctx.checking.pingKeyOf(serverId, serviceId);
}

/**
 * Whether a peer's address is one of `cidrs` (serve --trust-proxy): only then are its X-Forwarded-For and
 * X-Forwarded-Proto believed. Throws naming a CIDR that is not one.
 */
export function trustedProxies(cidrs: readonly string[]): (address: string) => boolean {
  if (cidrs.length === 0) return () => false;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = "", bits] = cidr.split("/");
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
    if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
      throw new UsageError(`--trust-proxy ${JSON.stringify(cidr)} is not an address or a CIDR range; give one such as 10.0.0.0/8, 127.0.0.1 or ::1`);
    }
    list.addSubnet(address, prefix, family === 6 ? "ipv6" : "ipv4");
  }
  return (peer) => {
    const v4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(peer)?.[1];
    const address = v4 ?? peer;
    return list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
  };
}
