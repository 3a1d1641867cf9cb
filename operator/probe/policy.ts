/**
 * Which addresses a probe may connect to. The operator sends requests to URLs that any
 * namespace's users write, so an AgentCard must not turn it into a way to reach the cloud
 * metadata service, the node, or in-cluster services. The policy is set by the cluster
 * administrator (operator flags / Helm values), never by an AgentCard, and it is applied to the
 * address actually connected to, after DNS resolution (see connect.ts).
 */
import { type Cidr, cidrContains, embeddedIpv4, formatIp, parseCidr, parseIp } from './ip.ts';

export type AddressVerdict =
  | { allowed: true }
  | {
      allowed: false;
      category: string;
      message: string;
      /**
       * Whether the address is only "refused unless allowed" (private, reserved, a deny CIDR),
       * so that the namespace rule (ownership.ts) may still allow it; loopback, link-local and
       * metadata addresses are never liftable by it.
       */
      namespaceLiftable: boolean;
      /** The range that refused it, e.g. 10.0.0.0/8. */
      range: string;
    };

export interface AddressPolicy {
  /** Judges one resolved IP address (IPv4, IPv6, or IPv4-mapped IPv6). */
  check(ip: string): AddressVerdict;
  /** The CIDRs the administrator allowed, canonical, for logs. */
  readonly allowCidrs: readonly string[];
}

interface Range {
  cidr: Cidr;
  category: string;
}

const ranges = (category: string, cidrs: string[]): Range[] =>
  cidrs.map((c) => ({ cidr: parseCidr(c), category }));

/**
 * Always refused, whatever the allow list says.
 * - 169.254.0.0/16 and fe80::/10: link-local (RFC 3927, RFC 4291 2.5.6). The instance metadata
 *   services of AWS, GCP, Azure, OpenStack, Oracle Cloud and DigitalOcean answer at
 *   169.254.169.254; AWS ECS task metadata at 169.254.170.2.
 * - fd00:ec2::/32: AWS's IPv6 instance services (IMDS at fd00:ec2::254 on Nitro instances).
 * - fd20:ce::254/128: GCP's metadata server over IPv6.
 * - 100.100.100.200/32: Alibaba Cloud ECS metadata service.
 * - 168.63.129.16/32: Azure's WireServer / host platform endpoint (a public address, reachable
 *   from every VM, that hands out VM extension configuration).
 * - 0.0.0.0/8 and ::/128: "this host" (RFC 1122 3.2.1.3; Linux connects 0.0.0.0 to loopback).
 * - 224.0.0.0/4, 255.255.255.255/32, ff00::/8: multicast and broadcast are not unicast peers.
 */
const ALWAYS_REFUSED: Range[] = [
  ...ranges('link-local/cloud metadata', [
    '169.254.0.0/16',
    'fe80::/10',
    'fd00:ec2::/32',
    'fd20:ce::254/128',
    '100.100.100.200/32',
    '168.63.129.16/32',
  ]),
  ...ranges('unspecified', ['0.0.0.0/8', '::/128']),
  ...ranges('multicast/broadcast', ['224.0.0.0/4', '255.255.255.255/32', 'ff00::/8']),
];

/**
 * Refused unless an allowed CIDR covers the address: the node itself, the cluster's pod and
 * service networks (which live in these ranges on every common distribution) and other
 * non-public destinations.
 */
const REFUSED_UNLESS_ALLOWED: Range[] = [
  ...ranges('loopback', ['127.0.0.0/8', '::1/128']),
  // RFC 1918 private networks, RFC 6598 shared (carrier-grade NAT) space, RFC 4193 unique local.
  ...ranges('private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7']),
  // RFC 6890 special-purpose blocks that are not the public Internet.
  ...ranges('reserved', [
    '192.0.0.0/24',
    '192.0.2.0/24',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '240.0.0.0/4',
    '100::/64',
    '2001:db8::/32',
  ]),
];

export interface AddressPolicyOptions {
  /** CIDRs that lift the "refused unless allowed" rule (never the "always refused" one). */
  allowCidrs?: string[];
  /** Extra CIDRs to refuse unless allowed, e.g. a cluster's pod or service range in public space. */
  denyCidrs?: string[];
  /**
   * The setting that lifts a "refused unless allowed" verdict, named in its message so that a
   * refused probe says how to allow it (e.g. "--allow-cidr"). Default: no name.
   */
  allowSetting?: string;
  /**
   * What a refused loopback address's message says instead of the allow setting. Where the
   * policy runs in the operator, loopback is the operator's own Pod, never the agent: a loopback
   * URL is the agent's own loopback, written by someone who saw the agent from inside (an SDK's
   * card names the address it listens on), and allowing the range fixes nothing. The CLI, on the
   * agent's own machine, leaves it unset: there `--allow-cidr 127.0.0.0/8` is the fix.
   */
  loopbackAdvice?: string;
}

/** Builds the policy. Throws an Error naming the bad CIDR when one does not parse. */
export function createAddressPolicy(opts: AddressPolicyOptions = {}): AddressPolicy {
  const allow = (opts.allowCidrs ?? []).map(parseCidr);
  const refused = [...REFUSED_UNLESS_ALLOWED, ...ranges('denied by policy', opts.denyCidrs ?? [])];
  const setting = opts.allowSetting ? ` (${opts.allowSetting})` : '';
  const judge = (ip: Uint8Array, shown: string): AddressVerdict => {
    const always = ALWAYS_REFUSED.find((r) => cidrContains(r.cidr, ip));
    if (always) {
      return {
        allowed: false,
        category: always.category,
        message: `${shown} is ${always.category} (${always.cidr.text}), always refused`,
        namespaceLiftable: false,
        range: always.cidr.text,
      };
    }
    const range = refused.find((r) => cidrContains(r.cidr, ip));
    if (range && !allow.some((a) => cidrContains(a, ip))) {
      const advice =
        range.category === 'loopback' && opts.loopbackAdvice
          ? `refused: ${opts.loopbackAdvice}`
          : `refused unless an allowed CIDR covers it${setting}`;
      return {
        allowed: false,
        category: range.category,
        message: `${shown} is ${range.category} (${range.cidr.text}), ${advice}`,
        // Loopback is the operator's own Pod (or the node, with hostNetwork): never a workload of
        // the card's namespace, whatever an object says.
        namespaceLiftable: range.category !== 'loopback',
        range: range.cidr.text,
      };
    }
    return { allowed: true };
  };
  return {
    allowCidrs: allow.map((c) => c.text),
    check(text: string): AddressVerdict {
      const ip = parseIp(text);
      if (!ip)
        return {
          allowed: false,
          category: 'invalid',
          message: `'${text}' is not an IP address`,
          namespaceLiftable: false,
          range: '',
        };
      // An IPv6 address that embeds an IPv4 one must pass on both counts.
      const v4 = embeddedIpv4(ip);
      if (v4) {
        const inner = judge(v4, `${text} (${formatIp(v4)})`);
        if (!inner.allowed) return inner;
      }
      return judge(ip, text);
    },
  };
}
