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
import {
  buildCatalog,
  CATALOG_FILES,
  memoPrevious,
  previousEntries,
  type BuildMemo,
  type BuiltDocument,
} from '../../catalog/build.ts';
import { buildEntry, type BuiltEntry, type CardView, type EntryResult } from '../../catalog/entries.ts';
import {
  AgentCatalogSpecSchema,
  ClusterAgentCatalogSpecSchema,
  type CatalogSpec,
} from '../../catalog/resource.ts';
import { matchesSelector } from '../../catalog/selector.ts';
import { mergeImported, type ImportedEntryView } from '../../catalog/imported.ts';
import { loadTrust, verifyPublishedCard, type TrustSources } from '../../catalog/trust.ts';
import { addTrustManifests } from '../../catalog/trust-manifest.ts';
import { catalogPayload, parseCompactDetached, signCatalog, verifyCatalog } from '../../catalog/signature.ts';
import type { CatalogReasons, SignedReason } from '../../api/reasons.ts';
import { CATALOG_CONDITION_TYPES } from '../../catalog/resource.ts';
import {
  deriveReady,
  formatTime,
  getCondition,
  keepCondition,
  setConditions,
  type ConditionInput,
  type ReadinessPolicy,
  type TypedCondition,
} from '../../runtime/conditions.ts';
import { PUBLISHED, type PublishResult } from '../../runtime/outcome.ts';
import { DEFAULT_CACHE_MAX_AGE_SECONDS } from '../../api/names.ts';
import { configMapUpToDate, type ConfigMapObject, type LiveConfigMap } from '../../runtime/configmaps.ts';
import { loadSigningKeys, signatureStatus, type SecretView } from '../../signing/keys.ts';
import { sameChain } from '../../signing/resign.ts';
import { sortedJson as statusJson } from '../../runtime/sorted-json.ts';
import type { Condition, ConditionStatus } from '../../runtime/condition-types.ts';

/** A catalog condition with a reason its type can have (operator/api/reasons.ts). */
export type CatalogCondition = TypedCondition<CatalogReasons>;
/** Omit over each member of a union (a typed condition keeps its type/reason pairing). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
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
  /** The documents spec.trust references, as the controller read them. */
  trustSources?: TrustSources;
  /** The CatalogImports in reach with their verified entries (spec.imports selects among them). */
  imports?: readonly CatalogImportView[];
  /** What the last decision for this catalog kept, once its ConfigMaps were published. */
  memo?: CatalogMemo;
}

/**
 * What one decision hands the next decision of the same catalog, for an incremental rebuild:
 * the build's memo (catalog/build.ts) and the catalog text of each ConfigMap it decided. It is
 * used only while every live ConfigMap of the catalog holds exactly that text and the signing
 * key is the same (memoHolds): after a failed write, an edit by someone else or a new key, the
 * next rebuild is a full one, reading the published documents.
 */
export interface CatalogMemo {
  build: BuildMemo;
  texts: ReadonlyMap<string, { doc: BuiltDocument; text: string }>;
  signer: string;
  /**
   * The entry built from each card view, by the options it was built with: a pure function of
   * both, kept whatever is published. The controller hands the same view object while its
   * AgentCard object is the same, so an unchanged card gives the same entry object, which the
   * build recognises without comparing it.
   */
  entries: WeakMap<CardView, { options: string; result: EntryResult }>;
}

const signerOf = (key: SigningKey | undefined, jku: string | undefined) =>
  key ? JSON.stringify([key.kid, key.alg, jku ?? null, key.x5c ?? null]) : '';

function memoHolds(
  memo: CatalogMemo | undefined,
  signer: string,
  liveNames: readonly string[],
  liveText: (name: string) => string | undefined,
): memo is CatalogMemo {
  if (!memo || memo.signer !== signer) return false;
  for (const [name, { text }] of memo.texts) if (liveText(name) !== text) return false;
  return liveNames.every((name) => memo.texts.has(name) || liveText(name) === undefined);
}

/** A CatalogImport as a catalog sees it: its labels (for spec.imports) and its verified entries. */
export interface CatalogImportView {
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  entries: readonly ImportedEntryView[];
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
  'imported',
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
  sign: typeof signCatalog,
  kept?: { doc: BuiltDocument; text: string },
): Promise<string> {
  // The same document as the one whose text is published (an unchanged partition): keep it.
  if (kept && kept.doc === doc) return kept.text;
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
  return canonicalJson(await sign(unsigned, key, jku ? { jku } : {}));
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
  memo?: CatalogMemo['entries'],
): { built: BuiltEntry[]; views: CardView[]; skipped: string[] } {
  const entryOptions = {
    publisher: spec.publisher,
    audience: spec.audience,
    mode: spec.entries,
    requireReady: spec.requireReady,
  };
  const options = JSON.stringify(entryOptions);
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
    const kept = memo?.get(card);
    const result = kept?.options === options ? kept.result : buildEntry(card, entryOptions);
    if (kept?.result !== result) memo?.set(card, { options, result });
    if (result.ok) {
      built.push(result.built);
      views.push(card);
    } else skipped.push(result.skip);
  }
  skipped.sort();
  return { built, views, skipped };
}

/**
 * The verified entries of the CatalogImports spec.imports selects: in the catalog's namespace for
 * an AgentCatalog, in the namespaces imports.namespaceSelector selects for a ClusterAgentCatalog.
 * Absent spec.imports lists none.
 */
export function selectImported(
  input: Pick<CatalogPlanInput, 'kind' | 'catalog' | 'imports' | 'namespaceLabels'>,
  spec: CatalogSpec,
): ImportedEntryView[] {
  if (!spec.imports) return [];
  const ownNamespace = input.kind === CATALOG_KIND ? input.catalog.metadata.namespace : undefined;
  const namespaceSelector = ownNamespace === undefined ? spec.imports.namespaceSelector : undefined;
  const out: ImportedEntryView[] = [];
  for (const imp of input.imports ?? []) {
    if (ownNamespace !== undefined && imp.namespace !== ownNamespace) continue;
    if (namespaceSelector) {
      const labels = input.namespaceLabels(imp.namespace);
      if (!labels || !matchesSelector(namespaceSelector, labels)) continue;
    }
    if (matchesSelector(spec.imports.selector, imp.labels)) out.push(...imp.entries);
  }
  return out;
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

/** The parts of the catalog engine a reconcile uses; tests count calls through them. */
export interface CatalogEngine {
  build: typeof buildCatalog;
  sign: typeof signCatalog;
}

const ENGINE: CatalogEngine = { build: buildCatalog, sign: signCatalog };

/** What is published when the publish succeeds. */
export interface CatalogArtifacts {
  /** ConfigMaps to apply (those whose bytes change; stale partitions emptied). */
  writes: ConfigMapObject[];
  /** The status fields that describe the published catalog. */
  published: Omit<CatalogControllerStatus, 'observedGeneration' | 'conditions'>;
  /** The message of Published=True. */
  message: string;
}

/**
 * The decision of one catalog reconcile, made once before any write: the spec checked, the keys
 * read, the documents built and signed, the ConfigMaps. The status for each publish result is
 * derived from it (catalogPlan) without building or signing again.
 */
export interface CatalogDecision {
  generation: number;
  spec?: CatalogSpec;
  /**
   * Accepted and Signed, and Published when publishing is settled before any write (spec not
   * accepted, keys unusable, catalog too large): then `artifacts` is undefined.
   */
  conditions: ConditionInput[];
  artifacts?: CatalogArtifacts;
  /** What readers still get if this change cannot be published. */
  served: string;
  /** For the next decision, once `artifacts` are published (CatalogPlanInput.memo). */
  memo?: CatalogMemo;
}

export async function decideCatalog(
  input: CatalogPlanInput,
  engine: CatalogEngine = ENGINE,
): Promise<CatalogDecision> {
  const { catalog, kind, now } = input;
  const generation = catalog.metadata.generation ?? 0;
  const previous = ownedCatalogStatus(catalog.status);
  const at = (c: DistributiveOmit<CatalogCondition, 'observedGeneration'>): ConditionInput => ({
    observedGeneration: generation,
    ...c,
  });
  const keep = (type: string, fallback: ConditionInput) =>
    keepCondition(getCondition(previous.conditions, type), fallback);
  // What readers still get while a change cannot be published: the truth depends on whether a
  // catalog was ever published.
  const served = input.liveConfigMap(catalogConfigMapName(input.kind, input.catalog.metadata.name))
    ? 'the last good catalog stays published'
    : 'nothing is published yet';
  const notPublished = (why: string) =>
    at({
      type: 'Published',
      status: 'False',
      reason: 'NotPublished',
      message: `nothing is published yet: ${why}`,
    });

  const schema = kind === CATALOG_KIND ? AgentCatalogSpecSchema : ClusterAgentCatalogSpecSchema;
  const parsed = schema.safeParse(catalog.spec ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 3)
      .map((i) => `spec.${i.path.join('.') || '(root)'}: ${i.message}`);
    return {
      generation,
      served,
      conditions: [
        at({
          type: 'Accepted',
          status: 'False',
          reason: 'InvalidSpec',
          message: `${problems.join('; ')}; fix the spec and apply it again (the last good catalog stays published)`,
        }),
        keep(
          'Signed',
          at({
            type: 'Signed',
            status: 'Unknown',
            reason: 'SpecNotAccepted',
            message: 'waiting for a valid spec',
          }),
        ),
        keep('Published', notPublished('the spec is not accepted')),
      ],
    };
  }
  const spec = parsed.data as CatalogSpec;
  const accepted = at({ type: 'Accepted', status: 'True', reason: 'Valid', message: 'the spec is valid' });
  const signing = await loadSigningKeys(
    spec,
    input.publishNamespace,
    input.secrets,
    served,
    'catalog',
    input.now,
  );
  // A catalog's keys cannot name an issuerRef (its schema has none), so the issuer's reasons
  // (CertificatePending, CertificateNotRequested) cannot occur here.
  const signed = at({
    type: 'Signed',
    ...signing.condition,
    reason: signing.condition.reason as SignedReason,
  });
  // Accepted and signed, but nothing to publish: Published says why, the last good catalog stays.
  const stopped = (published: ConditionInput) => ({
    generation,
    served,
    spec,
    conditions: [accepted, signed, published],
  });
  if (!signing.keys) {
    return stopped(keep('Published', notPublished('the signing keys cannot be used')));
  }
  const entryMemo = input.memo?.entries ?? new WeakMap();
  const selected = selectEntries(input, spec, entryMemo);
  const trusted = await trustedEntries(spec, selected, input.trustSources);
  if (!trusted.ok) {
    return stopped(
      at({
        type: 'Published',
        status: 'False',
        reason: 'TrustPolicyUnavailable',
        message: `spec.trust cannot be used: ${trusted.error}; no card can be verified, ${served}`,
      }),
    );
  }
  const { built } = trusted;
  const unverified = trusted.skipped;
  const skipped = [...unverified, ...selected.skipped].sort();
  const rootName = catalogConfigMapName(kind, catalog.metadata.name);
  const partName = (i: number) => catalogConfigMapName(kind, catalog.metadata.name, i);
  const liveRoot = input.liveConfigMap(rootName)?.data;
  const livePart = (i: number) => input.liveConfigMap(partName(i))?.data?.[CATALOG_FILES.partCatalog(i)];
  const livePartByName = (name: string) => {
    const m = /-p(\d+)$/.exec(name);
    return m ? livePart(Number(m[1])) : undefined;
  };
  const previousDocs = [liveRoot?.[CATALOG_FILES.catalog]];
  for (const name of input.liveNames) if (/-p(\d+)$/.test(name)) previousDocs.push(livePartByName(name));
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
    now: formatTime(now),
  });
  const identifier = catalogIdentifier(spec.publisher, kind, catalog);
  const title =
    spec.host?.displayName ??
    (kind === CATALOG_KIND
      ? `Agents of ${catalog.metadata.namespace}`
      : `Agents of the cluster (${catalog.metadata.name})`);
  // Imported entries come after this cluster's (which win an identifier both list), as their
  // origin published them: spec.trust and this catalog's manifests are for local cards.
  const imported = mergeImported(manifests.entries, selectImported(input, spec));
  const key = signing.keys[0];
  const jku = spec.signing?.jku;
  const signer = signerOf(key, jku);
  const catalogText = (name: string) =>
    name === rootName ? liveRoot?.[CATALOG_FILES.catalog] : livePartByName(name);
  const memo = memoHolds(input.memo, signer, input.liveNames, catalogText) ? input.memo : undefined;
  const result = engine.build(
    {
      identifier,
      title,
      host: spec.host,
      entries: imported.built,
      include: spec.include ?? [],
      // What is published, as the memo knows it without reading every document again.
      previous: memo ? memoPrevious(memo.build) : previousEntries(previousDocs),
      now: formatTime(now),
      signed: signing.keys.length > 0,
    },
    memo?.build,
  );
  if (!result.ok) {
    return stopped(
      at({
        type: 'Published',
        status: 'False',
        reason: 'CatalogTooLarge',
        message: `${result.error}; ${served}`,
      }),
    );
  }
  const maxAge = String(spec.serving?.cacheMaxAgeSeconds ?? DEFAULT_CACHE_MAX_AGE_SECONDS);
  const texts = new Map<string, { doc: BuiltDocument; text: string }>();
  const rootText = await signedText(result.root, key, jku, liveRoot?.[CATALOG_FILES.catalog], engine.sign);
  texts.set(rootName, { doc: result.root, text: rootText });
  const rootData: Record<string, string> = {
    [CATALOG_FILES.catalog]: rootText,
    [CATALOG_FILES.page]: result.root.page,
    [CATALOG_FILES.maxAge]: maxAge,
  };
  if (key) rootData[CATALOG_FILES.jwks] = canonicalJson(publicJwks(signing.keys));
  const desired = [catalogConfigMap(input, rootName, rootData)];
  let bytes = Buffer.byteLength(rootText, 'utf8');
  for (const [i, part] of result.parts.entries()) {
    const text = await signedText(part, key, jku, livePart(i), engine.sign, memo?.texts.get(partName(i)));
    texts.set(partName(i), { doc: part, text });
    bytes += Buffer.byteLength(text, 'utf8');
    desired.push(
      catalogConfigMap(input, partName(i), {
        [CATALOG_FILES.partCatalog(i)]: text,
        [CATALOG_FILES.partPage(i)]: part.page,
      }),
    );
  }
  const writes: ConfigMapObject[] = [];
  for (const cm of desired) {
    if (!configMapUpToDate(input.liveConfigMap(cm.metadata.name), cm)) writes.push(cm);
  }
  // A partition no longer needed is emptied, not deleted: the catalog server then answers
  // 404 for it, and the operator needs no delete permission (the garbage collector removes
  // it with the catalog).
  const wanted = new Set(desired.map((d) => d.metadata.name));
  for (const name of input.liveNames) {
    if (wanted.has(name)) continue;
    const emptied = catalogConfigMap(input, name, {});
    if (!configMapUpToDate(input.liveConfigMap(name), emptied)) writes.push(emptied);
  }
  const digest = digestOf(rootText);
  const shadowed = imported.skipped.length
    ? `; ${imported.skipped.length} imported entr${imported.skipped.length === 1 ? 'y' : 'ies'} left out, first: ${imported.skipped[0]}`
    : '';
  const left = skipped.length
    ? `; ${skipped.length} selected AgentCard(s) left out${unverified.length ? ` (${unverified.length} not verified by spec.trust)` : ''}, first: ${skipped[0]}`
    : '';
  return {
    generation,
    served,
    spec,
    conditions: [accepted, signed],
    memo: { build: result.memo, texts, signer, entries: entryMemo },
    artifacts: {
      writes,
      published: {
        entries: result.entries,
        nested: result.nested,
        digest,
        bytes,
        partitions: result.parts.length,
        configMap: rootName,
        namespace: input.publishNamespace,
        ...(skipped.length + imported.skipped.length
          ? { skipped: [...skipped, ...imported.skipped].sort().slice(0, MAX_SKIPPED) }
          : {}),
        ...(spec.trust ? { unverified: unverified.length } : {}),
        ...(spec.imports ? { imported: imported.listed } : {}),
        ...(key ? { signatures: [signatureStatus(key)] } : {}),
      },
      message: `ConfigMap ${input.publishNamespace}/${rootName} holds ${result.entries} entries${imported.listed ? ` (${imported.listed} imported)` : ''}${result.parts.length ? ` in ${result.parts.length} partitions` : ''} (${digest.slice(0, 19)}, ${bytes} bytes)${left}${shadowed}${manifests.note ? `; ${manifests.note}` : ''}`,
    },
  };
}

/** Ready of a catalog: Accepted, Signed (or signing not configured) and Published, for this generation. */
export const CATALOG_READINESS: ReadinessPolicy = {
  prerequisites: ['Accepted', 'Signed', 'Published'],
  exempt: (c) => c.type === 'Signed' && c.status === 'False' && c.reason === 'SigningNotConfigured',
  readyMessage: (byType) =>
    `accepted, ${byType.get('Signed')?.status === 'True' ? 'signed' : 'unsigned (no spec.signing)'}, published`,
};

/** The Published condition for a publish result (the artifacts were decided). */
export function catalogPublishedCondition(
  artifacts: CatalogArtifacts,
  result: Exclude<PublishResult, { result: 'Outage' }>,
  publishNamespace: string,
  served: string,
): DistributiveOmit<CatalogCondition, 'observedGeneration'> {
  switch (result.result) {
    case 'PublishRejected':
      return {
        type: 'Published',
        status: 'False',
        reason: 'PublishRejected',
        message: `the API server refused the catalog ConfigMaps in ${publishNamespace}: ${result.message}; not retried until the catalog or its cards change; ${served}`,
      };
    case 'PublishFailed':
      return {
        type: 'Published',
        status: 'False',
        reason: 'PublishFailed',
        message: `writing the catalog ConfigMaps in ${publishNamespace} failed: ${result.message}; retrying with backoff; ${served}`,
      };
    case 'Published':
      return { type: 'Published', status: 'True', reason: 'Published', message: artifacts.message };
  }
}

/**
 * The plan for a decision and a publish result, without any I/O and without building or
 * signing again. An outage writes nothing: the status stays as it is.
 */
export function catalogPlan(
  decision: CatalogDecision,
  input: Pick<CatalogPlanInput, 'catalog' | 'publishNamespace' | 'now'>,
  result: PublishResult,
): CatalogPlan {
  const { generation } = decision;
  const previous = ownedCatalogStatus(input.catalog.status);
  if (result.result === 'Outage') {
    return {
      generation,
      spec: decision.spec,
      configMaps: [],
      status: previous,
      statusChanged: false,
      ready: getCondition(previous.conditions, 'Ready')?.status ?? 'Unknown',
    };
  }
  const next = [...decision.conditions];
  const artifacts = decision.artifacts;
  if (artifacts) {
    next.push({
      observedGeneration: generation,
      ...catalogPublishedCondition(artifacts, result, input.publishNamespace, decision.served),
    });
  }
  next.push(deriveReady(CATALOG_READINESS, next, generation));
  const conditions = setConditions(previous.conditions ?? [], next, input.now, CATALOG_CONDITION_TYPES);
  // The published fields describe what is served: they move only when this publish succeeded.
  const fields = artifacts && result.result === 'Published' ? artifacts.published : previous;
  const desiredStatus: CatalogControllerStatus = { ...fields, observedGeneration: generation, conditions };
  return {
    generation,
    spec: decision.spec,
    configMaps: result.result === 'Published' ? (artifacts?.writes ?? []) : [],
    status: desiredStatus,
    statusChanged:
      statusJson(ownedCatalogStatus(input.catalog.status)) !== statusJson(ownedCatalogStatus(desiredStatus)),
    ready: getCondition(conditions, 'Ready')!.status,
  };
}

/** The plan for `input` had its publish ended with `result` (default: published); for tests. */
export async function planCatalog(
  input: CatalogPlanInput,
  result: PublishResult = PUBLISHED,
  engine: CatalogEngine = ENGINE,
): Promise<CatalogPlan> {
  return catalogPlan(await decideCatalog(input, engine), input, result);
}

/**
 * One catalog reconcile's plan: decide once, publish the decided ConfigMaps (if any bytes
 * change), and derive the status for how that ended. `publish` is the only I/O.
 */
export async function reconcileCatalogPlan(
  input: CatalogPlanInput,
  publish: (configMaps: readonly ConfigMapObject[]) => Promise<PublishResult>,
  engine: CatalogEngine = ENGINE,
): Promise<{ decision: CatalogDecision; result: PublishResult; plan: CatalogPlan }> {
  const decision = await decideCatalog(input, engine);
  const writes = decision.artifacts?.writes ?? [];
  const result = writes.length > 0 ? await publish(writes) : PUBLISHED;
  return { decision, result, plan: catalogPlan(decision, input, result) };
}
