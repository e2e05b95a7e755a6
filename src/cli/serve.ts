import { Command, Option } from "commander";
import { defaults, parsePort, parsePositiveInt } from "../config.ts";
import { startDaemon } from "../daemon.ts";
import { createLogger } from "../log.ts";
import { argument, dbOption, logOptions, type LogFlags } from "./options.ts";

interface ServeFlags extends LogFlags {
  readonly db: string;
  readonly host: string;
  readonly port: number;
  readonly maxInFlight: number;
}

export function serveCommand(): Command {
  const command = new Command("serve")
    .description("run the API and the scheduler until SIGINT or SIGTERM")
    .addOption(dbOption())
    .addOption(new Option("--host <address>", "address the API listens on").env("HEALTHD_HOST").default(defaults.host))
    .addOption(
      new Option("--port <number>", "port the API listens on (0: any free port)")
        .env("HEALTHD_PORT")
        .default(defaults.port)
        .argParser(argument(parsePort)),
    )
    .addOption(
      new Option("--max-in-flight <n>", "checks running at once, at most")
        .env("HEALTHD_MAX_IN_FLIGHT")
        .default(defaults.maxInFlight)
        .argParser(argument(parsePositiveInt("--max-in-flight", 100_000))),
    )
    .addHelpText(
      "after",
      `
Examples:
  healthd serve                              # ./healthd.db, http://127.0.0.1:8080
  healthd serve --db /var/lib/healthd/healthd.db --port 9000
  HEALTHD_PORT=9000 healthd serve            # every flag also reads HEALTHD_*`,
    )
    .action(async (flags: ServeFlags) => {
      const log = createLogger({ level: flags.logLevel, json: flags.logJson });
      const daemon = await startDaemon({
        db: flags.db,
        host: flags.host,
        port: flags.port,
        maxInFlight: flags.maxInFlight,
        log,
      });
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          log.info("stopping", { signal });
          resolve();
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
      await daemon.stop();
    });
  for (const option of logOptions()) command.addOption(option);
  return command;
}
