/**
 * The X.509 v3 extensions a signature's certificate chain is judged by, read from the DER of a
 * certificate (RFC 5280 section 4.2): node:crypto's X509Certificate exposes the CA flag but not
 * the key usage bits, the path length constraint, nor which extensions are critical. Pure: DER
 * bytes in, facts out; anything malformed throws (the caller refuses the chain).
 */

interface Tlv {
  tag: number;
  /** Content bytes. */
  value: Uint8Array;
  /** Offset just past this element. */
  end: number;
}

function readTlv(der: Uint8Array, offset: number): Tlv {
  if (offset + 2 > der.length) throw new Error('truncated DER');
  const tag = der[offset]!;
  let length = der[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    // DER: definite lengths only, at most 4 bytes (certificates are far smaller than 4 GiB).
    if (count === 0 || count > 4 || start + count > der.length) throw new Error('bad DER length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[start + i]!;
    start += count;
  }
  const end = start + length;
  if (end > der.length) throw new Error('truncated DER');
  return { tag, value: der.subarray(start, end), end };
}

function children(value: Uint8Array): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = 0; offset < value.length;) {
    const tlv = readTlv(value, offset);
    out.push(tlv);
    offset = tlv.end;
  }
  return out;
}

function decodeOid(bytes: Uint8Array): string {
  const parts: number[] = [];
  let n = 0;
  for (const b of bytes) {
    n = n * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(n);
      n = 0;
    }
  }
  const first = parts.shift() ?? 0;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...parts].join('.');
}

export const OID = {
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
} as const;

/** RFC 5280 section 4.2.1.3: the KeyUsage BIT STRING, bit 0 first. */
const KEY_USAGE_BITS = [
  'digitalSignature',
  'nonRepudiation',
  'keyEncipherment',
  'dataEncipherment',
  'keyAgreement',
  'keyCertSign',
  'cRLSign',
  'encipherOnly',
  'decipherOnly',
] as const;
export type KeyUsage = (typeof KEY_USAGE_BITS)[number];

export interface CertificateExtensions {
  /** Absent: the certificate has no KeyUsage extension. */
  keyUsage?: Set<KeyUsage>;
  /** basicConstraints cA (RFC 5280 section 4.2.1.9). */
  ca: boolean;
  /** basicConstraints pathLenConstraint, when given. */
  pathLength?: number;
  /** The uniformResourceIdentifier names of subjectAltName (RFC 5280 section 4.2.1.6). */
  uris: string[];
  /** OIDs of the extensions marked critical. */
  critical: string[];
}

function keyUsageOf(bitString: Uint8Array): Set<KeyUsage> {
  const set = new Set<KeyUsage>();
  // The first content byte counts the unused bits of the last byte.
  for (let bit = 0; bit < KEY_USAGE_BITS.length; bit++) {
    const byte = bitString[1 + (bit >> 3)];
    if (byte !== undefined && byte & (0x80 >> (bit & 7))) set.add(KEY_USAGE_BITS[bit]!);
  }
  return set;
}

/** Reads the extensions of a DER certificate. */
export function certificateExtensions(der: Uint8Array): CertificateExtensions {
  const cert = readTlv(der, 0);
  if (cert.tag !== 0x30) throw new Error('not a DER certificate');
  const tbs = children(cert.value)[0];
  if (!tbs || tbs.tag !== 0x30) throw new Error('not a DER certificate');
  const out: CertificateExtensions = { ca: false, uris: [], critical: [] };
  // extensions [3] EXPLICIT, the last optional field of TBSCertificate.
  const wrapper = children(tbs.value).find((t) => t.tag === 0xa3);
  if (!wrapper) return out;
  const list = readTlv(wrapper.value, 0);
  for (const ext of children(list.value)) {
    const fields = children(ext.value);
    const oid = fields[0]?.tag === 0x06 ? decodeOid(fields[0].value) : '';
    const critical = fields[1]?.tag === 0x01 && fields[1].value[0] !== 0;
    const octets = fields.at(-1);
    if (!oid || octets?.tag !== 0x04) throw new Error('malformed extension');
    if (critical) out.critical.push(oid);
    const inner = readTlv(octets.value, 0);
    if (oid === OID.keyUsage && inner.tag === 0x03) out.keyUsage = keyUsageOf(inner.value);
    else if (oid === OID.basicConstraints && inner.tag === 0x30) {
      const bc = children(inner.value);
      out.ca = bc.some((t) => t.tag === 0x01 && t.value[0] !== 0);
      const pathLen = bc.find((t) => t.tag === 0x02);
      if (pathLen) out.pathLength = pathLen.value.reduce((n, b) => n * 256 + b, 0);
    } else if (oid === OID.subjectAltName && inner.tag === 0x30) {
      for (const name of children(inner.value)) {
        // uniformResourceIdentifier [6] IMPLICIT IA5String
        if (name.tag === 0x86) out.uris.push(Buffer.from(name.value).toString('latin1'));
      }
    }
  }
  return out;
}
