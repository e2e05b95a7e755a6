/**
 * The icmp check's other way, for a machine that gives healthd no ICMP datagram socket (icmp-socket.ts): the
 * system's `ping` (iputils), which opens one where `net.ipv4.ping_group_range` lets its user and otherwise has
 * CAP_NET_RAW as a file capability (Debian and Ubuntu install it so). One process a check, its echoes 200 ms
 * apart, its whole run bounded by `-w` and by the check's own deadline: about 16 ms of CPU a check (ping's own
 * 10, the spawn 6). What `ping` printed is read by a pure function (readPing).
 */
import { spawn } from "node:child_process";
import { isIP } from "node:net";
import type { CheckFailure } from "./failure.ts";
import type { IcmpRequest, PingReport } from "./icmp-echo.ts";
import { icmpHelp } from "./icmp-grant.ts";
import { onStop } from "./stopping.ts";

export type Pinged = { readonly report: PingReport } | { readonly kind: CheckFailure["kind"]; readonly problem: string };

/** The check's echoes through one run of ping: what it reported, or why it could not say. */
export async function pingProcess(check: IcmpRequest, signal: AbortSignal | undefined): Promise<Pinged> {
  const ran = await runPing(check, signal);
  if ("problem" in ran) return ran;
  const report = readPing(ran.stdout);
  return report ? { report } : { kind: "internal", problem: `ping printed no summary (${ran.stderr.trim() || `exit code ${ran.code}`}); ${icmpHelp}` };
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

/** Why ping cannot run on this machine (missing, or its socket refused), or null when it can: one echo to 127.0.0.1. */
export async function pingProblem(): Promise<string | null> {
  const pinged = await pingProcess({ host: "127.0.0.1", count: 1, maxLossPercent: 100, maxLatencyMs: null, timeoutMs: 2000 }, undefined);
  return "problem" in pinged ? pinged.problem : null;
}
