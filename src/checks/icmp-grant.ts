/**
 * What an icmp check needs of the machine, said in one place: by the daemon at start (which way its icmp checks
 * run, and what to grant for the better one) and by a check that cannot run. Pure: the facts come in.
 */

/** The line that lets every group open ICMP datagram sockets (systemd sets it so by default on most distributions). */
export const pingGroupLine = 'sysctl -w net.ipv4.ping_group_range="0 2147483647" (and the same in /etc/sysctl.d/ to keep it)';

/** What to add when no way of sending echoes works: said by each check that fails for it, and at start. */
export const icmpHelp =
  `let healthd open an ICMP datagram socket (${pingGroupLine}), or install the system's ping (apt-get install iputils-ping) ` +
  "with CAP_NET_RAW for it (AmbientCapabilities=CAP_NET_RAW in healthd's unit, or setcap cap_net_raw+ep on ping)";

/** Why this process has no ICMP datagram socket, as icmp-socket.ts found when it tried to open one. */
export type SocketRefusal =
  /** socket(2) said EACCES or EPERM: net.ipv4.ping_group_range leaves out the process's groups. */
  | { readonly reason: "denied"; readonly range: string; readonly gid: number }
  /** socket(2) could not be called: koffi (the foreign-function library) did not load, as in the single executable. */
  | { readonly reason: "unloadable"; readonly detail: string }
  /** Any other errno (EAFNOSUPPORT: the family is off on this machine). */
  | { readonly reason: "refused"; readonly code: string };

export function refusalText(refusal: SocketRefusal): string {
  if (refusal.reason === "denied") return `net.ipv4.ping_group_range (${refusal.range}) leaves out healthd's group (${refusal.gid})`;
  if (refusal.reason === "unloadable") return `this build cannot open one itself (koffi did not load: ${refusal.detail})`;
  return `the system refused one (${refusal.code})`;
}

export interface StartLine {
  readonly level: "info" | "warn";
  readonly message: string;
  readonly fields: Readonly<Record<string, string>>;
}

/**
 * What the daemon says when it is first given icmp checks: they share one socket (null refusal), or they run
 * the system's ping, a process a check, and what to grant for the socket, or they cannot run at all
 * (`pingProblem`, what ping said) and what to grant for either.
 */
export function startLine(refusal: SocketRefusal | null, pingProblem: string | null): StartLine {
  if (refusal === null) return { level: "info", message: "ICMP checks send their echoes on one ICMP datagram socket per address family", fields: {} };
  const why = `no ICMP datagram socket: ${refusalText(refusal)}`;
  if (pingProblem !== null) return { level: "warn", message: "ICMP checks cannot run here; each will fail saying so", fields: { why, problem: pingProblem } };
  const grant =
    refusal.reason === "unloadable"
      ? "the npm package's healthd opens the socket where the system allows it"
      : `to send them on one socket instead, at a twentieth of the CPU a check: ${pingGroupLine}`;
  return { level: "warn", message: "ICMP checks run the system's ping, one process a check", fields: { why, grant } };
}
