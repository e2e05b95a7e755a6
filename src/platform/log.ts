/**
 * One line per event on stderr: `time level message key=value ...` for people (journald stamps its own lines,
 * so under it the time is left out), or one JSON object per line.
 * The core never calls console; it is handed a Logger, scoped with what it is working on.
 */
import { systemClock, type Clock } from "./clock.ts";

export const levels = ["debug", "info", "warn", "error", "silent"] as const;
export type Level = (typeof levels)[number];
type Fields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: Fields): void;
  info(message: string, fields?: Fields): void;
  warn(message: string, fields?: Fields): void;
  error(message: string, fields?: Fields): void;
  /** A logger whose every line carries `fields` too. */
  child(fields: Fields): Logger;
}

export interface LoggerOptions {
  /** Lines below this level are dropped. Default "info". */
  readonly level?: Level;
  /** One JSON object per line instead of text. Default false. */
  readonly json?: boolean;
  /** Where lines go. Default process.stderr. */
  readonly write?: (line: string) => void;
  /** Start text lines with the time. Default: unless journald reads them (JOURNAL_STREAM is set). */
  readonly timestamps?: boolean;
  /** What the time is. Default the system's. */
  readonly clock?: Clock;
}

export function createLogger(options: LoggerOptions = {}, scope: Fields = {}): Logger {
  const threshold = levels.indexOf(options.level ?? "info");
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const timestamps = options.timestamps ?? !process.env.JOURNAL_STREAM;
  const clock = options.clock ?? systemClock;
  const log = (level: Level, message: string, fields: Fields = {}) => {
    if (levels.indexOf(level) < threshold) return;
    const all = { ...scope, ...fields };
    if (options.json) {
      write(JSON.stringify({ time: new Date(clock.now()).toISOString(), level, message, ...serialize(all) }) + "\n");
    } else {
      const pairs = Object.entries(serialize(all)).map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`);
      write([...(timestamps ? [new Date(clock.now()).toISOString()] : []), level.padEnd(5), message, ...pairs].join(" ") + "\n");
    }
  };
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
    child: (fields) => createLogger(options, { ...scope, ...fields }),
  };
}

/** A logger that drops everything, for tests and library use. */
export const silentLogger: Logger = createLogger({ level: "silent" });

function serialize(fields: Fields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = value instanceof Error ? value.stack ?? value.message : value;
  }
  return out;
}
