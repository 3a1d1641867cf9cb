/**
 * IP address and CIDR arithmetic on bytes (4 for IPv4, 16 for IPv6), with no DNS and no I/O.
 * The address policy uses it on the address a probe is about to connect to.
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface Cidr {
  /** The network address, 4 or 16 bytes. */
  bytes: Uint8Array;
  prefix: number;
  /** The CIDR as written in its canonical form, for messages. */
  text: string;
}

/** Parses an IPv4 or IPv6 literal into bytes; undefined when it is not one. */
export function parseIp(text: string): Uint8Array | undefined {
  const ip = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(ip)) return Uint8Array.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) return undefined;
  // A zone index (fe80::1%eth0) names an interface, not an address.
  const bare = ip.split('%', 1)[0]!;
  let head = bare;
  let tail4: number[] = [];
  const lastColon = bare.lastIndexOf(':');
  if (bare.includes('.', lastColon)) {
    // Embedded dotted quad in the last 32 bits (::ffff:1.2.3.4, 64:ff9b::1.2.3.4).
    tail4 = bare
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    head = bare.slice(0, lastColon + 1) + '0:0';
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':').filter((g) => g !== '') : []);
  const l = groups(left);
  const r = groups(right);
  const fill = right === undefined ? 0 : 8 - l.length - r.length;
  const words = [...l, ...Array<string>(fill).fill('0'), ...r].map((g) => parseInt(g, 16));
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[i * 2] = w >> 8;
    bytes[i * 2 + 1] = w & 0xff;
  });
  if (tail4.length === 4) bytes.set(tail4, 12);
  return bytes;
}

/** Formats 4 or 16 bytes as an address (IPv6 in the RFC 5952 canonical text form). */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push((bytes[i]! << 8) | bytes[i + 1]!);
  // The longest run of two or more zero words (the first one on a tie) becomes '::'.
  let best = { start: -1, len: 1 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.len) best = { start: i, len: j - i };
    i = j > i ? j : i + 1;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (best.start < 0) return hex(words);
  return `${hex(words.slice(0, best.start))}::${hex(words.slice(best.start + best.len))}`;
}

/** Parses `a.b.c.d/n` or `x::/n` (a bare address is a /32 or /128). Throws on bad input. */
export function parseCidr(text: string): Cidr {
  const [addr, len, extra] = text.trim().split('/');
  const bytes = addr === undefined ? undefined : parseIp(addr);
  const max = bytes?.length === 4 ? 32 : 128;
  const prefix = len === undefined ? max : /^\d{1,3}$/.test(len) ? Number(len) : NaN;
  if (!bytes || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
    throw new Error(`'${text}' is not a CIDR (expected e.g. 10.0.0.0/8 or fd00::/8)`);
  }
  return { bytes: maskBytes(bytes, prefix), prefix, text: `${formatIp(maskBytes(bytes, prefix))}/${prefix}` };
}

function maskBytes(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    out[i] = out[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/**
 * Whether `ip` lies in `cidr` (an IPv4 address never matches an IPv6 CIDR and vice versa). The
 * whole bytes of the prefix, then the bits left of the next one, compared in place: the policy
 * asks this of some 25 ranges for every address a probe connects to, and a masked copy of the
 * address per range was most of what a probe's address check allocated.
 */
export function cidrContains(cidr: Cidr, ip: Uint8Array): boolean {
  if (cidr.bytes.length !== ip.length) return false;
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (ip[i] !== cidr.bytes[i]) return false;
  const bits = cidr.prefix & 7;
  if (bits === 0) return true;
  // cidr.bytes is masked already (parseCidr), so only the address needs the mask.
  return (ip[whole]! & ((0xff << (8 - bits)) & 0xff)) === cidr.bytes[whole];
}

const NAT64 = parseCidr('64:ff9b::/96'); // RFC 6052 well-known prefix: the IPv4 address is the last 32 bits.
const MAPPED = parseCidr('::ffff:0:0/96'); // RFC 4291 2.5.5.2 IPv4-mapped IPv6 address.
const SIX_TO_FOUR = parseCidr('2002::/16'); // RFC 3056: the IPv4 address is bits 16..47.

/**
 * The IPv4 address that an IPv6 address stands for, when it embeds one that traffic may end up
 * at: IPv4-mapped (the kernel connects to the IPv4 address itself), NAT64 and 6to4. The policy
 * judges such an address by its IPv4 address too, so `::ffff:169.254.169.254` is refused.
 */
export function embeddedIpv4(ip: Uint8Array): Uint8Array | undefined {
  if (ip.length !== 16) return undefined;
  if (cidrContains(MAPPED, ip) || cidrContains(NAT64, ip)) return ip.slice(12, 16);
  if (cidrContains(SIX_TO_FOUR, ip)) return ip.slice(2, 6);
  return undefined;
}
