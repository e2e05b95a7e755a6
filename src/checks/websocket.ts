/**
 * A WebSocket check: a fresh connection to the URL, the HTTP upgrade, then (when the check sends a message or
 * looks at one) one message sent and the first one back judged. One deadline, `timeoutMs`, covers it all; the
 * connection is torn down at once after the first message (no closing handshake to wait on), a message over
 * websocketMessageBytes fails the check rather than be buffered, and compression is not offered, so a target
 * that floods or inflates costs one message. What it judges is pure (evaluateWebsocket). The `ws` package is
 * the client (the upgrade, framing, masking and UTF-8 checks of RFC 6455 are not worth writing again); it is
 * loaded when the first such check runs, so that commands without one do not pay for it.
 */
import type { IncomingMessage } from "node:http";
import type WebSocket from "ws";
import { systemClock } from "../platform/clock.ts";
import { version } from "../platform/version.ts";
import type { Outcome, WebsocketCheck } from "../domain/model.ts";
import { awaitsMessage, websocketMessageBytes } from "../domain/schema/websocket.ts";
import { Deadline, timedOut } from "./deadline.ts";
import { firstHolding, latencyCondition, quote, textConditions, type Condition, type Verdict } from "./expect.ts";
import { CheckFailure, classify, printable, round } from "./failure.ts";
import type { ControllerOptions } from "./http.ts";
import { judged, type Matches } from "./matching.ts";
import { unescape } from "./tcp.ts";

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

let client: Promise<typeof WebSocket> | undefined;
const loadClient = () => (client ??= import("ws").then((m) => m.default));

export async function runWebsocketCheck(check: WebsocketRequest, options: ControllerOptions = {}): Promise<Outcome> {
  const clock = options.clock ?? systemClock;
  const checkedAt = clock.now();
  // From when the library is loaded: the first check of a process would count its ~100 ms load as latency.
  let started = clock.monotonic();
  const target = new URL(check.url);
  const where = target.host;
  const waits = awaitsMessage(check);
  let stage = "connecting";
  let socket: WebSocket | undefined;
  /** The check has its answer (or its failure): what the socket says next is not told. */
  let settled = false;
  const deadline = new Deadline(clock, check.timeoutMs, options.signal);
  const fail = (failure: Pick<CheckFailure, "kind" | "message" | "status" | "shortage">): Outcome => ({
    ok: false, status: failure.status, latencyMs: round(clock.monotonic() - started), matched: null, errorKind: failure.kind, error: printable(failure.message), checkedAt,
    ...(failure.shortage ? { shortage: failure.shortage } : {}),
  });
  try {
    const WebSocketClient = await deadline.until(loadClient());
    started = clock.monotonic();
    const exchange = new Promise<WebsocketObservation>((resolve, reject) => {
      const headers = { "user-agent": options.userAgent ?? `healthd/${version}`, ...lowerCased(check.headers) };
      const ws = (socket = new WebSocketClient(check.url, check.protocols, {
        headers,
        maxPayload: websocketMessageBytes,
        perMessageDeflate: false,
        followRedirects: false,
        rejectUnauthorized: check.verifyTls,
      }));
      ws.on("upgrade", () => (stage = waits ? "waiting for the first message" : "opening"));
      ws.on("unexpected-response", (_request, response: IncomingMessage) => {
        response.destroy();
        const status = response.statusCode ?? 0;
        reject(new CheckFailure("status", `the WebSocket upgrade was answered ${status} ${response.statusMessage ?? ""}`.trimEnd() + " (not 101 Switching Protocols)", status));
      });
      ws.on("error", reject);
      ws.on("open", () => {
        if (!waits) return resolve({ text: null, latencyMs: round(clock.monotonic() - started) });
        if (check.send !== null) ws.send(unescape(check.send));
      });
      ws.once("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
        const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        resolve({ text: bytes.toString("utf8"), latencyMs: round(clock.monotonic() - started) });
      });
      ws.on("close", (code: number, reason: Buffer) => {
        if (settled) return; // torn down by the check itself: no failure to make (an Error's stack costs)
        const why = reason.length > 0 ? `: ${quote(reason.toString("utf8"))}` : "";
        reject(new CheckFailure("connect", `${where} closed the WebSocket (code ${code}${why}) while ${stage}`));
      });
    });
    const seen = await deadline.until(exchange);
    settled = true;
    socket?.terminate(); // what else the target sends is not read
    const answers = seen.text === null ? undefined : [seen.text.length > answerChars ? `${seen.text.slice(0, answerChars)}…` : seen.text];
    const verdict = await judged((matches) => evaluateWebsocket(check.expect, seen, matches));
    return verdict.ok
      ? { ok: true, status: null, latencyMs: seen.latencyMs, matched: verdict.matched, errorKind: null, error: null, checkedAt, ...(answers ? { answers } : {}) }
      : { ...fail({ kind: verdict.errorKind, message: verdict.error, status: null }), latencyMs: seen.latencyMs, ...(answers ? { answers } : {}) };
  } catch (error) {
    if (error === timedOut) return fail(new CheckFailure("timeout", `no WebSocket answer from ${where} within ${check.timeoutMs} ms (timed out ${stage})`));
    return fail(failureOf(error, target.hostname, where, stage));
  } finally {
    settled = true;
    deadline.clear();
    socket?.terminate();
  }
}

/** What ws threw, as a failure: a message too large, a target that speaks no WebSocket, or the socket's own. */
function failureOf(error: unknown, host: string, where: string, stage: string): CheckFailure {
  if (error instanceof CheckFailure) return error;
  const { code = "", message = String(error) } = error as { code?: string; message?: string };
  if (code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") return new CheckFailure("size", `the first message from ${where} is over ${websocketMessageBytes} bytes, the most a check reads`);
  if (code.startsWith("WS_ERR_")) return new CheckFailure("protocol", `${where} broke the WebSocket protocol while ${stage}: ${message}`);
  // The HTTP parser's codes: what came back to the upgrade was not HTTP.
  if (code.startsWith("HPE_")) return new CheckFailure("protocol", `${where} did not answer the WebSocket upgrade in HTTP (${code})`);
  if (/Sec-WebSocket|subprotocol|Invalid Upgrade header|extension/i.test(message)) return new CheckFailure("protocol", `${where} answered the upgrade, not as a WebSocket server does: ${message}`);
  return classify(error, host, where, stage);
}

const lowerCased = (headers: Readonly<Record<string, string>>) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

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
