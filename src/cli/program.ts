/**
 * The `healthd` command line. Each subcommand lives in its own file: flags become options, one core call,
 * then output. Exit codes: 0 ok, 1 a check failed, 2 bad usage or configuration, 3 an internal error.
 */
import { Command, CommanderError } from "commander";
import { UsageError } from "../platform/config.ts";
import { version } from "../platform/version.ts";
import { applyCommand } from "./apply.ts";
import { checkCommand } from "./check.ts";
import { copyCommand } from "./copy.ts";
import { commandEnded, databaseDefaulted } from "./database.ts";
import { exportCommand } from "./export.ts";
import { importCommand } from "./import.ts";
import { migrateCommand } from "./migrate.ts";
import { pingCommand } from "./ping.ts";
import { runCommand } from "./run.ts";
import { serveCommand } from "./serve.ts";
import { silenceCommand } from "./silence.ts";
import { ackCommand } from "./ack.ts";
import { announceCommand } from "./announce.ts";
import { reportCommand } from "./report.ts";
import { tailCommand } from "./tail.ts";
import { tokenCommand } from "./token.ts";
import { channelCommand } from "./channel.ts";

import { exitCodes, failed } from "./exit.ts";
import { parseBooleanEnv, readBooleanEnv } from "./options.ts";

export function program(): Command {
  const root = new Command("healthd")
    .description("self-hosted website health-check daemon")
    .version(version)
    // healthd's own flags (-V) stand before the subcommand; after it, `--header -V` is a header, not a request
    // for the version (commander otherwise reads its program's flags anywhere on the line).
    .enablePositionalOptions()
    .showHelpAfterError("(add --help for usage)")
    .addCommand(serveCommand())
    .addCommand(checkCommand())
    .addCommand(applyCommand())
    .addCommand(silenceCommand())
    .addCommand(ackCommand())
    .addCommand(announceCommand())
    .addCommand(reportCommand())
    .addCommand(exportCommand())
    .addCommand(importCommand())
    .addCommand(tailCommand())
    .addCommand(migrateCommand())
    .addCommand(copyCommand())
    .addCommand(runCommand())
    .addCommand(pingCommand())
    .addCommand(tokenCommand())
    .addCommand(channelCommand())
    .hook("preAction", (_root, action) => {
      readBooleanEnv(action);
      databaseDefaulted(action.options.some((o) => o.long === "--db") && action.getOptionValueSource("db") === "default");
    });
  const everywhere = (command: Command) => {
    // Before the subcommand or after it, as each command's own flag: a flag's value "--debug" stays a value.
    command.option("--debug", "show the stack trace of an internal error (also HEALTHD_DEBUG=1)");
    // Commander exits 1 on usage errors; healthd reserves 1 for failed checks.
    command.exitOverride((error: CommanderError) => {
      throw error;
    });
    // Every message healthd prints about itself starts the same way.
    command.configureOutput({ outputError: (text, write) => write(`healthd: ${text.replace(/^error: /, "")}`) });
    command.commands.forEach(everywhere);
  };
  everywhere(root);
  return root;
}

/** Run the command line; answers the exit code instead of exiting, so tests and main decide. */
export async function run(argv: readonly string[]): Promise<number> {
  const cli = program();
  try {
    await cli.parseAsync(argv);
    commandEnded({ refused: false });
    // A subcommand that has a verdict (check) leaves it in process.exitCode.
    return Number(process.exitCode ?? exitCodes.ok);
  } catch (error) {
    commandEnded({ refused: error instanceof UsageError });
    if (error instanceof CommanderError) return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    const asked = (command: Command): boolean => command.opts().debug === true || command.commands.some(asked);
    return failed(error, () => asked(cli) || parseBooleanEnv("HEALTHD_DEBUG", process.env.HEALTHD_DEBUG ?? "") === true);
  }
}
