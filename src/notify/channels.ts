/**
 * The senders of the channels this node delivers to: the built-in `ntfy` channel from the daemon's --ntfy-*
 * flags, and the stored ones with their `${NAME}`s filled from this node's environment. A stored channel's
 * sender is made again when the channel changes (its updatedAt), and its old one closed.
 */
import { channelDocument, type ChannelDocument } from "../domain/schema/channel.ts";
import { validate } from "../domain/validate.ts";
import type { StoredChannel } from "../store/store.ts";
import { builtInChannel } from "../domain/schema/channel.ts";
import type { NtfyOptions } from "./ntfy.ts";
import type { Outgoing, Sender, SendResult } from "./outgoing.ts";
import { fillSecrets } from "../domain/schema/secrets.ts";
import { ntfySender, senderFor } from "./senders.ts";

export interface ChannelDirectoryOptions {
  readonly ntfy: NtfyOptions;
  /** The topic of the ntfy channel (the cluster's default topic); null: none. */
  readonly defaultTopic: () => string | null;
  readonly env: NodeJS.ProcessEnv;
  readonly now: () => number;
  readonly timeoutMs?: number;
}

/** A channel's sender, or why there is none (no such channel; a `${NAME}` this node's environment lacks). */
export type Found = { readonly sender: Sender } | { readonly error: string; readonly unknown: boolean };

/** Why a channel cannot be sent to now: the ntfy channel has no topic, or its `${NAME}`s do not make a valid channel. */
export class Unusable extends Error {
  constructor(
    message: string,
    readonly why: "no topic" | "variables",
  ) {
    super(message);
  }
}

export class ChannelDirectory {
  readonly #options: ChannelDirectoryOptions;
  readonly #builtIn: Sender;
  #stored = new Map<string, StoredChannel>();
  readonly #senders = new Map<string, { readonly updatedAt: number; readonly found: Found }>();

  constructor(options: ChannelDirectoryOptions) {
    this.#options = options;
    this.#builtIn = ntfySender({ ...options.ntfy, timeoutMs: options.timeoutMs ?? options.ntfy.timeoutMs }, null);
  }

  /** What the store holds now (read once per delivery pass). */
  update(stored: readonly StoredChannel[]): void {
    this.#stored = new Map(stored.map((c) => [c.name, c]));
    for (const [name, kept] of this.#senders) {
      if (this.#stored.get(name)?.updatedAt === kept.updatedAt) continue;
      if ("sender" in kept.found) void kept.found.sender.close();
      this.#senders.delete(name);
    }
  }

  /** Whether the last update (or the flags) had a channel of this name. */
  knows(name: string): boolean {
    return name === builtInChannel || this.#stored.has(name);
  }

  find(name: string): Found {
    if (name === builtInChannel) return { sender: this.#builtIn };
    const channel = this.#stored.get(name);
    if (!channel) return { error: `no channel named ${name}: create it (PUT /channels/${name}, or channels: in a servers file)`, unknown: true };
    const kept = this.#senders.get(name);
    if (kept) return kept.found;
    const found = this.#make(channel.doc);
    this.#senders.set(name, { updatedAt: channel.updatedAt, found });
    return found;
  }

  /**
   * Send `out` now, outside the outbox (a test message): to the built-in ntfy channel's topic, or to the channel
   * `doc` describes (a sender made for this one send). Throws Unusable when it cannot be sent at all.
   */
  async sendNow(name: string, doc: ChannelDocument | undefined, out: Outgoing): Promise<SendResult> {
    if (name === builtInChannel || doc === undefined) {
      const topic = this.topicOf(null);
      if (topic === null) throw new Unusable("the ntfy channel has no topic", "no topic");
      return this.#builtIn.send({ ...out, topic });
    }
    const found = this.#make(doc);
    if ("error" in found) throw new Unusable(found.error, "variables");
    try {
      return await found.sender.send(out);
    } finally {
      await found.sender.close();
    }
  }

  /** The built-in ntfy channel's topic for a delivery: the service's notifyTopic, else the cluster's. */
  topicOf(notifyTopic: string | null): string | null {
    return notifyTopic ?? this.#options.defaultTopic();
  }

  #make(doc: ChannelDocument): Found {
    let filled: ChannelDocument;
    try {
      filled = fillSecrets(doc, this.#options.env);
    } catch (error) {
      return { error: (error as Error).message, unknown: false };
    }
    // What the variables held is checked as a written value would have been.
    const checked = validate(channelDocument, filled);
    if (!checked.ok) {
      const problems = checked.errors.map((e) => `${e.path} ${e.message}`).join("; ");
      return { error: `with its \${NAME}s filled from this node's environment, the channel is invalid: ${problems}`, unknown: false };
    }
    return { sender: senderFor(checked.value, { now: this.#options.now, timeoutMs: this.#options.timeoutMs }) };
  }

  async close(): Promise<void> {
    await this.#builtIn.close();
    await Promise.all([...this.#senders.values()].map((kept) => ("sender" in kept.found ? kept.found.sender.close() : undefined)));
    this.#senders.clear();
  }
}
