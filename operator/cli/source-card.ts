/**
 * The agent's own card for an AgentCard manifest with spec.source (docs/adopt.md), for the CLI's
 * validate, render and sign: read from a file (`--source-card FILE`, the card as the agent
 * serves it) or fetched on request (`--fetch`, with the operator's fetch code under the same
 * address policy, limits and no redirects; `--allow-cidr` allows private or loopback ranges as
 * `probe` and `discover` do). The CLI never fetches unasked: a card taken from an agent cannot
 * be rendered or signed offline without the agent's card, and says so.
 *
 * The merge itself is the controller's (operator/source/resolve.ts).
 */
import { describeError, UserError } from '../errors.ts';
import { AgentCardResourceSpecSchema, type Source } from '../card/resource.ts';
import { createAddressPolicy } from '../probe/policy.ts';
import { fetchSourceCard, MAX_SOURCE_BYTES, SOURCE_REASONS, sourceUrls } from '../source/fetch.ts';
import { checkSignature } from '../source/tracker.ts';
import { needsSourceCard, parseDocuments, readInput } from './input.ts';

/** The flags, for parseFlags (node:util parseArgs options). */
export const SOURCE_CARD_FLAGS = {
  'source-card': { type: 'string' },
  fetch: { type: 'boolean' },
  'allow-cidr': { type: 'string', multiple: true },
} as const;

export const SOURCE_CARD_USAGE = `  --source-card FILE     for an AgentCard with spec.source: the agent's own card (JSON, as the
                         agent serves it), merged with spec.remove and spec.card as the operator does
  --fetch                for an AgentCard with spec.source: fetch the agent's card from spec.source
                         (url, or service with a port number, reachable from inside the cluster)
  --allow-cidr CIDR      with --fetch: allow this private/loopback range (repeatable); link-local
                         and cloud metadata addresses are always refused
`;

export interface SourceCardOptions {
  sourceCard?: string;
  fetch?: boolean;
  allowCidrs?: string[];
}

/** The options of parsed flags; refuses --source-card with --fetch, and --allow-cidr without it. */
export function sourceCardOptions(values: {
  'source-card'?: string;
  fetch?: boolean;
  'allow-cidr'?: string[];
}): SourceCardOptions {
  if (values['source-card'] !== undefined && values.fetch)
    throw new UserError('--source-card and --fetch exclude each other (give the card, or fetch it)', 2);
  if (values['allow-cidr']?.length && !values.fetch) throw new UserError('--allow-cidr goes with --fetch', 2);
  return {
    ...(values['source-card'] !== undefined ? { sourceCard: values['source-card'] } : {}),
    ...(values.fetch ? { fetch: true } : {}),
    ...(values['allow-cidr']?.length ? { allowCidrs: values['allow-cidr'] } : {}),
  };
}

export const wantsSourceCard = (opts: SourceCardOptions | undefined): boolean =>
  !!opts && (opts.sourceCard !== undefined || !!opts.fetch);

/** The card of a --source-card file: one JSON (or YAML) object, at most MAX_SOURCE_BYTES. */
async function readSourceCard(file: string): Promise<Record<string, unknown>> {
  const source = file === '-' ? 'standard input' : file;
  const docs = parseDocuments(await readInput(file, MAX_SOURCE_BYTES), source);
  const card = docs.length === 1 && docs[0]!.type === 'card' ? docs[0]!.card : undefined;
  if (!card || typeof card !== 'object' || Array.isArray(card))
    throw new UserError(
      `--source-card ${source}: not an agent card (one JSON object, as the agent serves it)`,
    );
  return card as Record<string, unknown>;
}

/**
 * The agent's card for the manifest `label` (its spec.source already validated), as served:
 * from the file or fetched. Throws a one-line UserError naming what to pass when neither is
 * given, or why the fetch failed.
 */
export async function sourceCardFor(
  label: string,
  resource: Record<string, unknown>,
  opts: SourceCardOptions | undefined,
): Promise<{ served: Record<string, unknown>; from: string }> {
  if (!wantsSourceCard(opts)) throw needsSourceCard(label);
  const parsed = AgentCardResourceSpecSchema.safeParse(resource.spec);
  const source = parsed.success ? parsed.data.source : undefined;
  if (!source) throw new UserError(`${label}: spec.source is not valid (see agentcard validate)`);
  const { served, from } =
    opts!.sourceCard !== undefined
      ? {
          served: await readSourceCard(opts!.sourceCard),
          from: opts!.sourceCard === '-' ? 'standard input' : opts!.sourceCard,
        }
      : await fetchCard(label, resource, source, opts!.allowCidrs ?? []);
  // As the operator: the agent's own signatures are checked, never published (docs/adopt.md).
  const signature = await checkSignature(served, source.verification);
  if (source.verification?.required && signature.result !== 'Verified') {
    const why =
      signature.result === 'Unsigned'
        ? 'is not signed'
        : `has no signature valid under its keys (${signature.message ?? 'invalid'})`;
    throw new UserError(
      `${label}: ${from}: spec.source.verification.required is set and the card ${why} (${SOURCE_REASONS.signature})`,
    );
  }
  return { served, from };
}

async function fetchCard(
  label: string,
  resource: Record<string, unknown>,
  source: Source,
  allowCidrs: string[],
): Promise<{ served: Record<string, unknown>; from: string }> {
  if (source.service && typeof source.service.port === 'string') {
    throw new UserError(
      `${label}: --fetch cannot resolve the Service port name "${source.service.port}" (the operator reads it from the API server); give --source-card FILE, or the port number`,
      2,
    );
  }
  const metadata = resource.metadata as { namespace?: unknown } | undefined;
  const namespace = typeof metadata?.namespace === 'string' ? metadata.namespace : 'default';
  let policy;
  try {
    policy = createAddressPolicy({ allowCidrs, allowSetting: '--allow-cidr' });
  } catch (err) {
    throw new UserError(`--allow-cidr: ${describeError(err)}`, 2);
  }
  const result = await fetchSourceCard(sourceUrls(source, namespace), { policy });
  if (!result.ok) {
    throw new UserError(
      `${label}: cannot fetch the agent's card: ${result.url}: ${result.message} (${result.reason})`,
    );
  }
  return { served: result.served, from: result.url };
}
