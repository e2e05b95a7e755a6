/**
 * `healthd channel`: list the channels in the database, and send a test message to one from here. A test
 * fills the channel's `${NAME}`s from this command's environment: run it with the daemon's (systemd:
 * `systemd-run --pipe -p EnvironmentFile=/etc/healthd/healthd.env healthd channel test NAME`) to test what
 * the daemon would send.
 */
import { Command, Option } from "commander";
import { defaults, parseHttpUrl, UsageError } from "../platform/config.ts";
import { channelJson, testMessage } from "../http/channels.ts";
import { ChannelDirectory, Unusable } from "../notify/channels.ts";
import { systemClock } from "../platform/clock.ts";
import { openForReading, withStore } from "./database.ts";
import { argument, dbOption } from "./options.ts";
import { table } from "./output.ts";

interface Flags {
  readonly db: string;
  readonly json?: boolean;
}

export function channelCommand(): Command {
  const channel = new Command("channel").description("list the channels notifications go to, and test one");
  channel
    .command("list")
    .description("list the channels (secrets shown as ***)")
    .addOption(dbOption())
    .option("--json", "print JSON")
    .action(async (flags: Flags) => {
      const channels = (await withStore(openForReading(flags.db), (store) => store.channels())).map(channelJson);
      if (flags.json) return void process.stdout.write(JSON.stringify({ channels }) + "\n");
      const rows = channels.map((c) => [c.name, c.type, c.events === null ? "all" : c.events.join(","), c.updatedAt]);
      process.stdout.write(table([["NAME", "TYPE", "EVENTS", "UPDATED"], ["ntfy", "ntfy", "all", "built in: serve's --ntfy-* flags"], ...rows]));
    });
  channel
    .command("test")
    .description("send a test message to a channel now, and say what it answered")
    .argument("<name>", "the channel (healthd channel list), or ntfy with --ntfy-url and --ntfy-topic")
    .addOption(dbOption())
    .addOption(new Option("--ntfy-url <url>", "for the ntfy channel: its server").env("HEALTHD_NTFY_URL").default(defaults.ntfyUrl).argParser(argument(parseHttpUrl("--ntfy-url"))))
    .addOption(new Option("--ntfy-topic <topic>", "for the ntfy channel: the topic").env("HEALTHD_NTFY_TOPIC"))
    .addOption(new Option("--ntfy-token <token>", "for the ntfy channel: an access token").env("HEALTHD_NTFY_TOKEN"))
    .addHelpText(
      "after",
      `
A channel's \${NAME}s are read from this command's environment. Exit 0 when the destination took the
message, 1 when it refused it or did not answer.

Examples:
  healthd channel test slack-ops
  healthd channel test ntfy --ntfy-topic ops-alerts`,
    )
    .action(async (name: string, flags: Flags & { ntfyUrl: string; ntfyTopic?: string; ntfyToken?: string }) => {
      const now = systemClock.now();
      const directory = new ChannelDirectory({ ntfy: { url: flags.ntfyUrl, token: flags.ntfyToken }, defaultTopic: () => flags.ntfyTopic ?? null, env: process.env, now: () => now });
      try {
        if (name === "ntfy" && flags.ntfyTopic === undefined) {
          throw new UsageError("testing the ntfy channel needs its topic: give --ntfy-topic (HEALTHD_NTFY_TOPIC), as serve has");
        }
        const doc = name === "ntfy" ? undefined : (await withStore(openForReading(flags.db), (store) => store.channels(name)))[0]?.doc;
        if (name !== "ntfy" && !doc) throw new UsageError(`no channel named ${name}; healthd channel list shows them`);
        const result = await directory.sendNow(name, doc, testMessage(name, now, null)).catch((error: unknown) => {
          throw error instanceof Unusable ? new UsageError(`cannot send to ${name}: ${error.message}`) : error;
        });
        if (!result.ok) {
          process.stderr.write(`healthd: ${name} did not take the test message: ${result.error}\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(`${name} took the test message (${result.id})\n`);
      } finally {
        await directory.close();
      }
    });
  return channel;
}
