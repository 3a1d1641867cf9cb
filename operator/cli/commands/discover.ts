/**
 * `agentcard discover URL...`: find agents from an origin, a card or an AI Catalog (nested
 * catalogs followed), and check every card against keys the user trusts. Exit 0 when every
 * listed card is valid and verified (and, with --probe, reachable) and nothing failed, 1
 * otherwise, 2 on a usage error. Flags and exit codes follow `agentcard probe`.
 */
import { readFile } from 'node:fs/promises';
import { MAX_JWKS_BYTES, parseFlags, readInput } from '../input.ts';
import { parseJwks } from '../../card/jwks.ts';
import type { JWK } from '../../card/sign.ts';
import { UserError, describeError } from '../../errors.ts';
import { type AddressPolicy, createAddressPolicy } from '../../probe/policy.ts';
import { DirectoryCache } from '../../discover/cache.ts';
import { DEFAULT_LIMITS, discover } from '../../discover/discover.ts';
import { formatTable } from '../../discover/format.ts';
import { redactUrl } from '../../discover/plan.ts';
import { parseDuration } from './probe.ts';
import { identityPatterns, readTrustBundle, TRUST_FLAGS } from '../trust-flags.ts';
import type { X509Certificate } from 'node:crypto';
import { formatServed, parseOriginal, servedAgainstOriginal } from '../served-original.ts';

const USAGE = `usage: agentcard discover URL [URL ...] [options]

Finds A2A agents and checks every card against keys you trust. URL is an origin (its
/.well-known/ai-catalog.json is read, else its /.well-known/agent-card.json), an agent card, or
an AI Catalog; nested catalogs are followed. Redirects are never followed. Exit 0 when every
listed card is valid and verified (and reachable, with --probe), 1 otherwise, 2 on usage errors.

trust:
  --jwks FILE|URL        trusted public keys, a JWKS or one JWK (repeatable)
  --trust-bundle FILE|URL  trusted CA certificates (PEM) for signatures carrying an x5c
                         certificate chain (repeatable); needs --identity
  --identity PATTERN     a signer identity you trust: the leaf certificate's URI SAN, e.g.
                         spiffe://example.org/ns/team-a/sa/agent, or ending in /* for every
                         identity below that path (repeatable)
  --trust-jku            also follow a signature's jku, when it is https on the document's own host
  --ca FILE              extra trusted CA certificates (PEM) for https

what clients receive:
  --signed-original FILE the signed card as published: compare what URL serves with it and
                         verify it against --jwks (verdict ServedAsSigned, Rewritten with the
                         JSON paths that differ, SignatureBroken or Unreachable); one URL, an
                         origin or the card's URL; exit 0 only when served as signed

what to list:
  --probe                prove each interface with a real A2A call (as agentcard probe does)
  --skill S              cards with a skill whose id or name is S (repeatable: any of them)
  --tag T                cards with a skill tag or catalog tag T (repeatable)
  --text W               cards whose name, description or skills mention W (repeatable)
  --output text|json     output format (default text)

network and limits:
  --allow-cidr CIDR      allow this private/loopback range (repeatable); link-local and cloud
                         metadata addresses are always refused
  --cache DIR            keep documents between runs, honouring ETag and Cache-Control
  --timeout D            deadline of each request and each probe (default 10s)
  --deadline D           deadline of the whole discovery (default ${DEFAULT_LIMITS.deadlineMs / 1000}s)
  --max-depth N          nested catalogs followed (default ${DEFAULT_LIMITS.maxDepth})
  --max-documents N      documents fetched in all (default ${DEFAULT_LIMITS.maxDocuments})
  --max-bytes N          largest document in bytes (default ${DEFAULT_LIMITS.maxBytes})
  --concurrency N        fetches in flight (default ${DEFAULT_LIMITS.concurrency})
`;

function positiveInt(flag: string, text: string | undefined, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > max)
    throw new UserError(`--${flag} wants a whole number from 1 to ${max}, not '${text}'`, 2);
  return n;
}

const isUrl = (text: string) => /^https?:\/\//i.test(text);

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      jwks: { type: 'string', multiple: true },
      'trust-jku': { type: 'boolean' },
      ...TRUST_FLAGS,
      ca: { type: 'string' },
      'signed-original': { type: 'string' },
      probe: { type: 'boolean' },
      skill: { type: 'string', multiple: true },
      tag: { type: 'string', multiple: true },
      text: { type: 'string', multiple: true },
      output: { type: 'string', short: 'o', default: 'text' },
      'allow-cidr': { type: 'string', multiple: true },
      cache: { type: 'string' },
      timeout: { type: 'string' },
      deadline: { type: 'string' },
      'max-depth': { type: 'string' },
      'max-documents': { type: 'string' },
      'max-bytes': { type: 'string' },
      concurrency: { type: 'string' },
    },
    USAGE,
    true,
  );
  if (!parsed) return 0;
  const { values: flags, positionals: urls } = parsed;
  if (urls.length === 0)
    throw new UserError('nothing to discover: give a URL (see agentcard discover --help)', 2);
  for (const url of urls) {
    if (!isUrl(url)) throw new UserError(`'${redactUrl(url)}' is not an http(s) URL`, 2);
  }
  if (flags.output !== 'text' && flags.output !== 'json') {
    throw new UserError(`--output must be text or json, not '${flags.output}'`, 2);
  }
  let policy: AddressPolicy;
  try {
    policy = createAddressPolicy({ allowCidrs: flags['allow-cidr'] ?? [] });
  } catch (err) {
    throw new UserError(`--allow-cidr: ${describeError(err)}`, 2);
  }
  const timeoutMs = flags.timeout === undefined ? DEFAULT_LIMITS.timeoutMs : parseDuration(flags.timeout);
  const limits = {
    timeoutMs,
    ...(flags.deadline !== undefined ? { deadlineMs: parseDuration(flags.deadline) } : {}),
    ...optional('maxDepth', positiveInt('max-depth', flags['max-depth'], 64)),
    ...optional('maxDocuments', positiveInt('max-documents', flags['max-documents'], 1_000_000)),
    ...optional('maxBytes', positiveInt('max-bytes', flags['max-bytes'], 64 * 1024 * 1024)),
    ...optional('concurrency', positiveInt('concurrency', flags.concurrency, 256)),
  };

  const keys: JWK[] = [];
  const jwksUrls: string[] = [];
  for (const source of flags.jwks ?? []) {
    if (isUrl(source)) jwksUrls.push(source);
    else keys.push(...parseJwks(await readInput(source, MAX_JWKS_BYTES), source).keys);
  }
  const bundles = flags['trust-bundle'] ?? [];
  const identities = identityPatterns(bundles, flags.identity ?? []);
  const roots: X509Certificate[] = [];
  const bundleUrls: string[] = [];
  for (const source of bundles) {
    if (isUrl(source)) bundleUrls.push(source);
    else roots.push(...(await readTrustBundle(source)));
  }
  let ca: string | undefined;
  if (flags.ca !== undefined) {
    try {
      ca = await readFile(flags.ca, 'utf8');
    } catch (err) {
      throw new UserError(
        `--ca ${flags.ca}: cannot read (${(err as { code?: string }).code ?? describeError(err)})`,
        2,
      );
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----'))
      throw new UserError(`--ca ${flags.ca}: no PEM certificate in it`, 2);
  }

  if (flags['signed-original'] !== undefined) {
    const file = flags['signed-original'];
    if (urls.length !== 1) throw new UserError('--signed-original compares one URL with one card', 2);
    if (!keys.length)
      throw new UserError("--signed-original needs the card's own public keys as --jwks FILE", 2);
    const original = await readInput(file, limits.maxBytes ?? DEFAULT_LIMITS.maxBytes);
    parseOriginal(original, file);
    const served = await servedAgainstOriginal({
      url: urls[0]!,
      original,
      keys: { keys },
      policy,
      ...(ca ? { ca } : {}),
      timeoutMs,
      maxBytes: limits.maxBytes ?? DEFAULT_LIMITS.maxBytes,
    });
    process.stdout.write(
      flags.output === 'json' ? JSON.stringify(served, null, 2) + '\n' : formatServed(served),
    );
    return served.ok ? 0 : 1;
  }

  const report = await discover({
    urls,
    jwks: { keys },
    jwksUrls,
    trustJku: flags['trust-jku'] ?? false,
    ...(bundles.length ? { certificates: { roots, identities, bundleUrls } } : {}),
    policy,
    ca,
    limits,
    cache: flags.cache ? new DirectoryCache(flags.cache) : undefined,
    probe: flags.probe ? { timeoutMs } : undefined,
    filter: { skills: flags.skill, tags: flags.tag, texts: flags.text },
  });

  if (flags.output === 'json') {
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } else {
    process.stdout.write(formatTable(report));
    if (report.errors.some((e) => e.code === 'blocked') && !flags['allow-cidr']?.length) {
      process.stderr.write(
        'agentcard discover: hint: --allow-cidr (e.g. 127.0.0.0/8) allows private or loopback ranges\n',
      );
    }
    if (
      !keys.length &&
      !jwksUrls.length &&
      !bundles.length &&
      report.cards.some((c) => c.signature.status === 'untrusted')
    ) {
      process.stderr.write('agentcard discover: hint: give the keys you trust with --jwks FILE|URL\n');
    }
  }
  return report.ok ? 0 : 1;
}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}
