/**
 * The reconcile decision for one AgentCatalog or ClusterAgentCatalog, without any API call:
 * given the catalog, the AgentCards in its scope (from the cache), its signing keys and the live
 * ConfigMaps, compute the ConfigMaps to apply (only those whose bytes change; partitions no
 * longer needed are emptied) and the controller-owned status (and whether it differs).
 *
 * Signing (AI Catalog spec, top-level `signature`): a detached JWS over the RFC 8785 form of
 * each document without `signature`, by the first configured key; every configured key's
 * public part goes to jwks.json, so verifiers can trust the next key before a rotation. As for
 * cards (../resign.ts), a published signature is kept while it still certifies the same payload
 * with the same key: ES256 signatures are randomized, and signing again on every reconcile would
 * rewrite the ConfigMap each time.
 */
import { createHash } from 'node:crypto';
import {
  API_VERSION,
  CATALOG_KIND,
  CATALOG_LABEL,
  catalogConfigMapName,
  catalogLabelValue,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  type CatalogKind,
} from '../../api/names.ts';
import { canonicalJson } from '../../card/jcs.ts';
import { publicJwks, type SigningKey } from '../../card/sign.ts';
import { buildCatalog, CATALOG_FILES, previousEntries, type BuiltDocument } from '../../catalog/build.ts';
import { buildEntry, type BuiltEntry, type CardView } from '../../catalog/entries.ts';
import {
  AgentCatalogSpecSchema,
  ClusterAgentCatalogSpecSchema,
  type CatalogSpec,
} from '../../catalog/resource.ts';
import { matchesSelector } from '../../catalog/selector.ts';
import { loadTrust, verifyPublishedCard, type TrustSources } from '../../catalog/trust.ts';
import { addTrustManifests } from '../../catalog/trust-manifest.ts';
import { catalogPayload, parseCompactDetached, signCatalog, verifyCatalog } from '../../catalog/signature.ts';
import { getCondition, setCondition, type ConditionInput } from '../conditions.ts';
import {
  configMapUpToDate,
  DEFAULT_CACHE_MAX_AGE_SECONDS,
  type ConfigMapObject,
  type LiveConfigMap,
} from '../configmap.ts';
import { loadSigningKeys, signatureStatus, type SecretView } from '../plan.ts';
import { sameChain } from '../resign.ts';
import { canonicalJson as statusJson } from '../status.ts';
import type { Condition, ConditionStatus } from '../types.ts';
import type { CatalogStatus } from '../../catalog/resource.ts';

/** A catalog as the informer holds it (raw JSON from the API server). */
export interface CatalogObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
  };
  spec?: unknown;
  status?: unknown;
}

export type CatalogControllerStatus = Omit<CatalogStatus, 'conditions'> & { conditions?: Condition[] };

export interface CatalogPlanInput {
  kind: CatalogKind;
  catalog: CatalogObject;
  /** Where the ConfigMaps go: the catalog's namespace, or the operator's for a ClusterAgentCatalog. */
  publishNamespace: string;
  /** AgentCards in reach: the catalog's namespace, or every watched namespace. */
  cards: readonly CardView[];
  /** Labels of a namespace (namespaceSelector); undefined when unknown. */
  namespaceLabels: (namespace: string) => Readonly<Record<string, string>> | undefined;
  secrets: ReadonlyMap<string, SecretView | undefined>;
  /** The live ConfigMap of that name in publishNamespace. */
  liveConfigMap: (name: string) => LiveConfigMap | undefined;
  /** Names of the live ConfigMaps this catalog published (for stale partitions). */
  liveNames: readonly string[];
  now: Date;
  publishError?: string;
  /** The documents spec.trust references, as the controller read them. */
  trustSources?: TrustSources;
  /**
   * With publishError: the API server refused a ConfigMap itself (422 Invalid), which retrying
   * cannot change; reported as PublishRejected and not retried until the catalog or its cards change.
   */
  publishRejected?: boolean;
}

export interface CatalogPlan {
  generation: number;
  spec?: CatalogSpec;
  /** ConfigMaps to apply (those whose bytes change). */
  configMaps: ConfigMapObject[];
  status: CatalogControllerStatus;
  statusChanged: boolean;
  ready: ConditionStatus;
}

const MAX_SKIPPED = 20;
const OWNED_FIELDS = [
  'observedGeneration',
  'conditions',
  'entries',
  'nested',
  'digest',
  'bytes',
  'partitions',
  'configMap',
  'namespace',
  'skipped',
  'unverified',
  'signatures',
] as const;

export function ownedCatalogStatus(status: unknown): CatalogControllerStatus {
  const out: Record<string, unknown> = {};
  if (status && typeof status === 'object') {
    for (const f of OWNED_FIELDS) {
      const v = (status as Record<string, unknown>)[f];
      if (v !== undefined && v !== null) out[f] = v;
    }
  }
  return out as CatalogControllerStatus;
}

const formatSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const digestOf = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

/** The catalog's own identifier (partitions and the page title derive from it). */
export function catalogIdentifier(publisher: string, kind: CatalogKind, catalog: CatalogObject): string {
  return `urn:air:${publisher}:${kind === CATALOG_KIND ? catalog.metadata.namespace : '_cluster'}:${catalog.metadata.name}`;
}

/** The published text of a document: its signature kept when still valid, else a new one. */
async function signedText(
  doc: BuiltDocument,
  key: SigningKey | undefined,
  jku: string | undefined,
  liveText: string | undefined,
): Promise<string> {
  const unsigned = doc.catalog as Record<string, unknown>;
  if (!key) return canonicalJson(unsigned);
  if (liveText) {
    try {
      const live = JSON.parse(liveText) as Record<string, unknown>;
      const parts = typeof live.signature === 'string' ? parseCompactDetached(live.signature) : undefined;
      if (parts && catalogPayload(live) === catalogPayload(unsigned)) {
        const header = JSON.parse(Buffer.from(parts.protected, 'base64url').toString('utf8')) as Record<
          string,
          unknown
        >;
        if (
          header.kid === key.kid &&
          header.alg === key.alg &&
          header.jku === jku &&
          sameChain(header.x5c, key.x5c)
        ) {
          const check = await verifyCatalog(live, publicJwks([key]));
          if (check.verified) return liveText;
        }
      }
    } catch {
      // Not JSON, or a header that is not JSON: sign again.
    }
  }
  return canonicalJson(await signCatalog(unsigned, key, jku ? { jku } : {}));
}

function catalogConfigMap(
  input: CatalogPlanInput,
  name: string,
  data: Record<string, string>,
): ConfigMapObject {
  const { catalog, kind } = input;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: input.publishNamespace,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
        [CATALOG_LABEL]: catalogLabelValue(kind, catalog.metadata.name),
      },
      // A namespaced ConfigMap may be owned by a cluster-scoped object: deleting the catalog lets
      // the garbage collector delete what it published.
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind,
          name: catalog.metadata.name,
          uid: catalog.metadata.uid,
          controller: true,
        },
      ],
    },
    data,
  };
}

/** The cards the catalog lists (or leaves out, with why), in reach of its namespace selector. */
export function selectEntries(
  input: Pick<CatalogPlanInput, 'kind' | 'catalog' | 'cards' | 'namespaceLabels'>,
  spec: CatalogSpec,
): { built: BuiltEntry[]; views: CardView[]; skipped: string[] } {
  const built: BuiltEntry[] = [];
  const views: CardView[] = [];
  const skipped: string[] = [];
  const ownNamespace = input.kind === CATALOG_KIND ? input.catalog.metadata.namespace : undefined;
  for (const card of input.cards) {
    // An AgentCatalog never lists another namespace's card, whatever it is given.
    if (ownNamespace !== undefined && card.namespace !== ownNamespace) continue;
    if (ownNamespace === undefined && spec.namespaceSelector) {
      const labels = input.namespaceLabels(card.namespace);
      if (!labels || !matchesSelector(spec.namespaceSelector, labels)) continue;
    }
    if (!matchesSelector(spec.selector, card.labels)) continue;
    const result = buildEntry(card, {
      publisher: spec.publisher,
      audience: spec.audience,
      mode: spec.entries,
      requireReady: spec.requireReady,
    });
    if (result.ok) {
      built.push(result.built);
      views.push(card);
    } else skipped.push(result.skip);
  }
  skipped.sort();
  return { built, views, skipped };
}

/**
 * spec.trust: keeps the entries whose published card verifies (noting who signed it), and the
 * reason for each one left out; or, when the policy itself cannot be used, why.
 */
async function trustedEntries(
  spec: CatalogSpec,
  selected: { built: BuiltEntry[]; views: CardView[] },
  sources: TrustSources | undefined,
): Promise<{ ok: true; built: BuiltEntry[]; skipped: string[] } | { ok: false; error: string }> {
  if (!spec.trust) return { ok: true, built: selected.built, skipped: [] };
  const loaded = loadTrust(spec.trust, sources ?? {});
  if (!loaded.ok) return loaded;
  const built: BuiltEntry[] = [];
  const skipped: string[] = [];
  for (const [i, entry] of selected.built.entries()) {
    const view = selected.views[i]!;
    const verdict = await verifyPublishedCard(view.publishedCard, loaded.trust);
    if (verdict.ok) built.push({ ...entry, facts: { ...entry.facts, signedBy: verdict.signer } });
    else skipped.push(`${view.namespace}/${view.name}: ${verdict.reason}`);
  }
  return { ok: true, built, skipped };
}

export async function planCatalog(input: CatalogPlanInput): Promise<CatalogPlan> {
  const { catalog, kind, now } = input;
  const generation = catalog.metadata.generation ?? 0;
  const previous = ownedCatalogStatus(catalog.status);
  const at = (type: string, c: Omit<ConditionInput, 'type' | 'observedGeneration'>): ConditionInput => ({
    type,
    observedGeneration: generation,
    ...c,
  });
  const keep = (type: string, fallback: ConditionInput): ConditionInput => {
    const p = getCondition(previous.conditions, type);
    return p
      ? {
          type,
          status: p.status,
          observedGeneration: p.observedGeneration ?? 0,
          reason: p.reason,
          message: p.message,
        }
      : fallback;
  };
  const next: ConditionInput[] = [];
  let status: CatalogControllerStatus = { ...previous };
  const configMaps: ConfigMapObject[] = [];
  let spec: CatalogSpec | undefined;

  const schema = kind === CATALOG_KIND ? AgentCatalogSpecSchema : ClusterAgentCatalogSpecSchema;
  const parsed = schema.safeParse(catalog.spec ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 3)
      .map((i) => `spec.${i.path.join('.') || '(root)'}: ${i.message}`);
    next.push(
      at('Accepted', {
        status: 'False',
        reason: 'InvalidSpec',
        message: `${problems.join('; ')}; fix the spec and apply it again (the last good catalog stays published)`,
      }),
    );
    next.push(
      keep(
        'Signed',
        at('Signed', { status: 'Unknown', reason: 'SpecNotAccepted', message: 'waiting for a valid spec' }),
      ),
    );
    next.push(
      keep(
        'Published',
        at('Published', {
          status: 'False',
          reason: 'NotPublished',
          message: 'nothing is published yet: the spec is not accepted',
        }),
      ),
    );
  } else {
    spec = parsed.data as CatalogSpec;
    next.push(at('Accepted', { status: 'True', reason: 'Valid', message: 'the spec is valid' }));
    // What readers still get while the keys cannot be used: the truth depends on whether a
    // catalog was ever published.
    const served = input.liveConfigMap(catalogConfigMapName(input.kind, input.catalog.metadata.name))
      ? 'the last good catalog stays published'
      : 'nothing is published yet';
    const signing = await loadSigningKeys(
      spec,
      input.publishNamespace,
      input.secrets,
      served,
      'catalog',
      input.now,
    );
    next.push(at('Signed', signing.condition));
    if (!signing.keys) {
      next.push(
        keep(
          'Published',
          at('Published', {
            status: 'False',
            reason: 'NotPublished',
            message: 'nothing is published yet: the signing keys cannot be used',
          }),
        ),
      );
    } else {
      const selected = selectEntries(input, spec);
      const trusted = await trustedEntries(spec, selected, input.trustSources);
      const built = trusted.ok ? trusted.built : [];
      const unverified = trusted.ok ? trusted.skipped : [];
      const skipped = [...unverified, ...selected.skipped].sort();
      const rootName = catalogConfigMapName(kind, catalog.metadata.name);
      const partName = (i: number) => catalogConfigMapName(kind, catalog.metadata.name, i);
      const liveRoot = input.liveConfigMap(rootName)?.data;
      const livePart = (i: number) => input.liveConfigMap(partName(i))?.data?.[CATALOG_FILES.partCatalog(i)];
      const previousDocs = [liveRoot?.[CATALOG_FILES.catalog]];
      for (const name of input.liveNames) {
        const m = /-p(\d+)$/.exec(name);
        if (m) previousDocs.push(livePart(Number(m[1])));
      }
      // Trust Manifests (signed by the catalog's key) bind each card entry to the card served.
      const servedCards = new Map<string, string>();
      selected.built.forEach((b, i) => {
        const text = selected.views[i]!.publishedCard;
        if (text !== undefined) servedCards.set(b.entry.identifier, text);
      });
      const manifests = await addTrustManifests(built, {
        key: signing.keys[0],
        jku: spec.signing?.jku,
        publisher: spec.publisher,
        served: servedCards,
        previousDocs,
        now: formatSeconds(now),
      });
      const identifier = catalogIdentifier(spec.publisher, kind, catalog);
      const title =
        spec.host?.displayName ??
        (kind === CATALOG_KIND
          ? `Agents of ${catalog.metadata.namespace}`
          : `Agents of the cluster (${catalog.metadata.name})`);
      const result = buildCatalog({
        identifier,
        title,
        host: spec.host,
        entries: manifests.entries,
        include: spec.include ?? [],
        previous: previousEntries(previousDocs),
        now: formatSeconds(now),
        signed: signing.keys.length > 0,
      });
      if (!trusted.ok) {
        next.push(
          at('Published', {
            status: 'False',
            reason: 'TrustPolicyUnavailable',
            message: `spec.trust cannot be used: ${trusted.error}; no card can be verified, ${served}`,
          }),
        );
      } else if (!result.ok) {
        next.push(
          at('Published', {
            status: 'False',
            reason: 'CatalogTooLarge',
            message: `${result.error}; ${served}`,
          }),
        );
      } else if (input.publishError) {
        next.push(
          at(
            'Published',
            input.publishRejected
              ? {
                  status: 'False',
                  reason: 'PublishRejected',
                  message: `the API server refused the catalog ConfigMaps in ${input.publishNamespace}: ${input.publishError}; not retried until the catalog or its cards change; ${served}`,
                }
              : {
                  status: 'False',
                  reason: 'PublishFailed',
                  message: `writing the catalog ConfigMaps in ${input.publishNamespace} failed: ${input.publishError}; retrying with backoff; ${served}`,
                },
          ),
        );
      } else {
        const key = signing.keys[0];
        const jku = spec.signing?.jku;
        const maxAge = String(spec.serving?.cacheMaxAgeSeconds ?? DEFAULT_CACHE_MAX_AGE_SECONDS);
        const rootText = await signedText(result.root, key, jku, liveRoot?.[CATALOG_FILES.catalog]);
        const rootData: Record<string, string> = {
          [CATALOG_FILES.catalog]: rootText,
          [CATALOG_FILES.page]: result.root.page,
          [CATALOG_FILES.maxAge]: maxAge,
        };
        if (key) rootData[CATALOG_FILES.jwks] = canonicalJson(publicJwks(signing.keys));
        const desired = [catalogConfigMap(input, rootName, rootData)];
        let bytes = Buffer.byteLength(rootText, 'utf8');
        for (const [i, part] of result.parts.entries()) {
          const text = await signedText(part, key, jku, livePart(i));
          bytes += Buffer.byteLength(text, 'utf8');
          desired.push(
            catalogConfigMap(input, partName(i), {
              [CATALOG_FILES.partCatalog(i)]: text,
              [CATALOG_FILES.partPage(i)]: part.page,
            }),
          );
        }
        for (const cm of desired) {
          if (!configMapUpToDate(input.liveConfigMap(cm.metadata.name), cm)) configMaps.push(cm);
        }
        // A partition no longer needed is emptied, not deleted: the catalog server then answers
        // 404 for it, and the operator needs no delete permission (the garbage collector removes
        // it with the catalog).
        const wanted = new Set(desired.map((d) => d.metadata.name));
        for (const name of input.liveNames) {
          if (wanted.has(name)) continue;
          const emptied = catalogConfigMap(input, name, {});
          if (!configMapUpToDate(input.liveConfigMap(name), emptied)) configMaps.push(emptied);
        }
        const digest = digestOf(rootText);
        status = {
          entries: result.entries,
          nested: result.nested,
          digest,
          bytes,
          partitions: result.parts.length,
          configMap: rootName,
          namespace: input.publishNamespace,
          ...(skipped.length ? { skipped: skipped.slice(0, MAX_SKIPPED) } : {}),
          ...(spec.trust ? { unverified: unverified.length } : {}),
          ...(key ? { signatures: [signatureStatus(key)] } : {}),
        };
        const left = skipped.length
          ? `; ${skipped.length} selected AgentCard(s) left out${unverified.length ? ` (${unverified.length} not verified by spec.trust)` : ''}, first: ${skipped[0]}`
          : '';
        next.push(
          at('Published', {
            status: 'True',
            reason: 'Published',
            message: `ConfigMap ${input.publishNamespace}/${rootName} holds ${result.entries} entries${result.parts.length ? ` in ${result.parts.length} partitions` : ''} (${digest.slice(0, 19)}, ${bytes} bytes)${left}${manifests.note ? `; ${manifests.note}` : ''}`,
          }),
        );
      }
    }
  }

  // Ready: Accepted, Signed (or signing not configured) and Published, all for this generation.
  const blocking = next.find(
    (c) =>
      c.observedGeneration < generation ||
      (c.status !== 'True' && !(c.type === 'Signed' && c.reason === 'SigningNotConfigured')),
  );
  next.push(
    blocking
      ? at('Ready', {
          status: blocking.status === 'Unknown' || blocking.status === 'True' ? 'Unknown' : 'False',
          reason: blocking.reason,
          message: `${blocking.type}: ${blocking.message}`,
        })
      : at('Ready', {
          status: 'True',
          reason: 'Ready',
          message: `accepted, ${next.find((c) => c.type === 'Signed')?.status === 'True' ? 'signed' : 'unsigned (no spec.signing)'}, published`,
        }),
  );

  let conditions: Condition[] = [...(previous.conditions ?? [])];
  for (const c of next) conditions = setCondition(conditions, c, now);
  const desiredStatus: CatalogControllerStatus = { ...status, observedGeneration: generation, conditions };
  return {
    generation,
    spec,
    configMaps,
    status: desiredStatus,
    statusChanged:
      statusJson(ownedCatalogStatus(catalog.status)) !== statusJson(ownedCatalogStatus(desiredStatus)),
    ready: getCondition(conditions, 'Ready')!.status,
  };
}
