/**
 * `healthd ping SERVER/SERVICE [--start|--fail|--log|--exit-code N] [MESSAGE]`: one ping from a script, as
 * `curl https://<healthd>/ping/<key>` would send it, with the key looked up by name (or given).
 */
import { text } from "node:stream/consumers";
import { Command, Option } from "commander";
import { UsageError } from "../platform/config.ts";
import { pingBodyLimit } from "../http/ping.ts";
import { exitCodes } from "./exit.ts";
import { argument } from "./options.ts";
import { pingTargetOf, NotSent, pingKeyOption, sendPing, tokenOption, urlOption, type PingSignal, type PingTarget } from "./pinger.ts";
import { parseTarget } from "./target.ts";

interface Flags {
  readonly url: string;
  readonly token?: string;
  readonly pingKey?: string;
  readonly start?: boolean;
  readonly fail?: boolean;
  readonly log?: boolean;
  readonly exitCode?: number;
}

export function pingCommand(): Command {
  return new Command("ping")
    .description("send one ping to a heartbeat: success, or --start, --fail, --log, --exit-code N")
    .argument("[target]", "SERVER/SERVICE of the heartbeat (left out with --ping-key)")
    .argument("[message]", "the text kept with the ping (- reads it from stdin; its first 10,000 bytes are kept)")
    .addOption(urlOption())
    .addOption(tokenOption())
    .addOption(pingKeyOption())
    .option("--start", "a run started")
    .option("--fail", "the job failed")
    .option("--log", "only keep the message; the state does not change")
    .addOption(new Option("--exit-code <n>", "the job's exit code: 0 success, 1 to 255 failure").argParser(argument(parseExitCode)))
    .addHelpText(
      "after",
      `
Exit codes: 0 the ping was taken, 1 the daemon could not be reached (after 3 tries) or was busy,
2 bad usage, an unknown heartbeat or key.`,
    )
    .action(async (first: string | undefined, second: string | undefined, flags: Flags) => {
      const signal = signalOf(flags);
      // With a key, the one operand is the message.
      const [target, message] = flags.pingKey === undefined ? [first, second] : [undefined, first];
      if (flags.pingKey !== undefined && second !== undefined) {
        throw new UsageError("with --ping-key (HEALTHD_PING_KEY), give no SERVER/SERVICE: healthd ping --ping-key KEY [MESSAGE]");
      }
      if (flags.pingKey === undefined && target === undefined) {
        throw new UsageError("name the heartbeat: healthd ping SERVER/SERVICE, or give its key with --ping-key (HEALTHD_PING_KEY)");
      }
      const daemon = { url: flags.url, token: flags.token };
      const body = message === "-" ? await text(process.stdin) : message;
      try {
        const to = flags.pingKey !== undefined ? { key: flags.pingKey } : await targetOf(daemon, target!);
        await sendPing(daemon, to, signal, { body: body === undefined ? undefined : Buffer.from(body).subarray(0, pingBodyLimit).toString("utf8") });
      } catch (error) {
        if (!(error instanceof NotSent)) throw error;
        process.stderr.write(`healthd: the ping was not sent: ${error.message}\n`);
        process.exitCode = error.final ? exitCodes.usage : exitCodes.checkFailed;
      }
    });
}

function parseExitCode(text: string): number {
  if (!/^[0-9]{1,3}$/.test(text) || Number(text) > 255) throw new UsageError(`--exit-code must be an integer from 0 to 255 (got ${JSON.stringify(text)})`);
  return Number(text);
}

function signalOf(flags: Flags): PingSignal {
  const given = [flags.start && "--start", flags.fail && "--fail", flags.log && "--log", flags.exitCode !== undefined && "--exit-code"].filter(Boolean);
  if (given.length > 1) throw new UsageError(`give one of --start, --fail, --log and --exit-code (got ${given.join(" and ")})`);
  if (flags.start) return { signal: "start" };
  if (flags.fail) return { signal: "fail" };
  if (flags.log) return { signal: "log" };
  if (flags.exitCode !== undefined) return { signal: "exit", exitCode: flags.exitCode };
  return { signal: "success" };
}

function targetOf(daemon: { url: string; token?: string }, target: string): Promise<PingTarget> {
  const { serverId, serviceId } = parseTarget(target);
  if (serviceId === undefined) throw new UsageError(`name one service: SERVER/SERVICE (got ${JSON.stringify(target)})`);
  return pingTargetOf(daemon, serverId!, serviceId);
}
