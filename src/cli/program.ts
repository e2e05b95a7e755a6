/**
 * The `healthd` command line. Each subcommand lives in its own file: flags become options, one core call,
 * then output. Exit codes: 0 ok, 1 a check failed, 2 bad usage or configuration, 3 an internal error.
 */
import { Command, CommanderError } from "commander";
import { UsageError } from "../config.ts";
import { version } from "../version.ts";
import { applyCommand } from "./apply.ts";
import { checkCommand } from "./check.ts";
import { copyCommand } from "./copy.ts";
import { exportCommand } from "./export.ts";
import { migrateCommand } from "./migrate.ts";
import { serveCommand } from "./serve.ts";
import { tailCommand } from "./tail.ts";

import { exitCodes } from "./exit.ts";
import { readBooleanEnv } from "./options.ts";

export function program(): Command {
  const root = new Command("healthd")
    .description("self-hosted website health-check daemon")
    .version(version)
    .showHelpAfterError("(add --help for usage)")
    .addCommand(serveCommand())
    .addCommand(checkCommand())
    .addCommand(applyCommand())
    .addCommand(exportCommand())
    .addCommand(tailCommand())
    .addCommand(migrateCommand())
    .addCommand(copyCommand())
    .hook("preAction", (_root, action) => readBooleanEnv(action));
  // Commander exits 1 on usage errors; healthd reserves 1 for failed checks.
  const exitOverride = (command: Command) => {
    command.exitOverride((error: CommanderError) => {
      throw error;
    });
    command.commands.forEach(exitOverride);
  };
  exitOverride(root);
  return root;
}

/** Run the command line; answers the exit code instead of exiting, so tests and main decide. */
export async function run(argv: readonly string[]): Promise<number> {
  try {
    await program().parseAsync([...argv]);
    // A subcommand that has a verdict (check) leaves it in process.exitCode.
    return Number(process.exitCode ?? exitCodes.ok);
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    if (error instanceof UsageError) {
      process.stderr.write(`healthd: ${error.message}\n`);
      return exitCodes.usage;
    }
    process.stderr.write(`healthd: internal error: ${(error as Error).stack ?? String(error)}\n`);
    return exitCodes.internal;
  }
}
