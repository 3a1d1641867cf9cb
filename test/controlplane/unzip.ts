import { crc32, inflateRawSync } from 'node:zlib';

/** One file of a ZIP archive. */
export interface ZipEntry {
  name: string;
  data: Buffer;
  /** Unix permission bits when the archive was made on Unix (0 otherwise). */
  mode: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/**
 * Reads the files of a ZIP archive (APPNOTE.TXT sections 4.3.7, 4.3.12, 4.3.16): stored and
 * deflated entries, checked against their CRC-32. ZIP64 archives are refused: the archives this
 * reads are far below 4 GiB. Node has no unzip built in, and this keeps the test tooling free of
 * both an npm dependency and the `unzip` program.
 */
export function readZip(zip: Buffer): ZipEntry[] {
  const eocd = zip.lastIndexOf(u32(EOCD));
  if (eocd < 0) throw new Error('not a ZIP archive: no end of central directory record');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== CENTRAL) throw new Error(`ZIP central directory entry ${i} is corrupt`);
    const method = zip.readUInt16LE(at + 10);
    const crc = zip.readUInt32LE(at + 16);
    const compressedSize = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const madeOnUnix = zip.readUInt8(at + 5) === 3;
    const externalAttributes = zip.readUInt32LE(at + 38);
    const localOffset = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    if (compressedSize === 0xffffffff || size === 0xffffffff || localOffset === 0xffffffff) {
      throw new Error(`ZIP entry ${name} uses ZIP64, which is not supported`);
    }
    if (name.endsWith('/')) continue;
    if (zip.readUInt32LE(localOffset) !== LOCAL) throw new Error(`ZIP entry ${name} has no local header`);
    const start = localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
    const raw = zip.subarray(start, start + compressedSize);
    let data: Buffer;
    if (method === 0) data = Buffer.from(raw);
    else if (method === 8) data = inflateRawSync(raw);
    else throw new Error(`ZIP entry ${name} uses compression method ${method}, not stored or deflate`);
    if (data.length !== size || crc32(data) !== crc)
      throw new Error(`ZIP entry ${name} fails its CRC-32 check`);
    entries.push({ name, data, mode: madeOnUnix ? (externalAttributes >>> 16) & 0o777 : 0 });
  }
  return entries;
}

function u32(value: number): Buffer {
  const buf = Buffer.alloc(4);
  buf.writeUInt32LE(value);
  return buf;
}
