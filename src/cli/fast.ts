/**
 * `healthd run` and `healthd ping` stand on crontab lines, where every start is paid for again: they start with
 * the least a process needs. src/main.ts asks this module first; it reads their usual command lines without
 * commander or the rest of healthd (whose loading cost a second of CPU per job) and runs the same code as the
 * full commands (job.ts). Anything it does not know for certain (--help, --debug, a flag it does not read, a
 * value that does not parse, an empty variable) goes to the full program, which answers as it always has.
 */
import { failed } from "./exit.ts";
import { parseExitCode, pingOnce, runJob, type PingFlags } from "./job.ts";
import { defaultDaemonUrl, parseBaseUrl, parsePingKey } from "./pinger.ts";

/** The exit code of a run or ping read here; undefined when the full program is to read the command line. */
export async function fast(argv: readonly string[]): Promise<number | undefined> {
  const name = argv[2];
  if ((name !== "run" && name !== "ping") || (process.env.HEALTHD_DEBUG ?? "") !== "") return undefined;
  const line = read(argv.slice(3), name === "run" ? runFlags : pingFlags);
  const shared = line && sharedFlags(line.options);
  if (!line || !shared) return undefined;
  try {
    if (name === "run") return line.rest === undefined ? undefined : await runJob(line.operands, line.rest, shared);
    if (line.rest !== undefined || line.operands.length > 2) return undefined;
    const given = line.options.get("--exit-code");
    const exitCode = typeof given === "string" ? orUndefined(() => parseExitCode(given)) : undefined;
    if (given !== undefined && exitCode === undefined) return undefined;
    const flags = {
      ...shared,
      ...(line.options.has("--start") ? { start: true } : {}),
      ...(line.options.has("--fail") ? { fail: true } : {}),
      ...(line.options.has("--log") ? { log: true } : {}),
      ...(exitCode === undefined ? {} : { exitCode }),
    };
    return await pingOnce(line.operands[0], line.operands[1], flags);
  } catch (error) {
    // The full program asks HEALTHD_DEBUG and --debug; neither is set on this path.
    return failed(error, () => false);
  }
}

interface Spec {
  /** Flags that take a value, as `--flag VALUE` or `--flag=VALUE`. */
  readonly values: readonly string[];
  readonly switches: readonly string[];
}

const runFlags: Spec = { values: ["--url", "--token", "--ping-key"], switches: [] };
const pingFlags: Spec = { values: ["--url", "--token", "--ping-key", "--exit-code"], switches: ["--start", "--fail", "--log"] };

interface Line {
  readonly options: ReadonlyMap<string, string | true>;
  /** The operands before the first `--`. */
  readonly operands: readonly string[];
  /** What follows the first `--`, if there is one. */
  readonly rest: readonly string[] | undefined;
}

/** The arguments after the subcommand, read as commander reads them; undefined for anything out of the ordinary. */
function read(args: readonly string[], spec: Spec): Line | undefined {
  const options = new Map<string, string | true>();
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return { options, operands, rest: args.slice(i + 1) };
    // Commander's test for an option: "-" alone is an operand (ping's "read the message from stdin").
    if (arg.length < 2 || !arg.startsWith("-")) {
      operands.push(arg);
      continue;
    }
    const equals = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = equals > 0 ? arg.slice(0, equals) : arg;
    if (options.has(flag)) return undefined;
    if (spec.values.includes(flag)) {
      const value = equals > 0 ? arg.slice(equals + 1) : args[++i];
      if (value === undefined || value.startsWith("-")) return undefined;
      options.set(flag, value);
    } else if (equals < 0 && spec.switches.includes(flag)) {
      options.set(flag, true);
    } else {
      return undefined;
    }
  }
  return { options, operands, rest: undefined };
}

/** --url, --token and --ping-key after their variables and defaults, checked as the full commands check them. */
function sharedFlags(options: ReadonlyMap<string, string | true>): PingFlags | undefined {
  const given = (flag: string, variable: string): string | undefined | null => {
    const value = options.get(flag);
    if (typeof value === "string") return value;
    // An empty variable is an unset one to the full program (options.ts readBooleanEnv): left to it.
    return process.env[variable] === "" ? null : process.env[variable];
  };
  const url = given("--url", "HEALTHD_URL");
  const token = given("--token", "HEALTHD_TOKEN");
  const pingKey = given("--ping-key", "HEALTHD_PING_KEY");
  if (url === null || token === null || pingKey === null) return undefined;
  const parsedUrl = orUndefined(() => parseBaseUrl(url ?? defaultDaemonUrl));
  const parsedKey = pingKey === undefined ? undefined : orUndefined(() => parsePingKey(pingKey));
  if (parsedUrl === undefined || (pingKey !== undefined && parsedKey === undefined)) return undefined;
  return { url: parsedUrl, ...(token === undefined ? {} : { token }), ...(parsedKey === undefined ? {} : { pingKey: parsedKey }) };
}

/** The value, or undefined when `parse` refuses it (the full program then says why). */
function orUndefined<T>(parse: () => T): T | undefined {
  try {
    return parse();
  } catch {
    return undefined;
  }
}
