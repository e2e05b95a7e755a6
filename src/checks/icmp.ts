/**
 * An ICMP check, through the system's `ping` (iputils). Node has no ICMP socket, and a raw one needs root;
 * iputils' ping opens an ICMP datagram socket where `net.ipv4.ping_group_range` lets the user, and otherwise
 * has CAP_NET_RAW as a file capability (Debian and Ubuntu install it so). One process a check, its echoes 200
 * ms apart, its whole run bounded by `-w` and by the check's own deadline: about 16 ms of CPU a check (ping's
 * own 10, the spawn 6; http's is ~0.5), the price of needing no root and no native module. What `ping`
 * printed is read by a pure function (readPing).
 */
import { spawn } from "node:child_process";
import { isIP } from "node:net";
import { systemClock } from "../platform/clock.ts";
import type { IcmpCheck, Outcome } from "../domain/model.ts";
import { CheckFailure, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { onStop } from "./stopping.ts";

export type IcmpRequest = Pick<IcmpCheck, "host" | "count" | "maxLossPercent" | "maxLatencyMs" | "timeoutMs">;

/** What one run of ping said: its echoes, and their round trips when any came back. */
export interface PingReport {
  readonly sent: number;
  readonly received: number;
  readonly rtt: { readonly min: number; readonly avg: number; readonly max: number } | null;
}

/** What to add when ping cannot run at all, said by the check and at the daemon's start. */
export const icmpHelp =
  "ICMP checks run the system's ping (iputils): install it (apt-get install iputils-ping) and let it open its socket " +
  "(sysctl net.ipv4.ping_group_range=\"0 2147483647\", or AmbientCapabilities=CAP_NET_RAW in the unit)";

export async function runIcmpCheck(check: IcmpRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const fail = (kind: CheckFailure["kind"], message: string, answers?: string[]): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: kind, error: printable(message), checkedAt,
    ...(answers ? { answers } : {}),
  });
  const ran = await runPing(check, options.signal);
  if ("problem" in ran) return fail(ran.kind, ran.problem);
  const report = readPing(ran.stdout);
  if (report === null) return fail("internal", `ping printed no summary (${ran.stderr.trim() || `exit code ${ran.code}`}); ${icmpHelp}`);
  const loss = report.sent === 0 ? 100 : round(((report.sent - report.received) * 100) / report.sent);
  const answers = [`sent ${report.sent}, received ${report.received}, loss ${loss}%`, ...(report.rtt ? [`rtt min/avg/max ${report.rtt.min}/${report.rtt.avg}/${report.rtt.max} ms`] : [])];
  const latencyMs = report.rtt ? report.rtt.avg : round(clock.monotonic() - started);
  if (report.received === 0) return { ...fail("timeout", `no echo from ${check.host} came back (${report.sent} sent)`, answers), latencyMs };
  if (loss > check.maxLossPercent) {
    return { ...fail("loss", `${loss}% of the echoes to ${check.host} were lost, more than the ${check.maxLossPercent}% allowed`, answers), latencyMs };
  }
  if (check.maxLatencyMs !== null && latencyMs > check.maxLatencyMs) {
    return { ...fail("latency", `the echoes took ${latencyMs} ms on average, more than the ${check.maxLatencyMs} ms allowed`, answers), latencyMs };
  }
  return { ok: true, status: null, latencyMs, matched: 0, errorKind: null, error: null, checkedAt, answers };
}

type Ran = { stdout: string; stderr: string; code: number | null } | { kind: CheckFailure["kind"]; problem: string };

/**
 * Run ping once: -w bounds its run to the check's timeout in whole seconds (at least one), and the process is
 * killed a second after the timeout should ping itself overrun. Echoes that do not fit in -w are not sent.
 */
function runPing(check: IcmpRequest, signal: AbortSignal | undefined): Promise<Ran> {
  const deadline = Math.max(1, Math.floor(check.timeoutMs / 1000));
  const family = isIP(check.host) === 6 ? ["-6"] : isIP(check.host) === 4 ? ["-4"] : [];
  const args = [...family, "-n", "-q", "-c", String(check.count), "-i", "0.2", "-w", String(deadline), "-W", String(deadline), check.host];
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    const child = spawn("ping", args, { stdio: ["ignore", "pipe", "pipe"], timeout: check.timeoutMs + 1000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" } });
    const forget = onStop(signal, () => child.kill());
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    child.on("error", (error: NodeJS.ErrnoException) => {
      forget();
      resolve({ kind: "internal", problem: error.code === "ENOENT" ? `ping is not installed; ${icmpHelp}` : `ping could not start (${error.message}); ${icmpHelp}` });
    });
    child.on("close", (code) => {
      forget();
      const said = stderr.trim().split("\n").at(-1) ?? "";
      if (/Name or service not known|Temporary failure in name resolution|No address associated/i.test(said)) resolve({ kind: "dns", problem: `could not resolve ${check.host} (${said.replace(/^ping: /, "")})` });
      else if (/Operation not permitted|Permission denied/i.test(said) && readPing(stdout) === null) resolve({ kind: "internal", problem: `ping may not open its socket (${said.replace(/^ping: /, "")}); ${icmpHelp}` });
      else if (/unreachable/i.test(said) && readPing(stdout) === null) resolve({ kind: "connect", problem: `${check.host} is unreachable (${said.replace(/^ping: /, "")})` });
      else resolve({ stdout, stderr, code });
    });
  });
}

/**
 * The summary ping prints last: "3 packets transmitted, 2 received" and "rtt min/avg/max/mdev = …" (iputils),
 * or "… packets received" and "round-trip min/avg/max = …" (BusyBox's, without mdev).
 */
export function readPing(stdout: string): PingReport | null {
  const counts = /(\d+) packets transmitted, (\d+) (?:packets )?received/.exec(stdout);
  if (!counts) return null;
  const rtt = /= ([\d.]+)\/([\d.]+)\/([\d.]+)(?:\/[\d.]+)? ms/.exec(stdout);
  return {
    sent: Number(counts[1]),
    received: Number(counts[2]),
    rtt: rtt ? { min: Number(rtt[1]), avg: Number(rtt[2]), max: Number(rtt[3]) } : null,
  };
}

/** Why ICMP checks cannot run on this machine (ping missing, or its socket refused), or null when they can. */
export async function icmpProblem(): Promise<string | null> {
  const ran = await runPing({ host: "127.0.0.1", count: 1, maxLossPercent: 100, maxLatencyMs: null, timeoutMs: 2000 }, undefined);
  if ("problem" in ran) return ran.problem;
  return readPing(ran.stdout) === null ? `ping printed no summary (${ran.stderr.trim() || `exit code ${ran.code}`}); ${icmpHelp}` : null;
}
