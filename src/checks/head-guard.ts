/**
 * Bounds on a response's head (status line and headers), enforced on the socket before undici's parser sees
 * the bytes. A checked site must not be able to make the daemon spend on it what other services need:
 * undici's own limit throws a new error, stack trace and all, for every header past it in a chunk, so 5,000
 * small headers cost about 150 ms of CPU per check (measured with --cpu-prof). Here the socket is cut at the
 * first byte over a bound, with one error, whatever follows.
 */
import type { Socket } from "node:net";

export interface HeadLimits {
  /** Bytes of one response head, status line included. */
  readonly maxBytes: number;
  /** Header lines of one response head. */
  readonly maxHeaders: number;
}

export const headLimits: HeadLimits = { maxBytes: 64 * 1024, maxHeaders: 256 };

/** What the socket is destroyed with; the controller reports it as a `size` failure. */
export class HeadTooLarge extends Error {
  readonly code = "HEALTHD_HEAD_TOO_LARGE";
}

/**
 * Watch the heads that arrive on `socket` (interim 1xx heads too, until the final one) as undici reads them.
 * undici pulls data with socket.read(), so that is where the bytes are looked at.
 */
export function guardHeads(socket: Socket, limits: HeadLimits = headLimits): void {
  const read = socket.read.bind(socket);
  let bytes = 0;
  let lines = 0;
  let previous = 0; // the last byte seen, to find CRLF across chunks
  let lineLength = 0; // bytes of the current line, to tell an empty line (the head's end)
  let statusLine = ""; // the first bytes of the head's first line, to tell an interim 1xx head
  let done = false;
  socket.read = (size?: number) => {
    const chunk = read(size) as Buffer | null;
    if (!chunk || done) return chunk;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      bytes++;
      if (lines === 0 && statusLine.length < 16 && byte !== 13 && byte !== 10) statusLine += String.fromCharCode(byte);
      if (byte === 10 && previous === 13) {
        if (lineLength === 1) {
          // An empty line: the head is over. An interim 1xx head is followed by another head.
          if (/^HTTP\/\d(\.\d)? 1\d\d/.test(statusLine)) {
            bytes = lines = lineLength = 0;
            statusLine = "";
            previous = byte;
            continue;
          }
          done = true;
          break;
        }
        lines++;
        lineLength = 0;
      } else lineLength++;
      previous = byte;
      if (bytes > limits.maxBytes || lines > limits.maxHeaders + 1) {
        const what = bytes > limits.maxBytes ? `is larger than ${limits.maxBytes} bytes` : `has more than ${limits.maxHeaders} headers`;
        socket.destroy(new HeadTooLarge(`the response head ${what}`));
        return null;
      }
    }
    return chunk;
  };
}
