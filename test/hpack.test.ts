/**
 * HPACK (src/checks/hpack.ts) against RFC 7541's own examples (Appendix C: requests C.3 and C.4, responses C.5
 * and C.6 with a 256-byte table that evicts), then what a hostile server could send: a table size update over
 * the 4096 bytes healthd allows, an index past the tables, cut-short integers and strings, bad Huffman padding.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeLiterals, HpackDecoder, HpackError } from "../src/checks/hpack.ts";
import { huffmanDecode, huffmanEncode } from "../src/checks/hpack-huffman.ts";

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ""), "hex");
const decode = (decoder: HpackDecoder, block: string) => {
  const fields: [string, string][] = [];
  decoder.decode(hex(block), (name, value) => fields.push([name, value]));
  return fields;
};

const requests = [
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"]],
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], ["cache-control", "no-cache"]],
  [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [":authority", "www.example.com"], ["custom-key", "custom-value"]],
];
const requestTables = [
  { entries: [[":authority", "www.example.com"]], size: 57 },
  { entries: [["cache-control", "no-cache"], [":authority", "www.example.com"]], size: 110 },
  { entries: [["custom-key", "custom-value"], ["cache-control", "no-cache"], [":authority", "www.example.com"]], size: 164 },
];

for (const [section, blocks] of [
  ["C.3 (no Huffman)", ["828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865", "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565"]],
  ["C.4 (Huffman)", ["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf", "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"]],
] as const) {
  test(`RFC 7541 ${section}: three requests on one connection decode, the dynamic table as the RFC shows it`, () => {
    const decoder = new HpackDecoder();
    blocks.forEach((block, i) => {
      assert.deepEqual(decode(decoder, block), requests[i]);
      assert.deepEqual(decoder.table, requestTables[i]);
    });
  });
}

const date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const responses = [
  [[":status", "302"], ["cache-control", "private"], ["date", date1], ["location", "https://www.example.com"]],
  [[":status", "307"], ["cache-control", "private"], ["date", date1], ["location", "https://www.example.com"]],
  [[":status", "200"], ["cache-control", "private"], ["date", "Mon, 21 Oct 2013 20:13:22 GMT"], ["location", "https://www.example.com"], ["content-encoding", "gzip"], ["set-cookie", cookie]],
];
const responseTables = [
  { entries: [["location", "https://www.example.com"], ["date", date1], ["cache-control", "private"], [":status", "302"]], size: 222 },
  // ":status: 302" evicted to make room for ":status: 307".
  { entries: [[":status", "307"], ["location", "https://www.example.com"], ["date", date1], ["cache-control", "private"]], size: 222 },
  { entries: [["set-cookie", cookie], ["content-encoding", "gzip"], ["date", "Mon, 21 Oct 2013 20:13:22 GMT"]], size: 215 },
];

for (const [section, blocks] of [
  ["C.5 (no Huffman)", [
    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
    "4803333037c1c0bf",
    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
  ]],
  ["C.6 (Huffman)", [
    "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
    "4883640effc1c0bf",
    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
  ]],
] as const) {
  test(`RFC 7541 ${section}: three responses with a 256-byte table, entries evicted as the RFC shows`, () => {
    const decoder = new HpackDecoder(256);
    blocks.forEach((block, i) => {
      assert.deepEqual(decode(decoder, block), responses[i]);
      assert.deepEqual(decoder.table, responseTables[i]);
    });
  });
}

test("a table size update: at a block's start, up to 4096, evicting; over 4096 or after a field it is refused", () => {
  const decoder = new HpackDecoder();
  decode(decoder, "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54");
  assert.equal(decoder.table.size, 42 + 52 + 65);
  // 0x3f e1 1f: 31 + 0x61 + (0x1f << 7) = 4096; then 0x20: 0, which empties the table.
  decode(decoder, "3fe11f");
  assert.equal(decoder.table.entries.length, 3);
  assert.deepEqual(decode(decoder, "20 88"), [[":status", "200"]]);
  assert.deepEqual(decoder.table, { entries: [], size: 0 });
  // 4097 is more than healthd allows.
  assert.throws(() => decode(new HpackDecoder(), "3fe21f"), (e: Error) => e instanceof HpackError && /a dynamic table size update to 4097, over the 4096 healthd allows/.test(e.message));
  assert.throws(() => decode(new HpackDecoder(), "88 20"), /a table size update after a header field/);
});

test("what a hostile or broken block holds is refused, never read past: indexes, integers, strings, Huffman", () => {
  for (const [block, why] of [
    ["80", /index 0/],
    ["be", /index 62, which the tables do not hold \(61 entries\)/],
    ["ff", /an integer cut short/],
    ["ffffffffffff7f", /an integer over 2\^24/],
    // Zero continuation bytes without end (0x80 ...): NaN once 2^shift is Infinity, were they not refused.
    ["88007f" + "80".repeat(150) + "00", /an integer of more than four continuation bytes/],
    ["3f" + "80".repeat(150) + "00", /an integer of more than four continuation bytes/],
    ["400a6375", /a string of 10 bytes where 2 are left/],
    ["40", /a string cut short/],
    // A Huffman name ("ww") and no value.
    ["0082f1e3", /a string cut short/],
  ] as const) {
    assert.throws(() => decode(new HpackDecoder(), block), (e: Error) => e instanceof HpackError && why.test(e.message), block);
  }
  assert.throws(() => huffmanDecode(hex("1fff")), /bad padding/, "'a' (00011) then 11 bits of ones");
  assert.throws(() => huffmanDecode(hex("18")), /bad padding/, "'a' (00011) then 000, not ones");
  assert.throws(() => huffmanDecode(hex("ffffffff")), /EOS/);
  assert.equal(huffmanDecode(hex("1f")), "a");
  // Every octet survives a trip through a literal: the encoder healthd writes its request with.
  const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
  assert.deepEqual(decode(new HpackDecoder(), encodeLiterals([["x-all", all], [":path", "/grpc.health.v1.Health/Check"]]).toString("hex")), [["x-all", all], [":path", "/grpc.health.v1.Health/Check"]]);
});

test("the Huffman code, made from its lengths, codes the RFC's strings as the RFC does, and every octet back", () => {
  for (const [text, coded] of [["www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"], ["no-cache", "a8eb10649cbf"], ["custom-key", "25a849e95ba97d7f"], ["custom-value", "25a849e95bb8e8b4bf"], ["302", "6402"], ["307", "640eff"], ["private", "aec3771a4b"], [cookie, "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007"]]) {
    assert.equal(huffmanEncode(text!).toString("hex"), coded);
    assert.equal(huffmanDecode(hex(coded!)), text);
  }
  const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
  assert.equal(huffmanDecode(huffmanEncode(all)), all);
});
