/**
 * A TCP check: connect (over TLS when asked), write `send` if any, read a banner while an alternative waits for
 * one, and judge. One deadline, `timeoutMs`, covers it all. What it judges is pure (evaluateTcp).
 */
import type { Socket } from "node:net";
import { StringDecoder } from "node:string_decoder";
import type { TLSSocket } from "node:tls";
import { systemClock } from "../platform/clock.ts";
import type { ErrorKind, Outcome, TcpCheck } from "../domain/model.ts";
import { certExpiry, connect } from "./connect.ts";
import { cannotRun, certCondition, firstHolding, latencyCondition, quote, type Condition, type Verdict } from "./expect.ts";
import type { ControllerOptions } from "./http.ts";
import { classify, printable, round } from "./failure.ts";
import { compilePattern } from "../domain/pattern.ts";
import { cheapOnly, judged, type Matches } from "./matching.ts";
import { onStop } from "./stopping.ts";

export type TcpRequest = Pick<TcpCheck, "host" | "port" | "tls" | "verifyTls" | "send" | "expect" | "timeoutMs">;

/** The most of a banner read, and kept in an error. */
export const bannerBytes = 4096;

/** What a TCP exchange showed, as the evaluator needs it. */
export interface TcpObservation {
  /** What the server sent within the deadline (up to 4 KiB), as text. */
  readonly banner: string;
  /** Connect (and handshake) time, plus the wait for the banner when an alternative expects one. */
  readonly latencyMs: number;
  readonly certValidTo: number | null;
  readonly checkedAt: number;
  /** Whether the deadline cut the banner short. */
  readonly timedOut: boolean;
}

export async function runTcpCheck(check: TcpRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  const started = clock.monotonic();
  const where = `${check.host.includes(":") ? `[${check.host}]` : check.host}:${check.port}`;
  const banner = check.expect.some((a) => a.banner !== undefined) ? new BannerReader() : undefined;
  let socket: Socket | undefined;
  let stage = "connecting";
  let timer: unknown;
  let forget = () => {};
  const fail = (kind: ErrorKind, message: string, shortage?: string): Outcome => ({
    ok: false, status: null, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: kind, error: printable(message), checkedAt,
    ...(shortage ? { shortage } : {}),
  });
  try {
    const ended = new Promise<"timeout">((resolve) => {
      const stop = () => resolve("timeout");
      timer = clock.setTimeout(stop, check.timeoutMs);
      forget = onStop(options.signal, stop);
    });
    const opened = new Promise<Socket>((resolve, reject) => {
      const s = (socket = connect(check, () => banner?.take ?? drop));
      banner?.watch(s);
      s.once(check.tls ? "secureConnect" : "connect", () => resolve(s));
      s.once("error", reject);
    });
    opened.catch(() => {}); // when the deadline wins, a late failure to connect has nobody to tell
    const first = await Promise.race([opened, ended]);
    if (first === "timeout") return fail("timeout", `no connection to ${where} within ${check.timeoutMs} ms (timed out ${stage})`);
    const connectedMs = clock.monotonic() - started;
    const certValidTo = check.tls ? certExpiry(first as TLSSocket) : null;
    if (check.send !== null) first.write(unescape(check.send));
    let read = { text: "", timedOut: false };
    if (banner) {
      stage = "reading the banner";
      // While reading, only the matches cheap enough to run at once can end the wait; a costly one waits for
      // the whole banner (4 KiB, the server's close or the deadline) and is judged below.
      read = await banner.until((text) => check.expect.some((a) => a.banner !== undefined && bannerHolds(a.banner, text, cheapOnly)), ended);
    }
    const latencyMs = round(banner ? clock.monotonic() - started : connectedMs);
    const seen = { banner: read.text, latencyMs, certValidTo, checkedAt, timedOut: read.timedOut };
    const verdict = await judged((matches) => evaluateTcp(check.expect, seen, matches));
    const cert = certValidTo === null ? {} : { certExpiresAt: certValidTo };
    return verdict.ok
      ? { ok: true, status: null, latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, ...cert }
      : { ...fail(verdict.errorKind, verdict.error), latencyMs, ...cert };
  } catch (error) {
    const failure = classify(error, check.host, where, stage);
    return fail(failure.kind, failure.message, failure.shortage);
  } finally {
    clock.clearTimeout(timer);
    forget();
    socket?.destroy();
  }
}

const drop = (_view: Buffer) => {};

/**
 * What a server sends, from the moment its connection opens (a greeting may come with the TLS handshake, before
 * the check waits for it), decoded as it comes (a character split between two reads is decoded whole), up to
 * 4 KiB.
 */
class BannerReader {
  #text = "";
  /** The server closed, or 4 KiB came: nothing more will be read. */
  #over = false;
  readonly #utf8 = new StringDecoder("utf8");
  #changed = () => {};

  /** Takes a read: a view of the shared buffer, decoded at once. */
  readonly take = (view: Buffer): void => {
    if (this.#over) return;
    this.#text = (this.#text + this.#utf8.write(view)).slice(0, bannerBytes);
    this.#over = this.#text.length >= bannerBytes;
    this.#changed();
  };

  /** The banner is what came before the connection ends. */
  watch(socket: Socket): void {
    const over = () => {
      this.#over = true;
      this.#changed();
    };
    socket.once("end", over);
    socket.once("close", over);
    socket.on("error", over);
  }

  /** What came once `holds` it, the server closed or 4 KiB came; else what came by the deadline. */
  until(holds: (text: string) => boolean, ended: Promise<"timeout">): Promise<{ text: string; timedOut: boolean }> {
    return new Promise((resolve) => {
      this.#changed = () => {
        if (this.#over || holds(this.#text)) resolve({ text: this.#text, timedOut: false });
      };
      this.#changed();
      void ended.then(() => resolve({ text: this.#text, timedOut: true }));
    });
  }
}

type Banner = NonNullable<TcpRequest["expect"][number]["banner"]>;

/** Whether the banner holds; a pattern that cannot run never does (the verdict says why). */
function bannerHolds(banner: Banner, text: string, matches: Matches): boolean {
  if (banner.contains !== undefined) return text.includes(banner.contains);
  const pattern = compilePattern(banner.matches!);
  return pattern.ok && matches.test(pattern, text);
}

/** Which alternative held, or why none did: pure. No alternatives: connecting was enough. */
export function evaluateTcp(expect: TcpRequest["expect"], seen: TcpObservation, matches: Matches): Verdict {
  if (expect.length === 0) return { ok: true, matched: 0 };
  return firstHolding(expect, conditionsOf, seen, matches);
}

const built = new WeakMap<object, Condition<TcpObservation>[]>();
function conditionsOf(a: TcpRequest["expect"][number]): Condition<TcpObservation>[] {
  let list = built.get(a);
  if (list) return list;
  list = [];
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  if (a.certValidDays !== undefined) list.push(certCondition(a.certValidDays, "certValidDays needs tls: true"));
  if (a.banner !== undefined) {
    const banner = a.banner;
    const wanted = banner.contains !== undefined ? `to contain ${quote(banner.contains)}` : `to match /${banner.matches}/`;
    list.push((seen, matches) => {
      if (banner.matches !== undefined) {
        const pattern = compilePattern(banner.matches);
        if (!pattern.ok) return { kind: "banner", message: cannotRun(pattern) };
      }
      if (bannerHolds(banner, seen.banner, matches)) return null;
      if (seen.banner === "") return { kind: "banner", message: `no banner ${seen.timedOut ? "within the timeout" : "before the server closed"}, expected one ${wanted}` };
      return { kind: "banner", message: `banner ${quote(seen.banner)} was expected ${wanted}` };
    });
  }
  built.set(a, list);
  return list;
}

/** `send` as written: \r \n \t and \\ read as the characters they name (JSON has decoded them already). */
export function unescape(text: string): string {
  return text.replace(/\\([rnt\\])/g, (_, c: string) => ({ r: "\r", n: "\n", t: "\t", "\\": "\\" })[c]!);
}
