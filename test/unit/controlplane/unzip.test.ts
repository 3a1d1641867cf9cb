import { crc32, deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readZip } from '../../controlplane/unzip.ts';

interface Input {
  name: string;
  data: Buffer;
  method: 0 | 8;
  mode?: number;
}

/** Writes a minimal ZIP archive (APPNOTE.TXT 4.3.7, 4.3.12, 4.3.16) for the reader to parse. */
function makeZip(inputs: Input[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const input of inputs) {
    const name = Buffer.from(input.name);
    const body = input.method === 8 ? deflateRawSync(input.data) : input.data;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(input.method, 8);
    local.writeUInt32LE(crc32(input.data), 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(input.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt8(3, 5); // made on Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(input.method, 10);
    central.writeUInt32LE(crc32(input.data), 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(input.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((input.mode ?? 0o644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(inputs.length, 8);
  end.writeUInt16LE(inputs.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

describe('readZip', () => {
  const text = Buffer.from('kubectl '.repeat(1000));

  it('reads deflated and stored entries with their Unix modes', () => {
    const zip = makeZip([
      { name: 'kubectl/kubectl', data: text, method: 8, mode: 0o755 },
      { name: 'helm/helm', data: Buffer.from('helm'), method: 0 },
    ]);
    const entries = readZip(zip);
    expect(entries.map((e) => e.name)).toEqual(['kubectl/kubectl', 'helm/helm']);
    expect(entries[0]!.data.equals(text)).toBe(true);
    expect(entries[0]!.mode).toBe(0o755);
    expect(entries[1]!.data.toString()).toBe('helm');
    expect(entries[1]!.mode).toBe(0o644);
  });

  it('refuses an entry whose bytes do not match its CRC-32', () => {
    const zip = makeZip([{ name: 'a', data: Buffer.from('abcdef'), method: 0 }]);
    zip[30 + 1] = 'X'.charCodeAt(0); // first data byte after the 30-byte header and 1-byte name
    expect(() => readZip(zip)).toThrow(/a fails its CRC-32 check/);
  });

  it('refuses something that is not a ZIP archive', () => {
    expect(() => readZip(Buffer.from('not a zip at all'))).toThrow(/not a ZIP archive/);
  });

  it('refuses an unsupported compression method', () => {
    const zip = makeZip([{ name: 'b', data: Buffer.from('x'), method: 0 }]);
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt16LE(12, central + 10); // bzip2
    expect(() => readZip(zip)).toThrow(/compression method 12/);
  });
});
