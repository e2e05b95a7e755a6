/**
 * /channels: where notifications go. A channel is configuration with credentials in it, so every operation
 * needs an admin token, and answers show secrets as "***" (a PUT that sends "***" back keeps the stored one).
 * `ntfy` is listed as the daemon's --ntfy-* flags make it, and cannot be written.
 */
import { channelAnswer, channelListAnswer, channelTestAnswer } from "./answers.ts";
import { Unusable, type ChannelDirectory } from "../notify/channels.ts";
import type { Outgoing, SendResult } from "../notify/outgoing.ts";
import { channelDocument, channelName, type ChannelDocument } from "../domain/schema/channel.ts";
import { masked } from "../domain/schema/secrets.ts";
import { builtInChannel } from "../domain/schema/channel.ts";
import type { ChannelStore, StoredChannel } from "../store/store.ts";
import { SecretsMissing } from "../store/errors.ts";
import { HttpError } from "./problem.ts";
import { validBody, type Route } from "./router.ts";

export interface ChannelContext {
  readonly store: ChannelStore;
  readonly channels: ChannelDirectory;
  /** The built-in ntfy channel as this node's flags make it. */
  readonly ntfy: { readonly url: string; readonly topic: () => string | null; readonly token: boolean };
  readonly statusPage: string | null;
  readonly now: () => number;
}

// On every server: a token limited to some servers may not touch what serves them all (an unlimited token, a shared channel).
const admin = { scope: "admin" } as const;

const iso = (ms: number) => new Date(ms).toISOString();

export function channelJson(c: StoredChannel) {
  return { name: c.name, ...masked(c.doc), builtIn: false, createdAt: iso(c.createdAt), updatedAt: iso(c.updatedAt) };
}

/** What a test message says. */
export function testMessage(name: string, now: number, statusPage: string | null): Outgoing {
  const at = new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z");
  const title = `TEST: healthd channel ${name}`;
  const message = `A test message from healthd at ${at}: if you read this, the channel ${name} works.`;
  return {
    event: {
      id: `healthd-test-${now}`, event: "test", server: "healthd", service: "test", serverName: "healthd", serviceName: "test", url: "", error: null,
      since: null, duration: null, incidentId: null, at, title, message, statusPage,
    },
    body: { title, message, priority: 3, tags: ["healthd", "test"] },
    topic: null,
  };
}

/** Send a channel its test message now (builtInChannel: the daemon's ntfy): 404, 409 or 502 when it cannot. The API's and the console's. */
export async function sendTest(ctx: Pick<ChannelContext, "store" | "channels" | "now" | "statusPage">, name: string): Promise<SendResult> {
  const doc = name === builtInChannel ? undefined : (await ctx.store.channels(name))[0]?.doc;
  if (name !== builtInChannel && !doc) throw new HttpError(404, `no channel named ${name}; GET /channels lists them`);
  try {
    return await ctx.channels.sendNow(name, doc, testMessage(name, ctx.now(), ctx.statusPage));
  } catch (error) {
    if (!(error instanceof Unusable)) throw error;
    if (error.why === "no topic") throw new HttpError(409, "the ntfy channel has no topic: start healthd with --ntfy-topic, or test a channel of your own");
    throw new HttpError(502, `cannot send to ${name}: ${error.message}`);
  }
}

export function channelRoutes(ctx: ChannelContext): Route[] {
  const { store } = ctx;
  const builtIn = () => ({
    name: builtInChannel, type: "ntfy", url: ctx.ntfy.url, topic: ctx.ntfy.topic(), ...(ctx.ntfy.token ? { token: "***" } : {}),
    events: null, builtIn: true, createdAt: null, updatedAt: null,
  });
  const nameOf = (raw: string) => {
    const parsed = channelName.safeParse(raw);
    if (!parsed.success) throw new HttpError(400, `channel name ${JSON.stringify(raw)} ${parsed.error.issues[0]!.message}`, [{ path: "/name", message: parsed.error.issues[0]!.message }]);
    return parsed.data;
  };
  const send = (name: string) => sendTest(ctx, name);
  return [
    {
      path: "/channels",
      methods: {
        GET: {
          ...admin,
          summary: "Every channel, the built-in ntfy one first; secrets shown as ***",
          operationId: "listChannels",
          responses: { 200: { description: "The channels", schema: channelListAnswer } },
          handle: async () => ({ status: 200, body: { channels: [builtIn(), ...(await store.channels()).map(channelJson)] } }),
        },
      },
    },
    {
      path: "/channels/:name",
      methods: {
        GET: {
          ...admin,
          summary: "One channel; secrets shown as ***",
          operationId: "getChannel",
          responses: { 200: { description: "The channel", schema: channelAnswer }, 404: { description: "No such channel" } },
          handle: async (req) => {
            if (req.params.name === builtInChannel) return { status: 200, body: builtIn() };
            const [stored] = await store.channels(nameOf(req.params.name!));
            if (!stored) throw new HttpError(404, `no channel named ${req.params.name}; GET /channels lists them`);
            return { status: 200, body: channelJson(stored) };
          },
        },
        PUT: {
          ...admin,
          summary: "Create or replace a channel (a secret sent back as *** keeps the stored one)",
          operationId: "putChannel",
          body: { schema: channelDocument, required: true },
          responses: {
            200: { description: "Replaced", schema: channelAnswer },
            201: { description: "Created", schema: channelAnswer },
            400: { description: "Invalid input; every problem is listed in `errors`" },
          },
          handle: async (req) => {
            const name = nameOf(req.params.name!);
            const doc: ChannelDocument = await validBody(req, channelDocument, "the channel", '{"type": "webhook", "url": "https://hooks.example.org/healthd"}');
            const { created } = await store.putChannel(name, doc, ctx.now()).catch((error: unknown) => {
              if (!(error instanceof SecretsMissing)) throw error;
              throw new HttpError(400, error.message, error.paths.map((path) => ({ path, message: "is *** (a secret as answers show it), but no stored secret is there to keep; write the secret itself" })));
            });
            const [stored] = await store.channels(name);
            return { status: created ? 201 : 200, body: channelJson(stored!), ...(created ? { headers: { location: `/channels/${name}` } } : {}) };
          },
        },
        DELETE: {
          ...admin,
          summary: "Delete a channel that no check or server names",
          operationId: "deleteChannel",
          responses: { 204: { description: "Deleted" }, 404: { description: "No such channel" }, 409: { description: "A check or a server names it" } },
          handle: async (req) => {
            const name = nameOf(req.params.name!);
            const gone = await store.deleteChannel(name);
            if (gone.namedBy.length > 0) {
              const users = gone.namedBy.slice(0, 10).join(", ") + (gone.namedBy.length > 10 ? `, and ${gone.namedBy.length - 10} more` : "");
              throw new HttpError(409, `${users} ${gone.namedBy.length === 1 ? "names" : "name"} the channel ${name}; remove it from their channels first`);
            }
            if (!gone.deleted) throw new HttpError(404, `no channel named ${name}; GET /channels lists them`);
            return { status: 204 };
          },
        },
      },
    },
    {
      path: "/channels/:name/test",
      methods: {
        POST: {
          ...admin,
          summary: "Send a test message to a channel now, and answer what the destination said",
          operationId: "testChannel",
          responses: {
            200: { description: "The destination took it", schema: channelTestAnswer },
            404: { description: "No such channel" },
            409: { description: "The ntfy channel has no topic" },
            502: { description: "The destination refused it or did not answer; `detail` says what it said" },
          },
          handle: async (req) => {
            const name = req.params.name === builtInChannel ? builtInChannel : nameOf(req.params.name!);
            const result = await send(name);
            if (!result.ok) throw new HttpError(502, `${name} did not take the test message: ${result.error}`);
            return { status: 200, body: { channel: name, ok: true, id: result.id } };
          },
        },
      },
    },
  ];
}
