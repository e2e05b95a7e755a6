/**
 * The two messages of the gRPC Health Checking Protocol (grpc/grpc doc/health-checking.md), written and read by
 * hand: HealthCheckRequest { string service = 1; } and HealthCheckResponse { ServingStatus status = 1; }. Two
 * fields are not worth a .proto file, a loader and protobufjs in the bundle. Pure; tests' servers use them too.
 */

/** The method every health server answers. */
export const healthCheckMethod = "/grpc.health.v1.Health/Check";

/** HealthCheckResponse.ServingStatus, by number. */
export const servingStatuses = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const;

/** A varint's bytes (protobuf's base-128 encoding, least significant group first). */
function varint(value: number): number[] {
  const bytes: number[] = [];
  for (; value > 0x7f; value = Math.floor(value / 128)) bytes.push((value & 0x7f) | 0x80);
  bytes.push(value);
  return bytes;
}

/** Field `field` of wire type 2 (length-delimited) holding `bytes`; proto3 leaves an empty one out. */
function lengthDelimited(field: number, bytes: Buffer): Buffer {
  return bytes.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(bytes.length)]), bytes]);
}

export const encodeRequest = (request: { readonly service: string }): Buffer => lengthDelimited(1, Buffer.from(request.service, "utf8"));

export const encodeResponse = (response: { readonly status: number }): Buffer => (response.status === 0 ? Buffer.alloc(0) : Buffer.from([0x08, ...varint(response.status)]));

/** The fields of a message as number -> last value (a varint as a number, length-delimited as bytes); throws on a malformed one. */
function fields(bytes: Buffer): Map<number, number | Buffer> {
  const out = new Map<number, number | Buffer>();
  let at = 0;
  const readVarint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= bytes.length || shift > 63) throw new Error("a truncated varint");
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < bytes.length) {
    const key = readVarint();
    const [field, wire] = [Math.floor(key / 8), key & 7];
    if (wire === 0) out.set(field, readVarint());
    else if (wire === 2) {
      const length = readVarint();
      if (at + length > bytes.length) throw new Error("a truncated field");
      out.set(field, bytes.subarray(at, (at += length)));
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error(`wire type ${wire}, which the message has none of`);
    if (at > bytes.length) throw new Error("a truncated field");
  }
  return out;
}

export function decodeRequest(bytes: Buffer): { service: string } {
  const service = fields(bytes).get(1);
  return { service: Buffer.isBuffer(service) ? service.toString("utf8") : "" };
}

/** The status of a HealthCheckResponse, as a number (absent: 0, UNKNOWN). */
export function decodeResponse(bytes: Buffer): { status: number } {
  const status = fields(bytes).get(1);
  if (status !== undefined && typeof status !== "number") throw new Error("its status is not a number");
  return { status: status ?? 0 };
}

/** A status as the protocol names it: SERVING, NOT_SERVING, ... (an unknown number as itself). */
export const statusName = (status: number) => servingStatuses[status] ?? `status ${status}`;
