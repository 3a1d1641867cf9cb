/**
 * The few protobuf bytes a gRPC probe needs, encoded and decoded by hand (no proto library):
 * the GetTask request messages and the google.rpc.Status carried in `grpc-status-details-bin`.
 * Protobuf wire format: https://protobuf.dev/programming-guides/encoding/
 */

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

function stringField(field: number, value: string): number[] {
  const bytes = Buffer.from(value, 'utf8');
  return [...varint((field << 3) | WIRE_LEN), ...varint(bytes.length), ...bytes];
}

/**
 * lf.a2a.v1.GetTaskRequest (A2A 1.0 proto): `string tenant = 1; string id = 2;`
 * (optional `int32 history_length = 3` is left unset). proto3 omits empty strings.
 */
export function encodeGetTaskV1(id: string, tenant?: string): Uint8Array {
  return Uint8Array.from([...(tenant ? stringField(1, tenant) : []), ...stringField(2, id)]);
}

/** a2a.v1.GetTaskRequest (A2A 0.3 proto): `string name = 1;` as `tasks/{id}`. */
export function encodeGetTaskV03(id: string): Uint8Array {
  return Uint8Array.from(stringField(1, `tasks/${id}`));
}

/** gRPC length-prefixed message: 1 byte compressed flag (0), 4 bytes big-endian length, message. */
export function frameGrpcMessage(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

interface RawField {
  field: number;
  wire: number;
  value: number | Uint8Array;
}

/** Reads the top-level fields of one message; throws on malformed input. */
function readFields(buf: Uint8Array): RawField[] {
  const fields: RawField[] = [];
  let pos = 0;
  const readVarint = (): number => {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++]!;
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
    }
    throw new Error('varint too long');
  };
  while (pos < buf.length) {
    const tag = readVarint();
    const wire = tag & 7;
    const field = Math.floor(tag / 8);
    if (wire === WIRE_VARINT) fields.push({ field, wire, value: readVarint() });
    else if (wire === WIRE_LEN) {
      const len = readVarint();
      if (pos + len > buf.length) throw new Error('truncated field');
      fields.push({ field, wire, value: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return fields;
}

const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';

export interface ErrorInfo {
  reason: string;
  domain: string;
}

/**
 * The first google.rpc.ErrorInfo inside a google.rpc.Status (`int32 code = 1; string message = 2;
 * repeated google.protobuf.Any details = 3;`, Any is `string type_url = 1; bytes value = 2;`,
 * ErrorInfo is `string reason = 1; string domain = 2;`). Undefined when absent or malformed.
 */
export function decodeStatusErrorInfo(statusBytes: Uint8Array): ErrorInfo | undefined {
  try {
    const text = (v: number | Uint8Array | undefined) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : '';
    for (const detail of readFields(statusBytes)) {
      if (detail.field !== 3 || !(detail.value instanceof Uint8Array)) continue;
      const any = readFields(detail.value);
      if (text(any.find((f) => f.field === 1)?.value) !== ERROR_INFO_TYPE) continue;
      const value = any.find((f) => f.field === 2)?.value;
      if (!(value instanceof Uint8Array)) continue;
      const info = readFields(value);
      return {
        reason: text(info.find((f) => f.field === 1)?.value),
        domain: text(info.find((f) => f.field === 2)?.value),
      };
    }
  } catch {
    // A malformed details blob proves nothing either way.
  }
  return undefined;
}
