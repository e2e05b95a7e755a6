/**
 * `healthd ping SERVER/SERVICE [--start|--fail|--log|--exit-code N] [MESSAGE]`: one ping from a script, as
 * `curl https://<healthd>/ping/<key>` would send it, with the key looked up by name (or given).
 */
import { Command, Option } from "commander";
import { parseExitCode, pingOnce, type PingOnceFlags } from "./job.ts";
import { argument, pingKeyOption, tokenOption, urlOption } from "./options.ts";

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
    .action(async (first: string | undefined, second: string | undefined, flags: PingOnceFlags) => {
      process.exitCode = await pingOnce(first, second, flags);
    });
}
