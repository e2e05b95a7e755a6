/**
 * An ICMP check: `count` echoes to a host, 200 ms apart within one deadline, judged by how many came back and
 * how fast (icmp-echo.ts). They go on one ICMP datagram socket per address family that every icmp check of
 * the process shares (icmp-socket.ts): about half an http check's CPU, where the system's ping, a process a
 * check, cost some twenty times more (docs/benchmarks.md). Where the system gives healthd no such socket, they run ping (icmp-process.ts), and the daemon says at start
 * which way they run and what to grant (icmp-grant.ts).
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { systemClock } from "../platform/clock.ts";
import type { Outcome } from "../domain/model.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { judgeEchoes, reportOf, type Family, type IcmpRequest, type PingReport } from "./icmp-echo.ts";
import { startLine, type StartLine } from "./icmp-grant.ts";
import { pingProblem, pingProcess } from "./icmp-process.ts";
import { echoSocket, EchoSocket, sendEchoes } from "./icmp-socket.ts";

export type { IcmpRequest } from "./icmp-echo.ts";
export { icmpHelp } from "./icmp-grant.ts";
export { readPing } from "./icmp-process.ts";

export interface IcmpOptions extends ControllerOptions {
  /**
   * Which way the echoes go: "socket" (the shared ICMP socket; the check fails when there is none), "process"
   * (the system's ping). Default: the socket where the system gives one, else ping.
   */
  readonly way?: "socket" | "process";
}

export async function runIcmpCheck(check: IcmpRequest, options: IcmpOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const fail = (kind: CheckFailure["kind"], message: string): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: kind, error: printable(message), checkedAt,
  });
  const judge = (report: PingReport) => judgeEchoes(check, report, clock.monotonic() - started, checkedAt);
  const family: Family = isIP(check.host) === 6 ? 6 : 4;
  /** The other way, where this process has no socket of the family needed. */
  const byPing = async (): Promise<Outcome> => {
    if (options.way === "socket") return fail("internal", "this process has no ICMP datagram socket; see the daemon's first line about ICMP checks");
    const pinged = await pingProcess(check, options.signal);
    return "report" in pinged ? judge(pinged.report) : fail(pinged.kind, pinged.problem);
  };
  const socket = options.way === "process" ? null : await echoSocket(family);
  if (!(socket instanceof EchoSocket)) return byPing();
  // The name is looked up within the check's deadline, as ping would (getaddrinfo: /etc/hosts, then DNS).
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  let address = check.host;
  let shared = socket;
  try {
    if (isIP(check.host) === 0) {
      const found = await deadline.until(lookup(check.host));
      address = found.address;
      if (found.family === 6) {
        const v6 = await echoSocket(6);
        // This machine's want, not the target's fault: ping, as for an IPv6 address written out.
        if (!(v6 instanceof EchoSocket)) return byPing();
        shared = v6;
      }
    }
  } catch (error) {
    if (error === timedOut) return fail("timeout", `looking up ${check.host} took longer than the ${check.timeoutMs} ms allowed`);
    const failure = classify(error, check.host, check.host, "looking it up");
    return fail(failure.kind, failure.message);
  } finally {
    deadline.clear();
  }
  const left = check.timeoutMs - (clock.monotonic() - started);
  const echoed = await sendEchoes(shared, address, check.count, Math.max(0, left), clock, options.signal);
  if ("unsent" in echoed) {
    if (echoed.unsent === "ENETUNREACH" || echoed.unsent === "EHOSTUNREACH") return fail("connect", `${check.host} is unreachable (${echoed.unsent})`);
    return fail("internal", `the system would not send an echo to ${check.host} (${echoed.unsent})`);
  }
  if ("full" in echoed) return fail("internal", "65,536 echoes are in flight on this process's ICMP socket; give icmp checks longer intervals");
  return judge(reportOf(echoed.sent, echoed.rtts));
}

/**
 * What the daemon says when it is first given icmp checks: which way they run and, where it is ping, what to
 * grant. Opens the IPv4 socket (and loads koffi) on the way; tries ping only when there is none.
 */
export async function icmpStart(): Promise<StartLine> {
  const socket = await echoSocket(4);
  if (socket instanceof EchoSocket) return startLine(null, null);
  return startLine(socket, await pingProblem());
}
