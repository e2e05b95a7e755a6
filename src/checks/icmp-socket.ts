/**
 * The icmp check's echoes on ONE ICMP datagram socket per address family, shared by every icmp check of the
 * process: Linux lets an unprivileged process open one (socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)) where
 * `net.ipv4.ping_group_range` includes its group, and the kernel writes the identifier and the checksum and
 * hands back only the replies to this socket, ICMP header first. Node has no call for socket(2): koffi calls
 * libc's, loaded on the first icmp check so that no other command pays for it, and node:dgram then drives the
 * descriptor like a UDP socket. Replies find their check by sequence number (icmp-echo.ts's Sequences) and
 * the echo's random token; anything else a target sends is dropped at constant work.
 */
import { randomFillSync } from "node:crypto";
import { createSocket, type Socket } from "node:dgram";
import { readFileSync } from "node:fs";
import { constants } from "node:os";
import type { Clock } from "../platform/clock.ts";
import { echoRequest, readEchoReply, Sequences, type Family } from "./icmp-echo.ts";
import type { SocketRefusal } from "./icmp-grant.ts";
import { onStop } from "./stopping.ts";

/** An echo in flight: its token, and what to tell its check when the reply comes. */
interface Flying {
  /** Where the echo went: only a reply from there answers it. */
  readonly address: string;
  readonly token: readonly [number, number];
  readonly answered: () => void;
}

/** One family's shared socket. */
export class EchoSocket {
  readonly #family: Family;
  readonly #socket: Socket;
  readonly #flying = new Sequences<Flying>();

  constructor(family: Family, fd: number) {
    this.#family = family;
    this.#socket = createSocket(family === 4 ? "udp4" : "udp6");
    this.#socket.on("message", (datagram, from) => this.#take(datagram, from.address));
    // A failed read (an ICMP error queued for the socket) concerns no one check; sends report their own.
    this.#socket.on("error", () => {});
    this.#socket.bind({ fd }, () => {
      // Every icmp check shares this one buffer: room for a flood from one target (dropped at a constant cost
      // each) before it crowds out the others' replies. The kernel caps it at net.core.rmem_max.
      this.#socket.setRecvBufferSize(1 << 20);
    });
    // The checks waiting on it keep the process alive by their deadlines, not the socket.
    this.#socket.unref();
  }

  /**
   * Send an echo to `address` (of this family): its sequence number, to `forget` when its check is over
   * unanswered, or null when 65,536 are in flight. `answered` is told once, when its reply comes; `failed`
   * when the system would not send it (no route: ENETUNREACH, EHOSTUNREACH).
   */
  send(address: string, answered: () => void, failed: (error: NodeJS.ErrnoException) => void): number | null {
    const token = nextToken();
    const seq = this.#flying.add({ address, token, answered });
    if (seq === null) return null;
    this.#socket.send(echoRequest(this.#family, seq, token), 1, address, (error) => error && failed(error));
    return seq;
  }

  forget(seq: number): void {
    this.#flying.delete(seq);
  }

  /** Echoes sent and neither answered nor forgotten: none once every check has ended. */
  get inFlight(): number {
    return this.#flying.size;
  }

  #take(datagram: Buffer, from: string): void {
    const reply = readEchoReply(this.#family, datagram);
    if (reply === null) return;
    const flying = this.#flying.get(reply.seq);
    if (flying === undefined || flying.token[0] !== reply.token[0] || flying.token[1] !== reply.token[1]) return;
    if (from.replace(/%.*$/, "") !== flying.address.replace(/%.*$/, "")) return; // a zone (fe80::1%eth0) names no other host
    this.#flying.delete(reply.seq);
    flying.answered();
  }
}

/** Tokens from a pool of random bytes, refilled a few hundred echoes at a time: unguessable to another sender. */
const pool = Buffer.alloc(4096);
let used = pool.length;
function nextToken(): [number, number] {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const token: [number, number] = [pool.readUInt32BE(used), pool.readUInt32BE(used + 4)];
  used += 8;
  return token;
}

/** What the echoes of one check came to: how many were sent and each reply's round trip (ms), or why none could go. */
export type Echoed = { readonly sent: number; readonly rtts: readonly number[] } | { readonly unsent: string } | { readonly full: true };

/**
 * `count` echoes to `address`, 200 ms apart, until each is answered or `ms` have passed (or the daemon stops):
 * the sequence numbers it held are free again when it ends.
 */
export function sendEchoes(socket: EchoSocket, address: string, count: number, ms: number, clock: Clock, signal: AbortSignal | undefined): Promise<Echoed> {
  return new Promise((resolve) => {
    const rtts: number[] = [];
    const held = new Set<number>();
    let sent = 0;
    let ended = false;
    let next: unknown;
    let forget = () => {};
    const end = (result: Echoed) => {
      if (ended) return;
      ended = true;
      clock.clearTimeout(deadline);
      clock.clearTimeout(next);
      forget();
      for (const seq of held) socket.forget(seq);
      resolve(result);
    };
    const deadline = clock.setTimeout(() => end({ sent, rtts }), ms);
    const sendOne = () => {
      if (ended) return;
      const sentAt = clock.monotonic();
      const seq = socket.send(
        address,
        () => {
          held.delete(seq!);
          rtts.push(clock.monotonic() - sentAt);
          if (rtts.length === count) end({ sent, rtts });
        },
        (error) => end({ unsent: error.code ?? error.message }),
      );
      if (seq === null) return end({ full: true });
      held.add(seq);
      sent += 1;
      if (sent < count) next = clock.setTimeout(sendOne, 200);
    };
    forget = onStop(signal, () => end({ sent, rtts }));
    sendOne();
  });
}

/** The shared socket of each family, or why this process cannot have one: opened once, on first use. */
const sockets = new Map<Family, Promise<EchoSocket | SocketRefusal>>();

export function echoSocket(family: Family): Promise<EchoSocket | SocketRefusal> {
  let opened = sockets.get(family);
  if (opened === undefined) sockets.set(family, (opened = open(family)));
  return opened;
}

const SOCK_DGRAM = 2;
const SOCK_NONBLOCK = 0o4000;
// Not inherited by the processes healthd starts (ping on the other way, a channel's command).
const SOCK_CLOEXEC = 0o2000000;

async function open(family: Family): Promise<EchoSocket | SocketRefusal> {
  let libc: Libc;
  try {
    libc = await (loaded ??= loadLibc());
  } catch (error) {
    return { reason: "unloadable", detail: error instanceof Error ? error.message : String(error) };
  }
  const fd = family === 4 ? libc.socket(2, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 1) : libc.socket(10, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 58);
  if (fd >= 0) {
    try {
      return new EchoSocket(family, fd);
    } catch (error) {
      // node:dgram would not take it (libuv did not see a datagram socket): give it back, and use ping.
      libc.close(fd);
      return { reason: "refused", code: (error as NodeJS.ErrnoException).code ?? String(error) };
    }
  }
  const errno = libc.errno();
  if (errno === constants.errno.EACCES || errno === constants.errno.EPERM) return { reason: "denied", range: groupRange(), gid: process.getgid?.() ?? -1 };
  return { reason: "refused", code: Object.entries(constants.errno).find(([, n]) => n === errno)?.[0] ?? `errno ${errno}` };
}

interface Libc {
  readonly socket: (domain: number, type: number, protocol: number) => number;
  readonly errno: () => number;
  readonly close: (fd: number) => number;
}
let loaded: Promise<Libc> | undefined;

async function loadLibc(): Promise<Libc> {
  const koffi = (await import("koffi")).default;
  const libc = koffi.load("libc.so.6");
  const socket = libc.func("int socket(int, int, int)");
  const close = libc.func("int close(int)");
  return { socket: (domain, type, protocol) => socket(domain, type, protocol) as number, errno: () => koffi.errno(), close: (fd) => close(fd) as number };
}

function groupRange(): string {
  try {
    return readFileSync("/proc/sys/net/ipv4/ping_group_range", "utf8").trim().replace(/\s+/, " ");
  } catch {
    return "unreadable";
  }
}
