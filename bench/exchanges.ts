/**
 * The naive checkers' exchanges, each on a fresh connection, for bench/naive.ts and bench/first-checks.ts: a
 * new undici Client per request, and the floor (node:net, a fixed request, the answer read until the target
 * closes, no HTTP parser).
 */
import { connect } from "node:net";
import { Client } from "undici";

export async function undiciExchange(url: URL, path: string): Promise<void> {
  const client = new Client(url.origin);
  try {
    const response = await client.request({ path, method: "GET", headers: { "user-agent": "naive" } });
    await response.body.text();
  } finally {
    await client.close();
  }
}

/** The floor; `request` from floorRequest(), made once. */
export function floorExchange(url: URL, request: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.end(request));
    socket.on("data", () => {});
    socket.on("close", () => resolve());
    socket.on("error", () => {});
  });
}

export const floorRequest = (url: URL, path: string) =>
  Buffer.from(`GET ${path} HTTP/1.1\r\nhost: ${url.host}\r\nuser-agent: naive\r\nconnection: close\r\n\r\n`);
