/**
 * A WebSocket check: a fresh connection to the URL, the HTTP upgrade, then (when the check sends a message or
 * looks at one) one message sent and the first one back judged. One deadline, `timeoutMs`, covers it all; the
 * connection is torn down at once after the first message (no closing handshake to wait on), a message over
 * websocketMessageBytes fails the check rather than be buffered, and compression is not offered, so a target
 * that floods or inflates costs one message. What it judges is pure (evaluateWebsocket).
 *
 * The upgrade is healthd's own, as an http check's exchange is: its connection (connect.ts: the shared read
 * buffer, the shared secure context), its answer reader (answer.ts) and the handshake's rules
 * (websocket-upgrade.ts). ws's client made it through Node's http client (a ClientRequest, its parser, an
 * IncomingMessage, a WebSocket), which cost 1.3 to 1.8 times an http check's CPU at 1,000 services; the
 * measured cost now is in docs/benchmarks/2026-12-06-kinds.md. The frames stay ws's (its Receiver and
 * Sender, on the upgraded connection): masking, fragments, control frames, UTF-8 and maxPayload are the part
 * of RFC 6455 a hostile server probes, and ws is the well-kept client that has met them. It is loaded when the
 * first such check runs, so that commands without one do not pay for it.
 */
import type { Socket } from "node:net";
import { systemClock, type Clock } from "../platform/clock.ts";
import { version } from "../platform/version.ts";
import type { Outcome, WebsocketCheck } from "../domain/model.ts";
import { awaitsMessage, websocketMessageBytes } from "../domain/schema/websocket.ts";
import { AnswerError, AnswerReader, type Head } from "./answer.ts";
import { connect } from "./connect.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { firstHolding, latencyCondition, quote, textConditions, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { judged, type Matches } from "./matching.ts";
import { unescape } from "./tcp.ts";
import { upgradeHeadLimits, upgradeKey, upgradeRefusal, upgradeRequest } from "./websocket-upgrade.ts";

export type WebsocketRequest = Pick<WebsocketCheck, "url" | "headers" | "protocols" | "verifyTls" | "send" | "expect" | "timeoutMs">;

/** What a WebSocket exchange showed, as the evaluator needs it. */
export interface WebsocketObservation {
  /** The first message as text (a binary one read as UTF-8, invalid bytes as U+FFFD); null when none was awaited. */
  readonly text: string | null;
  /** From the start to the first message, or to the upgrade when no message was awaited. */
  readonly latencyMs: number;
}

/** How much of the first message the entry keeps as its answer. */
const answerChars = 500;

/** What the check uses of ws (which exports its Receiver and Sender, though @types/ws does not declare them). */
interface Framing {
  readonly Receiver: new (options: { binaryType: "nodebuffer"; isServer: false; maxPayload: number }) => FrameReader;
  readonly Sender: { frame(data: Buffer, options: { fin: true; opcode: number; mask: true; readOnly: true; rsv1: false }): Buffer[] };
}
/** ws's Receiver: a Writable that reads server frames and tells each whole message, ping and close frame. */
interface FrameReader {
  write(chunk: Buffer): boolean;
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): this;
  on(event: "ping", listener: (data: Buffer) => void): this;
  on(event: "conclude", listener: (code: number, reason: Buffer) => void): this;
  on(event: "error", listener: (error: Error) => void): this;
}

let framing: Framing | undefined;
let loading: Promise<Framing> | undefined;
const loadFraming = () => (loading ??= import("ws").then((m) => (framing = m as unknown as Framing)));

export async function runWebsocketCheck(check: WebsocketRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  // From when the library is loaded: the first check of a process would count its ~100 ms load as latency.
  let started = clock.monotonic();
  const target = new URL(check.url);
  const where = target.host;
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  let exchange: Exchange | undefined;
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "status" | "shortage">): Outcome => ({
    ok: false, status: failure.status, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const frames = framing ?? (await deadline.until(loadFraming()));
    started = clock.monotonic();
    exchange = new Exchange(check, target, frames, clock, started, options.userAgent ?? `healthd/${version}`);
    const seen = await deadline.until(exchange.seen);
    exchange.end(); // what else the target sends is not read
    const answers = seen.text === null ? undefined : [seen.text.length > answerChars ? `${seen.text.slice(0, answerChars)}…` : seen.text];
    const verdict = await judged((matches) => evaluateWebsocket(check.expect, seen, matches));
    return verdict.ok
      ? { ok: true, status: null, latencyMs: seen.latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, ...(answers ? { answers } : {}) }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error, status: null }), latencyMs: seen.latencyMs, ...(answers ? { answers } : {}) };
  } catch (error) {
    const stage = exchange?.stage ?? "connecting";
    if (error === timedOut) return fail(new CheckFailure("timeout", `no WebSocket answer from ${where} within ${check.timeoutMs} ms (timed out ${stage})`));
    return fail(failureOf(error, target.hostname, where, stage));
  } finally {
    deadline.clear();
    exchange?.end();
  }
}

/**
 * One exchange on a connection of its own: the Upgrade request, its answer read by AnswerReader and judged by
 * upgradeRefusal, then (when a message is awaited) the message sent and the frames read by ws's Receiver.
 * `seen` settles once, with the first message (or the upgrade, when none is awaited) or the first failure.
 */
class Exchange {
  stage: "connecting" | "waiting for the first message" = "connecting";
  readonly seen: Promise<WebsocketObservation>;
  readonly #socket: Socket;
  readonly #check: WebsocketRequest;
  /** host:port as the URL names it, for messages. */
  readonly #where: string;
  readonly #framing: Framing;
  readonly #clock: Clock;
  readonly #started: number;
  readonly #key = upgradeKey();
  readonly #reader: AnswerReader;
  #ended = false;
  /** Pings answered so far: a server that pings without end while not reading would fill the socket's buffer with pongs. */
  #pongs = 0;
  #resolve!: (seen: WebsocketObservation) => void;
  #reject!: (error: unknown) => void;
  #head: Head | undefined;
  #frames: FrameReader | undefined;

  constructor(check: WebsocketRequest, target: URL, framing: Framing, clock: Clock, started: number, userAgent: string) {
    this.seen = new Promise((resolve, reject) => ((this.#resolve = resolve), (this.#reject = reject)));
    this.#check = check;
    this.#where = target.host;
    this.#framing = framing;
    this.#clock = clock;
    this.#started = started;
    this.#reader = AnswerReader.forUpgrade({ head: (head) => ((this.#head = head), false), data: () => {}, end: () => {} }, upgradeHeadLimits);
    const secure = target.protocol === "wss:";
    const host = target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname;
    const port = target.port === "" ? (secure ? 443 : 80) : Number(target.port);
    const socket = (this.#socket = connect({ host, port, tls: secure, verifyTls: check.verifyTls }, () => this.#onData));
    socket.once(secure ? "secureConnect" : "connect", () => {
      const headers: Record<string, string> = { "user-agent": userAgent };
      for (const [name, value] of Object.entries(check.headers)) headers[name.toLowerCase()] = value;
      socket.write(upgradeRequest(target, headers, check.protocols, this.#key));
    });
    socket.on("error", (error) => this.#fail(error));
    socket.on("close", () => {
      if (this.#ended) return; // torn down by the check itself: no failure to make (an Error's stack costs)
      // Closed with no close frame: code 1006 (RFC 6455 7.1.5), as ws's client said.
      this.#fail(this.#head ? closedWebSocket(this.#where, 1006, null, this.stage) : new CheckFailure("connect", `connection to ${this.#where} was closed by the server while ${this.stage}`));
    });
  }

  /** The check has its answer, or has failed or timed out: the connection goes, unread. */
  end(): void {
    this.#ended = true;
    this.#socket.destroy();
  }

  /** Each read of the connection: a view of the shared read buffer, which the next read overwrites. */
  readonly #onData = (view: Buffer): void => {
    if (this.#ended) return;
    try {
      if (this.#frames) return void this.#frames.write(Buffer.from(view)); // the Receiver keeps what it is given
      const at = this.#reader.push(view);
      if (this.#head === undefined) return;
      const frames = this.#upgraded(this.#head);
      // A server may send its first frame in the same write as the 101.
      if (frames && at < view.length) frames.write(Buffer.from(view.subarray(at)));
    } catch (error) {
      this.#fail(error);
    }
  };

  /** The answer to the upgrade has come: a WebSocket opened, or the failure thrown; the frame reader when a message is awaited. */
  #upgraded(head: Head): FrameReader | undefined {
    const { status } = head;
    const check = this.#check;
    if (status !== 101) throw new CheckFailure("status", `the WebSocket upgrade was answered ${`${status} ${this.#reader.reason}`.trimEnd()} (not 101 Switching Protocols)`, status);
    const refusal = upgradeRefusal(head, this.#key, check.protocols);
    if (refusal !== undefined) throw new CheckFailure("protocol", `${this.#where} answered the upgrade (101), not as a WebSocket server does: ${refusal}`);
    if (!awaitsMessage(check)) return void this.#settle(null);
    this.stage = "waiting for the first message";
    const frames = (this.#frames = new this.#framing.Receiver({ binaryType: "nodebuffer", isServer: false, maxPayload: websocketMessageBytes }));
    // The rest of a read is still parsed after the first message (the Receiver's loop goes on), not decoded.
    frames.on("message", (data) => this.#ended || this.#settle(data.toString("utf8")));
    // Answered, as ws's client did (a server may wait on its pong), up to a bound: ws's client ended the
    // connection at 60 pongs unsent, which Receiver and Sender alone do not do.
    frames.on("ping", (data) => {
      if (this.#ended) return;
      if (++this.#pongs > maxPings) return this.#fail(new CheckFailure("protocol", `${this.#where} sent more than ${maxPings} pings before its first message, which no WebSocket server needs; the check stopped answering them`));
      this.#send(0x0a, data);
    });
    frames.on("conclude", (code, why) => this.#fail(closedWebSocket(this.#where, code, why, this.stage)));
    frames.on("error", (error) => this.#fail(error));
    if (check.send !== null) this.#send(0x01, Buffer.from(unescape(check.send), "utf8"));
    return frames;
  }

  /** One frame to the server, masked as a client's must be (RFC 6455 5.3), by ws's Sender. */
  #send(opcode: number, data: Buffer): void {
    const parts = this.#framing.Sender.frame(data, { fin: true, opcode, mask: true, readOnly: true, rsv1: false });
    this.#socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  #settle(text: string | null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resolve({ text, latencyMs: round(this.#clock.monotonic() - this.#started) });
  }

  #fail(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#reject(error);
  }
}

/** How many pings before the first message are answered: a keep-alive sends one in many seconds. */
const maxPings = 100;

/** The server closed the WebSocket (with a close frame, or without: 1006) before the check had its answer. */
function closedWebSocket(where: string, code: number, reason: Buffer | null, stage: string): CheckFailure {
  const why = reason && reason.length > 0 ? `: ${quote(reason.toString("utf8"))}` : "";
  return new CheckFailure("connect", `${where} closed the WebSocket (code ${code}${why}) while ${stage}`);
}

/** What the reader, ws's Receiver or the socket threw, as a failure: not HTTP, a message too large, broken frames, or the socket's own. */
function failureOf(error: unknown, host: string, where: string, stage: string): CheckFailure {
  if (error instanceof CheckFailure) return error;
  if (error instanceof AnswerError) return new CheckFailure("protocol", `${where} did not answer the WebSocket upgrade in HTTP (${error.message})`);
  const { code = "", message = String(error) } = error as { code?: string; message?: string };
  // A frame that announces more than the most a check reads: refused at its header, before any of it is buffered.
  if (code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" || code === "WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH") {
    return new CheckFailure("size", `the first message from ${where} is over ${websocketMessageBytes} bytes, the most a check reads`);
  }
  if (code.startsWith("WS_ERR_")) return new CheckFailure("protocol", `${where} broke the WebSocket protocol while ${stage}: ${message}`);
  return classify(error, host, where, stage);
}

/** Which alternative held, or why none did: pure. No alternatives: the upgrade (and a message, if awaited) was enough. */
export function evaluateWebsocket(expect: WebsocketRequest["expect"], seen: WebsocketObservation, matches: Matches): Verdict {
  if (expect.length === 0) return { ok: true, matched: 0 };
  return firstHolding(expect, conditionsOf, seen, matches);
}

const built = new WeakMap<object, Condition<WebsocketObservation>[]>();
function conditionsOf(a: WebsocketRequest["expect"][number]): Condition<WebsocketObservation>[] {
  let list = built.get(a);
  if (list) return list;
  list = textConditions<WebsocketObservation>(a, (seen) => seen.text ?? "", (seen) => `the first message ${quote(seen.text ?? "")}`);
  if (a.maxLatencyMs !== undefined) list.push(latencyCondition(a.maxLatencyMs));
  built.set(a, list);
  return list;
}
