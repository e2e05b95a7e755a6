/**
 * Options shared by several subcommands, each with its environment variable.
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import { defaults, UsageError } from "../platform/config.ts";
import { levels, type Level } from "../platform/log.ts";
import { defaultDaemonUrl, parseBaseUrl, parsePingKey } from "./pinger.ts";

export const dbOption = () =>
  new Option("--db <path>", "the database: a SQLite file, or a postgres:// URL").env("HEALTHD_DB").default(defaults.db);

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

const yes = ["1", "true", "yes", "on"];
const no = ["0", "false", "no", "off"];

/** A boolean environment variable: 1/true/yes/on or 0/false/no/off in any case; empty means unset. */
export function parseBooleanEnv(name: string, text: string): boolean | undefined {
  const value = text.trim().toLowerCase();
  if (value === "") return undefined;
  if (yes.includes(value)) return true;
  if (no.includes(value)) return false;
  throw new UsageError(`${name} must be one of ${[...yes, ...no].join(", ")} (any case); got ${JSON.stringify(text)}`);
}

/**
 * Read the boolean flags of `command` from their environment variables by value. Commander's own `.env()`
 * turns a boolean flag on whenever its variable is set at all, so HEALTHD_ALLOW_NO_TOKEN=false meant true.
 * Any other option's empty variable is taken as unset.
 * Runs as a preAction hook, after commander has parsed; a flag given on the command line still wins.
 */
export function readBooleanEnv(command: Command): void {
  for (const option of command.options) {
    if (!option.envVar) continue;
    const key = option.attributeName();
    if (command.getOptionValueSource(key) !== "env") continue;
    // An empty variable (HEALTHD_DB= in an env file) is an unset one, for every option.
    if (!option.isBoolean()) {
      if (process.env[option.envVar] === "") command.setOptionValueWithSource(key, option.defaultValue, "default");
      continue;
    }
    const value = parseBooleanEnv(option.envVar, process.env[option.envVar] ?? "");
    command.setOptionValueWithSource(key, value ?? option.defaultValue, value === undefined ? "default" : "env");
  }
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

/** run and ping: where the daemon is, and how a heartbeat is named (their light parsers: pinger.ts, fast.ts). */
export const urlOption = () =>
  new Option("--url <url>", "the daemon's address").env("HEALTHD_URL").default(defaultDaemonUrl).argParser(parseBaseUrl);
export const tokenOption = () => new Option("--token <token>", "an API token that may ping (scope ping, write or admin): ping by name").env("HEALTHD_TOKEN");
export const pingKeyOption = () =>
  new Option("--ping-key <uuid>", "the heartbeat's ping key (no lookup through the API)").env("HEALTHD_PING_KEY").argParser(parsePingKey);
