/**
 * `healthd run https://host/ping/KEY -- COMMAND` (or `SERVER/SERVICE` with a token): a job reports to its
 * heartbeat as it runs. A start ping, the command with its output passed through, then its exit code with the
 * last 10,000 bytes of its output; healthd exits with the command's code. A daemon that cannot be reached never
 * fails the job: the pings are retried, then a warning is printed and the command's code stands. The ping URL
 * needs no API token, so a crontab keeps reporting when the API starts asking for one (the first token).
 */
import { Command } from "commander";
import { runJob, type PingFlags } from "./job.ts";
import { pingKeyOption, tokenOption, urlOption } from "./options.ts";

export function runCommand(): Command {
  return new Command("run")
    .description("run a command and report it to its heartbeat: a start ping, then its exit code and the end of its output")
    .argument("[target]", "the heartbeat's ping URL (https://HOST/ping/KEY, or its slug URL https://HOST/ping/SERVER-PING-KEY/SLUG: no token needed), or its SERVER/SERVICE with --token (not needed with --ping-key)")
    .argument("[command...]", "the command, after --")
    .addOption(urlOption())
    .addOption(tokenOption())
    .addOption(pingKeyOption())
    .addHelpText(
      "after",
      `
Examples:
  healthd run https://healthd.example.org/ping/<uuid> -- /usr/local/bin/backup --full
  healthd run https://healthd.example.org/ping/<server's pingKey>/backup -- /usr/local/bin/backup --full
  HEALTHD_PING_KEY=<uuid> healthd run -- pg_dump -f /var/backups/app.sql app
  HEALTHD_TOKEN=<ping token> healthd run db1/backup -- /usr/local/bin/backup --full

The ping URL is the heartbeat's own (GET /services/SERVER/SERVICE shows its pingKey): it needs no API token,
so the job keeps reporting whatever tokens the API comes to ask for. By SERVER/SERVICE, a token that may ping
(--token, HEALTHD_TOKEN) is needed once the API has tokens; without one the key is looked up through the API.

healthd exits with the command's code (128+n when signal n ended it, 127 when it is not found). SIGINT and
SIGTERM are passed on to it. When the daemon cannot be reached, the pings are tried 3 times and a warning is
printed; the job is never failed for it.`,
    )
    .action(async (_target: string | undefined, _rest: string[], flags: PingFlags, self: Command) => {
      const { before, command } = split(self);
      process.exitCode = await runJob(before, command, flags);
    });
}

/**
 * The operands before the first `--` and the command after it, whatever it looks like (commander cannot tell
 * an operand before `--` from one after).
 */
function split(self: Command): { before: string[]; command: string[] } {
  let root = self;
  while (root.parent) root = root.parent;
  // The command line as given to parse(): commander keeps it on the root command, untyped.
  const raw = (root as Command & { rawArgs: string[] }).rawArgs;
  const dash = raw.indexOf("--");
  const command = dash < 0 ? [] : raw.slice(dash + 1);
  return { before: self.args.slice(0, self.args.length - command.length), command };
}
