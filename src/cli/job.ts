/**
 * What `healthd run` and `healthd ping` do once their command line is read, by commander (run.ts, ping.ts) or
 * by the light reader of crontab lines (fast.ts): the same code both ways. It loads nothing heavy (no commander,
 * no store, no undici), since every crontab line pays for what it loads.
 */
import { pingBodyLimit } from "../domain/ping.ts";
import { UsageError } from "../platform/usage.ts";
import { exitCodes } from "./exit.ts";
import { NotSent, parsePingUrl, pingTargetOf, sendPing, type Daemon, type PingSignal, type PingTarget } from "./pinger.ts";
import { parseTarget } from "./target.ts";
import { runWrapped } from "./wrapped.ts";

/** The flags run and ping share, after their environment variables. */
export interface PingFlags {
  readonly url: string;
  readonly token?: string;
  readonly pingKey?: string;
}

/**
 * `healthd run [TARGET] -- COMMAND`: `before` holds the operands before the first `--`, `command` what follows
 * it. Answers the command's exit code.
 */
export async function runJob(before: readonly string[], command: readonly string[], flags: PingFlags): Promise<number> {
  if (command.length === 0) throw new UsageError("give the command after --: healthd run https://HOST/ping/KEY -- COMMAND ARGS...");
  if (before.length > 1) throw new UsageError(`give one ping URL or SERVER/SERVICE before -- (got ${before.map((a) => JSON.stringify(a)).join(" ")})`);
  if (before.length === 0 && flags.pingKey === undefined) {
    throw new UsageError("name the heartbeat: healthd run https://HOST/ping/KEY -- COMMAND (its ping URL), SERVER/SERVICE with --token, or give its key with --ping-key (HEALTHD_PING_KEY)");
  }
  return reported(command, before[0], flags);
}

async function reported(command: readonly string[], target: string | undefined, flags: PingFlags): Promise<number> {
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
  const rid = runId();
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

/**
 * A UUID (version 4, as Healthchecks.io's clients send) that pairs this run's start with its exit. It only has to
 * differ from the ids of the heartbeat's other runs, not be unguessable: Math.random, not node:crypto, whose
 * loading was a tenth of what healthd itself spent on a run.
 */
export function runId(): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16));
  hex[12] = "4";
  hex[16] = "89ab"[Math.floor(Math.random() * 4)]!;
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function lookUp(daemon: Daemon, target: string): Promise<PingTarget> {
  const { serverId, serviceId } = parseTarget(target);
  if (serviceId === undefined) return Promise.reject(new UsageError(`name one service: SERVER/SERVICE (got ${JSON.stringify(target)})`));
  return pingTargetOf(daemon, serverId!, serviceId);
}

/** The flags of `healthd ping` beyond the shared ones. */
export interface PingOnceFlags extends PingFlags {
  readonly start?: boolean;
  readonly fail?: boolean;
  readonly log?: boolean;
  readonly exitCode?: number;
}

/**
 * `healthd ping [TARGET] [MESSAGE]`: one ping. Answers 0 when it was taken, 1 when the daemon could not be
 * reached or was busy, 2 for an unknown heartbeat or key.
 */
export async function pingOnce(first: string | undefined, second: string | undefined, flags: PingOnceFlags): Promise<number> {
  const signal = signalOf(flags);
  // With a key, the one operand is the message.
  const [target, message] = flags.pingKey === undefined ? [first, second] : [undefined, first];
  if (flags.pingKey !== undefined && second !== undefined) {
    throw new UsageError("with --ping-key (HEALTHD_PING_KEY), give no SERVER/SERVICE: healthd ping --ping-key KEY [MESSAGE]");
  }
  if (flags.pingKey === undefined && target === undefined) {
    throw new UsageError("name the heartbeat: healthd ping SERVER/SERVICE, or give its key with --ping-key (HEALTHD_PING_KEY)");
  }
  const daemon = { url: flags.url, token: flags.token };
  const body = message === "-" ? await (await import("node:stream/consumers")).text(process.stdin) : message;
  try {
    const to = flags.pingKey !== undefined ? { key: flags.pingKey } : await targetOf(daemon, target!);
    await sendPing(daemon, to, signal, { body: body === undefined ? undefined : Buffer.from(body).subarray(0, pingBodyLimit).toString("utf8") });
    return exitCodes.ok;
  } catch (error) {
    if (!(error instanceof NotSent)) throw error;
    process.stderr.write(`healthd: the ping was not sent: ${error.message}\n`);
    return error.final ? exitCodes.usage : exitCodes.checkFailed;
  }
}

export function parseExitCode(text: string): number {
  if (!/^[0-9]{1,3}$/.test(text) || Number(text) > 255) throw new UsageError(`--exit-code must be an integer from 0 to 255 (got ${JSON.stringify(text)})`);
  return Number(text);
}

function signalOf(flags: PingOnceFlags): PingSignal {
  const given = [flags.start && "--start", flags.fail && "--fail", flags.log && "--log", flags.exitCode !== undefined && "--exit-code"].filter(Boolean);
  if (given.length > 1) throw new UsageError(`give one of --start, --fail, --log and --exit-code (got ${given.join(" and ")})`);
  if (flags.start) return { signal: "start" };
  if (flags.fail) return { signal: "fail" };
  if (flags.log) return { signal: "log" };
  if (flags.exitCode !== undefined) return { signal: "exit", exitCode: flags.exitCode };
  return { signal: "success" };
}

function targetOf(daemon: Daemon, target: string): Promise<PingTarget> {
  const { serverId, serviceId } = parseTarget(target);
  if (serviceId === undefined) throw new UsageError(`name one service: SERVER/SERVICE (got ${JSON.stringify(target)})`);
  return pingTargetOf(daemon, serverId!, serviceId);
}
