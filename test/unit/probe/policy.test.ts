import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROBE_LOOPBACK_ADVICE } from '../../../operator/controllers/agentcard/probes.ts';
import { cidrContains, embeddedIpv4, formatIp, parseCidr, parseIp } from '../../../operator/probe/ip.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { SOURCE_LOOPBACK_ADVICE } from '../../../operator/source/wiring.ts';
import { repoRoot } from '../../support/paths.ts';

describe('ip parsing', () => {
  it('parses IPv4, IPv6 (compressed, full, embedded dotted quad, bracketed, zoned)', () => {
    expect(Array.from(parseIp('10.1.2.3')!)).toEqual([10, 1, 2, 3]);
    expect(formatIp(parseIp('::1')!)).toBe('::1');
    expect(formatIp(parseIp('::')!)).toBe('::');
    expect(formatIp(parseIp('FD00:0EC2:0:0:0:0:0:0254')!)).toBe('fd00:ec2::254');
    // RFC 5952: the longest zero run is compressed, the first on a tie, never a single word.
    expect(formatIp(parseIp('2001:db8:0:0:1:0:0:1')!)).toBe('2001:db8::1:0:0:1');
    expect(formatIp(parseIp('2001:db8:0:1:1:1:1:1')!)).toBe('2001:db8:0:1:1:1:1:1');
    expect(formatIp(parseIp('1:0:0:2:0:0:0:3')!)).toBe('1:0:0:2::3');
    expect(formatIp(parseIp('::ffff:169.254.169.254')!)).toBe('::ffff:a9fe:a9fe');
    expect(formatIp(parseIp('[fe80::1]')!)).toBe('fe80::1');
    expect(formatIp(parseIp('fe80::1%eth0')!)).toBe('fe80::1');
    expect(formatIp(parseIp('1::')!)).toBe('1::');
    for (const bad of ['', 'localhost', '1.2.3', '256.1.1.1', '::g', '1:2:3:4:5:6:7:8:9']) {
      expect(parseIp(bad), bad).toBeUndefined();
    }
  });

  it('parses CIDRs canonically and rejects bad ones', () => {
    expect(parseCidr('10.1.2.3/8').text).toBe('10.0.0.0/8');
    expect(parseCidr('127.0.0.1').text).toBe('127.0.0.1/32');
    expect(parseCidr('fd00::1/8').text).toBe('fd00::/8');
    expect(parseCidr('0.0.0.0/0').prefix).toBe(0);
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/x', 'foo/8', '10.0.0.0/8/1', '10.0.0.0/-1']) {
      expect(() => parseCidr(bad), bad).toThrow(/is not a CIDR/);
    }
  });

  it('matches addresses to CIDRs of the same family only', () => {
    const c = parseCidr('172.16.0.0/12');
    expect(cidrContains(c, parseIp('172.31.255.255')!)).toBe(true);
    expect(cidrContains(c, parseIp('172.32.0.0')!)).toBe(false);
    expect(cidrContains(c, parseIp('::ffff:172.16.0.1')!)).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIp('8.8.8.8')!)).toBe(true);
    expect(cidrContains(parseCidr('10.0.0.0/7'), parseIp('11.255.0.1')!)).toBe(true);
  });

  it('matches every prefix length at its boundary, bit by bit', () => {
    // An address matches its own network at every prefix length, and stops matching as soon as
    // the prefix covers a bit it flips: the first bit past a whole byte included.
    for (const [base, bytes] of [
      ['203.0.113.77', 4],
      ['2001:db8:85a3::8a2e:370:7334', 16],
    ] as const) {
      const ip = parseIp(base)!;
      for (let prefix = 0; prefix <= bytes * 8; prefix++) {
        const cidr = parseCidr(`${base}/${prefix}`);
        expect(cidrContains(cidr, ip), `${base} in ${cidr.text}`).toBe(true);
        for (let bit = 0; bit < bytes * 8; bit++) {
          const flipped = Uint8Array.from(ip);
          flipped[bit >> 3] = flipped[bit >> 3]! ^ (0x80 >> (bit & 7));
          expect(cidrContains(cidr, flipped), `bit ${bit} flipped, in ${cidr.text}`).toBe(bit >= prefix);
        }
      }
    }
  });

  it('finds the IPv4 address inside mapped, NAT64 and 6to4 IPv6 addresses', () => {
    const v4 = (ip: string) => {
      const e = embeddedIpv4(parseIp(ip)!);
      return e && formatIp(e);
    };
    expect(v4('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(v4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(v4('64:ff9b::a9fe:a9fe')).toBe('169.254.169.254');
    expect(v4('2002:a9fe:a9fe::1')).toBe('169.254.169.254');
    expect(v4('2001:db8::1')).toBeUndefined();
    expect(v4('10.0.0.1')).toBeUndefined();
  });
});

describe('address policy', () => {
  const strict = createAddressPolicy();
  const loopbackAllowed = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
  const everything = createAddressPolicy({ allowCidrs: ['0.0.0.0/0', '::/0'] });

  it('allows public addresses', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(strict.check(ip), ip).toEqual({ allowed: true });
    }
  });

  it('always refuses link-local and cloud metadata addresses, even when allowed by CIDR', () => {
    const metadata = [
      '169.254.169.254', // AWS/GCP/Azure/OpenStack/Oracle/DigitalOcean IMDS
      '169.254.170.2', // AWS ECS task metadata
      '169.254.0.1',
      'fe80::1',
      'fd00:ec2::254', // AWS IMDS over IPv6
      'fd20:ce::254', // GCP metadata over IPv6
      '100.100.100.200', // Alibaba Cloud
      '168.63.129.16', // Azure WireServer
      '::ffff:169.254.169.254', // IPv4-mapped
      '::ffff:a9fe:a9fe',
      '64:ff9b::169.254.169.254', // NAT64
      '2002:a9fe:a9fe::', // 6to4
    ];
    for (const ip of metadata) {
      for (const policy of [strict, everything]) {
        const v = policy.check(ip);
        expect(v.allowed, ip).toBe(false);
        if (!v.allowed) {
          expect(v.category).toBe('link-local/cloud metadata');
          expect(v.message).toMatch(/always refused/);
        }
      }
    }
  });

  it('always refuses unspecified, multicast and broadcast addresses', () => {
    for (const ip of [
      '0.0.0.0',
      '0.1.2.3',
      '::',
      '224.0.0.1',
      '239.255.255.250',
      '255.255.255.255',
      'ff02::1',
    ]) {
      expect(everything.check(ip).allowed, ip).toBe(false);
    }
  });

  it('refuses loopback, private, shared, ULA and reserved ranges unless allowed', () => {
    const cases: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['10.96.0.1', 'private'], // a typical Kubernetes service IP
      ['172.16.5.4', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['fd12:3456::1', 'private'],
      ['192.0.2.1', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['240.0.0.1', 'reserved'],
      ['2001:db8::1', 'reserved'],
    ];
    for (const [ip, category] of cases) {
      const v = strict.check(ip);
      expect(v, ip).toMatchObject({ allowed: false, category });
      expect(everything.check(ip), ip).toEqual({ allowed: true });
    }
    expect(loopbackAllowed.check('127.0.0.1')).toEqual({ allowed: true });
    expect(loopbackAllowed.check('::ffff:127.0.0.1')).toEqual({ allowed: true });
    expect(loopbackAllowed.check('::1').allowed).toBe(false);
    expect(loopbackAllowed.check('10.0.0.1').allowed).toBe(false);
  });

  it('allows exactly the allowed CIDR, and refuses extra denied ranges', () => {
    const p = createAddressPolicy({ allowCidrs: ['10.1.0.0/16'], denyCidrs: ['203.0.0.0/16'] });
    expect(p.check('10.1.200.3')).toEqual({ allowed: true });
    expect(p.check('10.2.0.1').allowed).toBe(false);
    expect(p.check('203.0.5.5')).toMatchObject({ allowed: false, category: 'denied by policy' });
    expect(p.allowCidrs).toEqual(['10.1.0.0/16']);
    // Allowing the shared range does not open the Alibaba metadata address inside it.
    expect(createAddressPolicy({ allowCidrs: ['100.64.0.0/10'] }).check('100.100.100.200').allowed).toBe(
      false,
    );
  });

  it('refuses what is not an address, and rejects bad CIDRs when built', () => {
    expect(strict.check('metadata.google.internal')).toMatchObject({ allowed: false, category: 'invalid' });
    expect(() => createAddressPolicy({ allowCidrs: ['10.0.0.0/99'] })).toThrow(
      /'10.0.0.0\/99' is not a CIDR/,
    );
  });
});

describe("the operator's message for a refused address", () => {
  const allowSetting = 'Helm value probes.allowCidrs, flag --probe-allow-cidr';
  const probes = createAddressPolicy({ allowSetting, loopbackAdvice: PROBE_LOOPBACK_ADVICE });
  const sources = createAddressPolicy({ allowSetting, loopbackAdvice: SOURCE_LOOPBACK_ADVICE });

  it('says a loopback URL is the agent’s own and must be replaced, without suggesting allowCidrs', () => {
    for (const [ip, range] of [
      ['127.0.0.1', '127.0.0.0/8'],
      ['127.1.2.3', '127.0.0.0/8'],
      ['::1', '::1/128'],
    ] as const) {
      const v = probes.check(ip);
      expect(v, ip).toMatchObject({ allowed: false, category: 'loopback', namespaceLiftable: false });
      expect(v.allowed === false && v.message, ip).toBe(
        `${ip} is loopback (${range}), refused: ${PROBE_LOOPBACK_ADVICE}`,
      );
      expect(v.allowed === false && v.message, ip).not.toMatch(/allowCidrs|allow-cidr|allowed CIDR/);
    }
    // An IPv4-mapped loopback address is judged by its IPv4 address, with the same advice.
    const mapped = probes.check('::ffff:127.0.0.1');
    expect(mapped.allowed === false && mapped.message).toBe(
      `::ffff:127.0.0.1 (127.0.0.1) is loopback (127.0.0.0/8), refused: ${PROBE_LOOPBACK_ADVICE}`,
    );
    expect(PROBE_LOOPBACK_ADVICE).toContain('spec.card.supportedInterfaces');
    expect(PROBE_LOOPBACK_ADVICE).toContain('overlay');
    const source = sources.check('127.0.0.1');
    expect(source.allowed === false && source.message).toBe(
      `127.0.0.1 is loopback (127.0.0.0/8), refused: ${SOURCE_LOOPBACK_ADVICE}`,
    );
    expect(SOURCE_LOOPBACK_ADVICE).toContain('spec.source.service');
  });

  it('names probes.allowCidrs for a private address, which allowing its range does fix', () => {
    const v = probes.check('10.244.0.5');
    expect(v.allowed === false && v.message).toBe(
      `10.244.0.5 is private (10.0.0.0/8), refused unless an allowed CIDR covers it (${allowSetting})`,
    );
    const allowed = createAddressPolicy({
      allowCidrs: ['10.244.0.0/16'],
      allowSetting,
      loopbackAdvice: PROBE_LOOPBACK_ADVICE,
    });
    expect(allowed.check('10.244.0.5')).toEqual({ allowed: true });
  });

  it('still names the allow setting for loopback where none is given (the CLI, on the agent’s machine)', () => {
    const cli = createAddressPolicy({ allowSetting: '--allow-cidr' });
    const v = cli.check('127.0.0.1');
    expect(v.allowed === false && v.message).toBe(
      '127.0.0.1 is loopback (127.0.0.0/8), refused unless an allowed CIDR covers it (--allow-cidr)',
    );
  });

  it('is the message docs/troubleshooting.md quotes', () => {
    const doc = readFileSync(join(repoRoot, 'docs/troubleshooting.md'), 'utf8').replace(/\s+/g, ' ');
    const v = probes.check('127.0.0.1');
    expect(doc).toContain(`refused by the address policy: ${v.allowed === false ? v.message : ''}`);
  });
});
