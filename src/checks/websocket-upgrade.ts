/**
 * The opening handshake of RFC 6455 (section 4.1), as a websocket check makes it on its own connection: the
 * Upgrade request's bytes, and what a 101 answer must say for the connection to be a WebSocket. Pure but for
 * the key's randomness; the head is read by AnswerReader.
 */
import { createHash, randomFillSync } from "node:crypto";
import type { Head } from "./answer.ts";

/** The GUID RFC 6455 appends to the key before hashing it into Sec-WebSocket-Accept. */
const guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** Bounds on the 101's head: Node's HTTP client's (16 KiB), which checks used until this file; no handshake is near them. */
export const upgradeHeadLimits = { maxBytes: 16 * 1024, maxHeaders: 100 };

/**
 * The Upgrade request for `url`: its path and query, Host unless `headers` set one, the check's headers
 * (lower-case names), then the handshake's own. No Sec-WebSocket-Extensions: compression is not offered, so
 * that a target cannot inflate one small frame into a large message.
 */
export function upgradeRequest(url: URL, headers: Readonly<Record<string, string>>, protocols: readonly string[], key: string): Buffer {
  let head = `GET ${url.pathname}${url.search} HTTP/1.1\r\n`;
  if (headers.host === undefined) head += `host: ${url.host}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  if (protocols.length > 0) head += `sec-websocket-protocol: ${protocols.join(", ")}\r\n`;
  head += `sec-websocket-version: 13\r\nsec-websocket-key: ${key}\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n`;
  return Buffer.from(head, "latin1");
}

const keyPool = Buffer.alloc(16 * 256);
let keyAt = keyPool.length;

/**
 * A Sec-WebSocket-Key: 16 random bytes (RFC 6455 4.1), in base64. Taken from a pool that OpenSSL fills 256
 * keys at a time, as ws's Sender does for its masks: a call into OpenSSL a key was 2 % of a check's CPU.
 */
export function upgradeKey(): string {
  if (keyAt === keyPool.length) {
    randomFillSync(keyPool);
    keyAt = 0;
  }
  keyAt += 16;
  return keyPool.toString("base64", keyAt - 16, keyAt);
}

/** The Sec-WebSocket-Accept a server answers `key` with. */
export const acceptFor = (key: string) => createHash("sha1").update(key + guid).digest("base64");

/**
 * Why a 101 answer to the request with `key` and `protocols` does not open a WebSocket, in words for the
 * failure's message; undefined when it does. As ws's client checked it, with RFC 6455's Connection rule too.
 */
export function upgradeRefusal(head: Head, key: string, protocols: readonly string[]): string | undefined {
  const { upgrade, connection } = head.headers;
  if (upgrade?.toLowerCase() !== "websocket") return `its Upgrade header is ${shown(upgrade)}, not websocket`;
  if (!connection?.split(",").some((token) => token.trim().toLowerCase() === "upgrade")) return `its Connection header is ${shown(connection)}, without upgrade`;
  const accept = head.headers["sec-websocket-accept"];
  if (accept !== acceptFor(key)) return `its Sec-WebSocket-Accept ${shown(accept)} does not answer the key sent (a proxy in between, or not a WebSocket server)`;
  const chosen = head.headers["sec-websocket-protocol"];
  const offered = protocols.join(", ");
  if (chosen !== undefined && protocols.length === 0) return `it chose subprotocol ${shown(chosen)}, and the check offered none; list it in protocols`;
  if (chosen !== undefined && !protocols.includes(chosen)) return `it chose subprotocol ${shown(chosen)}, not one of those offered (${offered})`;
  if (chosen === undefined && protocols.length > 0) return `it chose none of the subprotocols offered (${offered}); offer one it speaks, or none`;
  const extensions = head.headers["sec-websocket-extensions"];
  if (extensions !== undefined) return `it turned on extensions the check did not offer (${shown(extensions)})`;
  return undefined;
}

/** A header's value as a refusal quotes it: short, or "absent". */
const shown = (value: string | undefined) => (value === undefined ? "absent" : JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value));
