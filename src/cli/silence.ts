/**
 * `healthd silence`: add, list and end silences in the database, like `apply` (a running daemon reads them
 * with every result it stores). With a command it wraps a backup or a deploy: the silence lasts while the
 * command runs (at most --for), ends when it exits, and healthd exits with the command's code.
 */
import { Command, Option } from "commander";
import { UsageError } from "../platform/config.ts";
import { maxSilenceSeconds } from "../http/alerting.ts";
import type { AlertingStore, Silence } from "../store/store.ts";
import { openForWriting, withStore } from "./database.ts";
import { table } from "./output.ts";
import { argument, dbOption } from "./options.ts";
import { parseTarget } from "./target.ts";
import { systemClock } from "../platform/clock.ts";
import { silenceJson } from "../http/views.ts";
import { runWrapped } from "./wrapped.ts";

const units = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** "90s", "30m", "2h", "1d", or several at once ("1h30m"), in seconds: at least a second, at most a year. */
export function parseDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+)([smhd])/g)];
  const seconds = parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit as keyof typeof units], 0);
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text || seconds < 1 || seconds > maxSilenceSeconds) {
    throw new UsageError(`--for takes a duration from 1s to 366d such as 90s, 30m, 2h or 1h30m (got ${JSON.stringify(text)})`);
  }
  return seconds;
}

interface Flags {
  readonly db: string;
  readonly for?: number;
  readonly reason?: string;
  readonly list?: boolean;
  readonly end?: string;
  readonly json?: boolean;
}

export function silenceCommand(): Command {
  return new Command("silence")
    .description("silence a server or one service for a while: checks run and are stored, nothing is published")
    .argument("[target]", "SERVER or SERVER/SERVICE")
    .argument("[command...]", "run this (after --) and keep the silence only while it runs")
    .addOption(dbOption())
    .addOption(new Option("--for <duration>", "how long: 90s, 30m, 2h, 1d (with a command: at most this long)").argParser(argument(parseDuration)))
    .option("--reason <text>", "why, shown in GET /silences")
    .option("--list", "list the silences that have not ended")
    .option("--end <id>", "end a silence now")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      `
A running daemon on the same database follows at once. A notification that falls in a silence is not
published; a service still down when the silence ends publishes its DOWN then.

Examples:
  healthd silence web-01 --for 2h --reason "kernel upgrade"
  healthd silence web-01/db --for 1h --reason backup -- pg_dump -f /backup/db.sql app
  healthd silence --list
  healthd silence --end 7`,
    )
    .action(async (target: string | undefined, command: string[], flags: Flags) => {
      const modes = [flags.list, flags.end !== undefined, target !== undefined].filter(Boolean).length;
      if (modes !== 1) throw new UsageError("give SERVER[/SERVICE] --for DURATION, or --list, or --end ID (one of them)");
      if (flags.list) return list(flags);
      if (flags.end !== undefined) return end(flags.end, flags);
      if (flags.for === undefined) throw new UsageError("--for is required: how long the silence lasts, such as 30m or 2h");
      const { serverId, serviceId } = parseTarget(target);
      const silence = await withStore(openForWriting(flags.db), (store) => add(store, serverId!, serviceId ?? null, flags.for!, flags.reason ?? null));
      if (command.length === 0) {
        const shown = silenceJson(silence);
        process.stdout.write(flags.json ? JSON.stringify(shown) + "\n" : `silenced ${target} until ${shown.endsAt} (id ${shown.id})\n`);
        return;
      }
      process.exitCode = await runWhileSilenced(command, silence, flags.db);
    });
}

async function add(store: AlertingStore, serverId: string, serviceId: string | null, seconds: number, reason: string | null): Promise<Silence> {
  const now = systemClock.now();
  const silence = await store.addSilence({ serverId, serviceId, startsAt: now, endsAt: now + seconds * 1000, reason }, now);
  if (silence === "no server") throw new UsageError(`no server ${serverId}; healthd export lists the servers`);
  if (silence === "no service") throw new UsageError(`server ${serverId} has no service ${serviceId}; healthd export lists its services`);
  return silence;
}

async function list(flags: Flags): Promise<void> {
  const silences = await withStore(openForWriting(flags.db), (store) => store.silences(systemClock.now()));
  if (flags.json) {
    process.stdout.write(JSON.stringify({ silences: silences.map(silenceJson) }) + "\n");
    return;
  }
  if (silences.length === 0) {
    process.stdout.write("no silences\n");
    return;
  }
  const rows = silences.map(silenceJson).map((s) => [s.id, s.service ? `${s.server}/${s.service}` : s.server, s.startsAt, s.endsAt, s.reason ?? ""]);
  process.stdout.write(table([["ID", "TARGET", "STARTS", "ENDS", "REASON"], ...rows]));
}

async function end(id: string, flags: Flags): Promise<void> {
  const ended = /^[0-9]{1,15}$/.test(id) && (await withStore(openForWriting(flags.db), (store) => store.endSilence(Number(id), systemClock.now())));
  if (!ended) throw new UsageError(`no silence ${JSON.stringify(id)} that has not ended; healthd silence --list shows them`);
  if (!flags.json) process.stdout.write(`ended silence ${id}\n`);
}

/**
 * Run `command` with the terminal and environment of healthd; end the silence when it exits. Answers its
 * exit code, as `runWrapped` does.
 */
async function runWhileSilenced(command: readonly string[], silence: Silence, db: string): Promise<number> {
  const { code, problem } = await runWrapped(command);
  if (problem) process.stderr.write(`healthd: ${problem}\n`);
  try {
    await withStore(openForWriting(db), (store) => store.endSilence(silence.id, systemClock.now()));
  } catch (error) {
    process.stderr.write(`healthd: cannot end silence ${silence.id} (${(error as Error).message}); it ends by itself at ${silenceJson(silence).endsAt}\n`);
  }
  return code;
}
