/**
 * Options shared by several subcommands, each with its environment variable.
 */
import { InvalidArgumentError, Option } from "commander";
import { defaults, UsageError } from "../config.ts";
import { levels, type Level } from "../log.ts";

export const dbOption = () =>
  new Option("--db <path>", "SQLite database file").env("HEALTHD_DB").default(defaults.db);

export const logOptions = () => [
  new Option("--log-level <level>", "least important log lines shown")
    .choices(levels)
    .env("HEALTHD_LOG_LEVEL")
    .default(defaults.logLevel),
  new Option("--log-json", "log one JSON object per line").env("HEALTHD_LOG_JSON").default(defaults.logJson),
];

export interface LogFlags {
  readonly logLevel: Level;
  readonly logJson: boolean;
}

/** Adapt a parser that throws UsageError to commander, which then prints usage and exits 2. */
export function argument<T>(parse: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return parse(text);
    } catch (error) {
      if (error instanceof UsageError) throw new InvalidArgumentError(error.message);
      throw error;
    }
  };
}

/** The SERVER or SERVER/SERVICE argument of check and tail. */
export function parseTarget(target: string | undefined): { serverId?: string; serviceId?: string } {
  if (target === undefined) return {};
  const [serverId, serviceId, extra] = target.split("/");
  if (extra !== undefined || !serverId || serviceId === "") {
    throw new UsageError(`the target is SERVER or SERVER/SERVICE (got ${JSON.stringify(target)})`);
  }
  return serviceId === undefined ? { serverId } : { serverId, serviceId };
}
