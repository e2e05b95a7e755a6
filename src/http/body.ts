/**
 * Reading a request's body within its endpoint's limit, and dropping what is left of one refused unread, so
 * that the answer reaches clients that send the whole body before they read.
 */
import type { IncomingMessage } from "node:http";
import type { Clock } from "../platform/clock.ts";
import { HttpError } from "./problem.ts";

/** Request bodies larger than this are refused with 413 before they are parsed. */
export const maxBodyBytes = 1024 * 1024;

/**
 * What is read and dropped of a body refused unread (413, 401, 404...) before the connection closes: clients
 * that send the whole body before they read (Node's fetch, Python's requests) see the answer only if it is
 * read, and would see a broken pipe instead. Past this, or this long, the connection is cut.
 */
const drainBytes = 32 * 1024 * 1024;
const drainMs = 10_000;

/** Read and drop what is left of `req`'s body, then `done`; past drainBytes or drainMs, cut the connection. */
export function drain(req: IncomingMessage, clock: Clock, done: () => void): void {
  let left = drainBytes;
  const cut = () => {
    clock.clearTimeout(timer);
    req.off("data", count);
    req.socket.destroy();
  };
  const timer = clock.setTimeout(cut, drainMs, { unref: true });
  const count = (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) cut();
  };
  req.on("data", count);
  req.once("end", () => {
    clock.clearTimeout(timer);
    done();
  });
  req.once("close", () => clock.clearTimeout(timer));
  req.resume();
}

/**
 * Read a body of at most `maxBytes` (413 beyond, the rest left unread for send to drain), keeping its first
 * `keepBytes`. Read by listening, not by iterating: leaving a `for await` over a request destroys it, and the
 * connection with it, before the 413 can be answered.
 */
export function readBody(req: IncomingMessage, maxBytes: number, keepBytes: number): Promise<{ type: string; text: string; bytes: Buffer } | undefined> {
  const length = Number(req.headers["content-length"] ?? NaN);
  if (length > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let kept = 0;
    const stop = (error: Error) => {
      req.off("data", data);
      req.off("end", end);
      req.off("error", stop);
      req.off("close", closed);
      req.pause();
      reject(error);
    };
    // A client gone before its body ended: nothing is answered, but the handler must not wait for ever.
    const closed = () => stop(new HttpError(400, "the connection closed before the body ended; send the whole body"));
    const data = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return stop(tooLarge(maxBytes));
      if (kept < keepBytes) {
        const part = kept + chunk.length > keepBytes ? chunk.subarray(0, keepBytes - kept) : chunk;
        chunks.push(part);
        kept += part.length;
      }
    };
    const end = () => {
      req.off("error", stop);
      req.off("close", closed);
      if (size === 0) return resolve(undefined);
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      const bytes = Buffer.concat(chunks);
      resolve({ type, text: bytes.toString("utf8"), bytes });
    };
    req.on("data", data);
    req.once("end", end);
    req.once("error", stop);
    req.once("close", closed);
  });
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, `the body is larger than ${maxBytes} bytes, this endpoint's limit; send a smaller one (a server's services may be split into several documents)`);
}
