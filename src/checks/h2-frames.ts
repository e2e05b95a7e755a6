/**
 * HTTP/2 framing (RFC 9113 section 4), as much as one client call needs: frames written whole, and frames read
 * from a connection's reads, one at a time and bounded by the frame size healthd allows (the default, 16,384
 * bytes, which it never raises). Pure; grpc-call.ts gives the frames their meaning.
 */

/** Frame types (RFC 9113 section 6). */
export const DATA = 0x0, HEADERS = 0x1, PRIORITY = 0x2, RST_STREAM = 0x3, SETTINGS = 0x4, PUSH_PROMISE = 0x5, PING = 0x6, GOAWAY = 0x7, WINDOW_UPDATE = 0x8, CONTINUATION = 0x9;

/** Flags: END_STREAM (DATA, HEADERS) is ACK's bit (SETTINGS, PING). */
export const END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY_FLAG = 0x20;

/** SETTINGS_ENABLE_PUSH (RFC 9113 6.5.2). */
export const ENABLE_PUSH = 0x2;

/** The client's connection preface, before its first SETTINGS. */
export const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** The largest frame healthd takes: SETTINGS_MAX_FRAME_SIZE's default, which healthd does not change. */
export const maxFrameSize = 16_384;

/** A frame's bytes: its 9-byte header, then `payload`. */
export function frame(type: number, flags: number, stream: number, payload: Buffer = empty): Buffer {
  const bytes = Buffer.allocUnsafe(9 + payload.length);
  bytes.writeUIntBE(payload.length, 0, 3);
  bytes[3] = type;
  bytes[4] = flags;
  bytes.writeUInt32BE(stream, 5);
  payload.copy(bytes, 9);
  return bytes;
}
const empty = Buffer.alloc(0);

/** A SETTINGS payload from [identifier, value] pairs. */
export function settings(pairs: readonly (readonly [number, number])[]): Buffer {
  const bytes = Buffer.allocUnsafe(6 * pairs.length);
  pairs.forEach(([id, value], i) => {
    bytes.writeUInt16BE(id, 6 * i);
    bytes.writeUInt32BE(value, 6 * i + 2);
  });
  return bytes;
}

/** What the peer did against HTTP/2 itself: `why` is said to the user, in nghttp2's words where it has them. */
export class H2Error extends Error {}

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  /** Valid only during the call it is handed to (it may be a view of a shared read buffer). */
  readonly payload: Buffer;
}

/**
 * Frames out of a connection's reads. A read is a view valid only during `read` (connect.ts's shared buffer):
 * whole frames in it are handed on as views; what is left of a frame cut across reads is copied, at most one
 * frame's header and payload. The peer's first frame must be SETTINGS (its connection preface), which is how a
 * server that speaks something else is told at its first bytes.
 */
export class FrameReader {
  #pending: Buffer | undefined;
  #first = true;

  read(view: Buffer, onFrame: (frame: Frame) => void): void {
    let bytes = view;
    if (this.#pending) {
      bytes = Buffer.concat([this.#pending, view]);
      this.#pending = undefined;
    }
    let at = 0;
    while (bytes.length - at >= 9) {
      const length = bytes.readUIntBE(at, 3);
      const type = bytes[at + 3]!;
      if (this.#first && (type !== SETTINGS || (bytes[at + 4]! & ACK) !== 0)) throw new H2Error("Protocol error");
      this.#first = false;
      if (length > maxFrameSize) throw new H2Error(`Frame size error: a frame of ${length} bytes, over the ${maxFrameSize} allowed`);
      if (bytes.length - at < 9 + length) break;
      const payload = bytes.subarray(at + 9, at + 9 + length);
      const stream = bytes.readUInt32BE(at + 5) & 0x7fffffff;
      const flags = bytes[at + 4]!;
      at += 9 + length;
      onFrame({ type, flags, stream, payload });
    }
    if (at < bytes.length) this.#pending = Buffer.from(bytes.subarray(at));
  }
}

/** A padded frame's content (PADDED: a pad length byte first, that many bytes of padding last); throws on too much padding. */
export function unpadded(frame: Frame): Buffer {
  if ((frame.flags & PADDED) === 0) return frame.payload;
  const padding = frame.payload[0];
  if (padding === undefined || padding >= frame.payload.length) throw new H2Error(`Protocol error: ${padding ?? 0} bytes of padding in a frame of ${frame.payload.length}`);
  return frame.payload.subarray(1, frame.payload.length - padding);
}
