/**
 * HPACK's Huffman code (RFC 7541 Appendix B): decoding what servers send, and encoding for tests' servers
 * (healthd's own request is written without it). The code is canonical (its codes of one length
 * are consecutive, in symbol order, after the shorter ones), so the table is its 257 code lengths, from which
 * the codes follow; hpack.test.ts checks them against the RFC's own examples. Pure.
 */

/** Code lengths in bits of symbols 0 to 255 and of EOS (256), RFC 7541 Appendix B. */
const lengths = (
  "13,23,28,28,28,28,28,28,28,24,30,28,28,30,28,28,28,28,28,28,28,28,30,28,28,28,28,28,28,28,28,28,6,10,10,12,13,6,8,11,10,10,8,11,8,6,6,6," +
  "5,5,5,6,6,6,6,6,6,6,7,8,15,6,12,10,13,6,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,8,7,8,13,19,13,14,6,15,5,6,5,6,5,6,6,6,5,7,7,6,6,6,5," +
  "6,7,6,5,5,6,7,7,7,7,7,15,11,14,13,28,20,22,20,20,22,22,22,23,22,23,23,23,23,23,24,23,24,24,22,23,24,23,23,23,23,21,22,23,22,23,23,24,22,21," +
  "20,22,22,23,23,21,23,22,22,24,21,22,23,23,21,21,22,21,23,22,23,23,20,22,22,22,23,22,22,23,26,26,20,19,22,23,22,25,26,26,26,27,27,26,24,25," +
  "19,21,26,27,27,26,27,24,21,21,26,26,28,27,27,27,20,24,20,21,22,21,21,23,22,22,25,25,24,24,26,23,26,27,26,26,27,27,27,27,27,28,27,27,27,27," +
  "27,26,30"
)
  .split(",")
  .map(Number);

const eos = 256;

/** What a header block broke (RFC 9113's COMPRESSION_ERROR): thrown by the decoder, a connection error. */
export class HpackError extends Error {}

/** Each symbol's code, from the lengths: in order of length, then symbol, each one more than the last, shifted. */
const codes = (() => {
  const out: number[] = [];
  const order = lengths.map((_, symbol) => symbol).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  let code = 0;
  let previous = lengths[order[0]!]!;
  for (const symbol of order) {
    code *= 2 ** (lengths[symbol]! - previous);
    previous = lengths[symbol]!;
    out[symbol] = code++;
  }
  return out;
})();

/**
 * The code as a binary tree: node n's children are tree[2n] (bit 0) and tree[2n + 1] (bit 1); a child >= 0 is
 * another node, a child < 0 is the leaf of symbol -child - 1. 256 inner nodes for 257 symbols.
 */
const tree = (() => {
  const children = new Int16Array(2 * 256).fill(0);
  let nodes = 1;
  for (let symbol = 0; symbol <= eos; symbol++) {
    const length = lengths[symbol]!;
    const code = codes[symbol]!;
    let node = 0;
    for (let bit = length - 1; bit > 0; bit--) {
      const slot = 2 * node + (Math.floor(code / 2 ** bit) & 1);
      if (children[slot] === 0) children[slot] = nodes++;
      node = children[slot]!;
    }
    children[2 * node + (code & 1)] = -symbol - 1;
  }
  return children;
})();

/**
 * The octets a Huffman-coded string holds, as latin1 text. Throws on EOS inside the string, on padding longer
 * than 7 bits or not all ones (5.2): a server sending either is broken.
 */
export function huffmanDecode(bytes: Buffer): string {
  let text = "";
  let node = 0;
  /** Bits read since the last symbol, and whether they were all ones: what is left at the end is padding. */
  let pending = 0;
  let ones = true;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      const one = (byte >> bit) & 1;
      const next = tree[2 * node + one]!;
      pending++;
      ones &&= one === 1;
      if (next >= 0) {
        node = next;
        continue;
      }
      const symbol = -next - 1;
      if (symbol === eos) throw new HpackError("a Huffman string holding EOS");
      text += String.fromCharCode(symbol);
      node = 0;
      pending = 0;
      ones = true;
    }
  }
  if (pending > 7 || !ones) throw new HpackError("a Huffman string with bad padding");
  return text;
}

/** `text`'s octets (latin1) Huffman-coded, padded with ones (5.2). */
export function huffmanEncode(text: string): Buffer {
  const out: number[] = [];
  let bits = 0;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const symbol = text.charCodeAt(i) & 0xff;
    const length = lengths[symbol]!;
    const code = codes[symbol]!;
    for (let bit = length - 1; bit >= 0; bit--) {
      bits = (bits << 1) | (Math.floor(code / 2 ** bit) & 1);
      if (++count === 8) out.push(bits), (bits = 0), (count = 0);
    }
  }
  if (count > 0) out.push((bits << (8 - count)) | ((1 << (8 - count)) - 1));
  return Buffer.from(out);
}
