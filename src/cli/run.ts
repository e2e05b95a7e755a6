/**
 * `healthd run https://host/ping/KEY -- COMMAND` (or `SERVER/SERVICE` with a token): a job reports to its
 * heartbeat as it runs. A start ping, the command with its output passed through, then its exit code with the
 * last 10,000 bytes of its output; healthd exits with the command's code. A daemon that cannot be reached never
 * fails the job: the pings are retried, then a warning is printed and the command's code stands. The ping URL
 * needs no API token, so a crontab keeps reporting when the API starts asking for one (the first token).
 */
import { randomUUID } from "node:crypto";
import { Command } from "commander";
import { UsageError } from "../platform/config.ts";
import { pingBodyLimit } from "../http/ping.ts";
import { parsePingUrl, pingKeyOption, pingTargetOf, sendPing, tokenOption, urlOption, type Daemon, type PingTarget } from "./pinger.ts";
import { parseTarget } from "./target.ts";
import { runWrapped } from "./wrapped.ts";

interface Flags {
  readonly url: string;
  readonly token?: string;
  readonly pingKey?: string;
}

export function runCommand(): Command {
  return new Command("run")
    .description("run a command and report it to its heartbeat: a start ping, then its exit code and the end of its output")
    .argument("[target]", "the heartbeat's ping URL (https://HOST/ping/KEY: no token needed), or its SERVER/SERVICE with --token (not needed with --ping-key)")
    .argument("[command...]", "the command, after --")
    .addOption(urlOption())
    .addOption(tokenOption())
    .addOption(pingKeyOption())
    .addHelpText(
      "after",
      `
Examples:
  healthd run https://healthd.example.org/ping/<uuid> -- /usr/local/bin/backup --full
  HEALTHD_PING_KEY=<uuid> healthd run -- pg_dump -f /var/backups/app.sql app
  HEALTHD_TOKEN=<ping token> healthd run db1/backup -- /usr/local/bin/backup --full

The ping URL is the heartbeat's own (GET /services/SERVER/SERVICE shows its pingKey): it needs no API token,
so the job keeps reporting whatever tokens the API comes to ask for. By SERVER/SERVICE, a token that may ping
(--token, HEALTHD_TOKEN) is needed once the API has tokens; without one the key is looked up through the API.

healthd exits with the command's code (128+n when signal n ended it, 127 when it is not found). SIGINT and
SIGTERM are passed on to it. When the daemon cannot be reached, the pings are tried 3 times and a warning is
printed; the job is never failed for it.`,
    )
    .action(async (_target: string | undefined, _rest: string[], flags: Flags, self: Command) => {
      const { target, command } = split(self, flags);
      process.exitCode = await reported(command, target, flags);
    });
}

/**
 * The heartbeat and the command: what follows the first `--` on the command line is the command, whatever it
 * looks like (commander cannot tell an operand before `--` from one after).
 */
function split(self: Command, flags: Flags): { target: string | undefined; command: string[] } {
  let root = self;
  while (root.parent) root = root.parent;
  // The command line as given to parse(): commander keeps it on the root command, untyped.
  const raw = (root as Command & { rawArgs: string[] }).rawArgs;
  const dash = raw.indexOf("--");
  const command = dash < 0 ? [] : raw.slice(dash + 1);
  if (command.length === 0) throw new UsageError("give the command after --: healthd run https://HOST/ping/KEY -- COMMAND ARGS...");
  const before = self.args.slice(0, self.args.length - command.length);
  if (before.length > 1) throw new UsageError(`give one ping URL or SERVER/SERVICE before -- (got ${before.map((a) => JSON.stringify(a)).join(" ")})`);
  if (before.length === 0 && flags.pingKey === undefined) {
    throw new UsageError("name the heartbeat: healthd run https://HOST/ping/KEY -- COMMAND (its ping URL), SERVER/SERVICE with --token, or give its key with --ping-key (HEALTHD_PING_KEY)");
  }
  return { target: before[0], command };
}

async function reported(command: readonly string[], target: string | undefined, flags: Flags): Promise<number> {
  // A ping URL names the daemon and the key at once: no token, no lookup (parsed before the command starts, so a mistyped one is exit 2).
  const pingUrl = target === undefined ? undefined : parsePingUrl(target);
  const daemon: Daemon = pingUrl ? { url: pingUrl.url } : { url: flags.url, token: flags.token };
  const warn = (what: string) => (error: Error) => {
    // The API asks for a token (since its first one): the ping URL, which needs none, is the way out.
    const hint = / answered 401\b/.test(error.message) ? "; give the heartbeat's ping URL instead (healthd run https://HOST/ping/KEY -- ...), which needs no token" : "";
    process.stderr.write(`healthd: warning: ${what}: ${error.message}${hint}; the job goes on\n`);
    return null;
  };
  // The lookup and the start ping go while the command starts: a daemon that is slow to answer never delays the job.
  const key = pingUrl?.key ?? flags.pingKey;
  const to = key !== undefined ? Promise.resolve({ key }) : lookUp(daemon, target!).catch(warn(`cannot find the ping key of ${target}`));
  const rid = randomUUID();
  const started = to.then((t) => (t === null ? null : sendPing(daemon, t, { signal: "start" }, { rid }).catch(warn("the start ping was not sent"))));
  const finished = await runWrapped(command, pingBodyLimit);
  if (finished.problem) process.stderr.write(`healthd: ${finished.problem}\n`);
  await started;
  const pingTarget = await to;
  if (pingTarget) {
    const output = finished.problem ? Buffer.concat([finished.tail, Buffer.from(`healthd: ${finished.problem}\n`)]) : finished.tail;
    const body = output.length === 0 ? undefined : output.subarray(Math.max(0, output.length - pingBodyLimit)).toString("utf8");
    await sendPing(daemon, pingTarget, { signal: "exit", exitCode: Math.min(finished.code, 255) }, { body, rid }).catch(
      warn(`the exit code ping (${finished.code}) was not sent`),
    );
  }
  return finished.code;
}

function lookUp(daemon: Daemon, target: string): Promise<PingTarget> {
  const { serverId, serviceId } = parseTarget(target);
  if (serviceId === undefined) return Promise.reject(new UsageError(`name one service: SERVER/SERVICE (got ${JSON.stringify(target)})`));
  return pingTargetOf(daemon, serverId!, serviceId);
}
