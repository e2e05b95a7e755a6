/**
 * HPACK (RFC 7541), as much as one gRPC health call needs: the request's few headers written as literal fields
 * without indexing and without Huffman (always correct, whatever the server's table), and the whole decoder for
 * the answer's headers and trailers (static table, dynamic table with size updates, integers, strings with
 * Huffman), since a server uses all of it. Pure. The decoder is bounded for a hostile server: a block is
 * decoded from bytes it was given (no allocation beyond them but the 4096-byte table healthd advertises, the
 * default), every integer is capped, and a table size update over that default is refused.
 */
import { HpackError, huffmanDecode } from "./hpack-huffman.ts";

export { HpackError };

/** The dynamic table's size healthd allows the server: HTTP/2's default, so healthd never advertises one. */
export const tableSize = 4096;

/** RFC 7541 Appendix A, index 1 to 61 (0 unused). */
const staticTable: readonly (readonly [string, string])[] = [
  ["", ""], [":authority", ""], [":method", "GET"], [":method", "POST"], [":path", "/"], [":path", "/index.html"], [":scheme", "http"], [":scheme", "https"],
  [":status", "200"], [":status", "204"], [":status", "206"], [":status", "304"], [":status", "400"], [":status", "404"], [":status", "500"],
  ["accept-charset", ""], ["accept-encoding", "gzip, deflate"], ["accept-language", ""], ["accept-ranges", ""], ["accept", ""],
  ["access-control-allow-origin", ""], ["age", ""], ["allow", ""], ["authorization", ""], ["cache-control", ""], ["content-disposition", ""],
  ["content-encoding", ""], ["content-language", ""], ["content-length", ""], ["content-location", ""], ["content-range", ""], ["content-type", ""],
  ["cookie", ""], ["date", ""], ["etag", ""], ["expect", ""], ["expires", ""], ["from", ""], ["host", ""], ["if-match", ""], ["if-modified-since", ""],
  ["if-none-match", ""], ["if-range", ""], ["if-unmodified-since", ""], ["last-modified", ""], ["link", ""], ["location", ""], ["max-forwards", ""],
  ["proxy-authenticate", ""], ["proxy-authorization", ""], ["range", ""], ["referer", ""], ["refresh", ""], ["retry-after", ""], ["server", ""],
  ["set-cookie", ""], ["strict-transport-security", ""], ["transfer-encoding", ""], ["user-agent", ""], ["vary", ""], ["via", ""], ["www-authenticate", ""],
];

/** A header block as literal fields without indexing (RFC 7541 6.2.2), new names, no Huffman: octets as latin1. */
export function encodeLiterals(fields: readonly (readonly [string, string])[]): Buffer {
  const bytes: number[] = [];
  const string = (text: string) => {
    integer(bytes, text.length, 7, 0);
    for (let i = 0; i < text.length; i++) bytes.push(text.charCodeAt(i) & 0xff);
  };
  for (const [name, value] of fields) {
    bytes.push(0x00);
    string(name);
    string(value);
  }
  return Buffer.from(bytes);
}

/** An integer with an N-bit prefix (RFC 7541 5.1), the first byte's other bits `flags`. */
function integer(out: number[], value: number, prefixBits: number, flags: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) return void out.push(flags | value);
  out.push(flags | max);
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 128);
  out.push(value);
}

/**
 * The decoding side of one connection: its dynamic table lives from block to block. `decode` hands each field
 * of a block to `field` in order; a block that breaks HPACK throws HpackError, and the connection is done.
 */
export class HpackDecoder {
  /** Newest first, as HPACK indexes it (62 is the newest). */
  readonly #entries: [string, string][] = [];
  #size = 0;
  #max: number;
  /** `max`: the table's size to begin with (RFC 7541's examples use 256); a size update may still set up to tableSize. */
  constructor(max = tableSize) {
    this.#max = max;
  }

  /** The table's entries, newest first, and its size (RFC 7541 4.1): for tests. */
  get table(): { readonly entries: readonly (readonly [string, string])[]; readonly size: number } {
    return { entries: this.#entries, size: this.#size };
  }

  decode(block: Buffer, field: (name: string, value: string) => void): void {
    let at = 0;
    let fields = 0;
    /**
     * An integer with an N-bit prefix; over 2^24 is no length or index a bounded block can hold. Four
     * continuation bytes (28 bits) hold any value under it: a fifth, even a zero one (0x80 pads without end,
     * and 0 × 2^shift turns NaN once 2^shift is Infinity), is an error too (RFC 7541 5.1).
     */
    const int = (prefixBits: number): number => {
      const max = (1 << prefixBits) - 1;
      let value = block[at++]! & max;
      if (value < max) return value;
      for (let shift = 0; ; shift += 7) {
        if (at >= block.length) throw new HpackError("an integer cut short");
        if (shift > 21) throw new HpackError("an integer of more than four continuation bytes");
        const byte = block[at++]!;
        value += (byte & 0x7f) * 2 ** shift;
        if (value > 0xffffff) throw new HpackError("an integer over 2^24");
        if (byte < 0x80) return value;
      }
    };
    const string = (): string => {
      if (at >= block.length) throw new HpackError("a string cut short");
      const huffman = (block[at]! & 0x80) !== 0;
      const length = int(7);
      if (at + length > block.length) throw new HpackError(`a string of ${length} bytes where ${block.length - at} are left`);
      const raw = block.subarray(at, (at += length));
      return huffman ? huffmanDecode(raw) : raw.toString("latin1");
    };
    const indexed = (index: number): readonly [string, string] => {
      const entry = index === 0 ? undefined : index <= 61 ? staticTable[index] : this.#entries[index - 62];
      if (!entry) throw new HpackError(`index ${index}, which the tables do not hold (${61 + this.#entries.length} entries)`);
      return entry;
    };
    while (at < block.length) {
      const byte = block[at]!;
      if (byte & 0x80) {
        // Indexed header field (6.1).
        const [name, value] = indexed(int(7));
        field(name, value);
      } else if ((byte & 0xe0) === 0x20) {
        // Dynamic table size update (6.3): only before the block's first field, and never over what was allowed.
        if (fields > 0) throw new HpackError("a table size update after a header field");
        const size = int(5);
        if (size > tableSize) throw new HpackError(`a dynamic table size update to ${size}, over the ${tableSize} healthd allows`);
        this.#max = size;
        this.#evict(0);
        continue;
      } else {
        // Literal with incremental indexing (6.2.1, 6 bits), without indexing (6.2.2) or never indexed (6.2.3, 4 bits).
        const adds = (byte & 0xc0) === 0x40;
        const index = int(adds ? 6 : 4);
        const name = index === 0 ? string() : indexed(index)[0];
        const value = string();
        if (adds) this.#add(name, value);
        field(name, value);
      }
      fields++;
    }
  }

  #add(name: string, value: string): void {
    const size = name.length + value.length + 32;
    this.#evict(size);
    // An entry larger than the table empties it and is not added (4.4).
    if (size > this.#max) return;
    this.#entries.unshift([name, value]);
    this.#size += size;
  }

  /** Evicts the oldest entries until `room` more bytes fit. */
  #evict(room: number): void {
    while (this.#size + room > this.#max && this.#entries.length > 0) {
      const [name, value] = this.#entries.pop()!;
      this.#size -= name.length + value.length + 32;
    }
  }
}
