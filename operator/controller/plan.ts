/**
 * The reconcile decision for one AgentCard, without any API call: given the object, the Secrets
 * it references, the live ConfigMap and the probe verdict, compute the ConfigMap to apply (if its
 * bytes change), the full controller-owned status (and whether it differs from the live one), and
 * the events of this state change. The controller (controller.ts) does the reads and writes.
 *
 * The card engine is used only through its public functions: validateSpec, renderV1, renderV03,
 * importSigningKey, signCard, publicJwks, serializeCard.
 */
import { createHash } from 'node:crypto';
import { describeError, UserError } from '../errors.ts';
import type { AgentCardSpec } from '../card/resource.ts';
import { API_VERSION, configMapName, KIND, SIGNING_KEY_LABEL } from '../api/names.ts';
import { renderV03, renderV1 } from '../card/render.ts';
import { serializeCard } from '../card/serialize.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../card/sign.ts';
import { validateSpec } from '../card/validate.ts';
import { deriveReady, getCondition, setCondition, type ConditionInput } from './conditions.ts';
import {
  byteLength,
  configMapNameProblem,
  configMapUpToDate,
  DATA_KEYS,
  DEFAULT_CACHE_MAX_AGE_SECONDS,
  desiredConfigMap,
  digestOf,
  type ConfigMapObject,
  type LiveConfigMap,
  type PublishedFiles,
} from './configmap.ts';
import { servingMessage, type ServingSummary } from './serving.ts';
import { plannedEvents, type PlannedEvent } from './events.ts';
import { reusableSignedCard } from './resign.ts';
import { ownedStatus, statusChanged, type ControllerStatus } from './status.ts';
import type { Condition, ConditionStatus } from './types.ts';

/** An AgentCard as the informer holds it (raw JSON from the API server). */
export interface AgentCardObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
  };
  spec?: unknown;
  status?: unknown;
}

/** A Secret as the reconcile sees it: base64 data, and whether it carries the watch label. */
export interface SecretView {
  data: Record<string, string>;
  labelled: boolean;
}

/** InterfacesReachable as the probe side reports it, with the status fields that go with it. */
export interface InterfacesVerdict {
  condition: Omit<ConditionInput, 'type'>;
  interfaces?: ControllerStatus['interfaces'];
  reachableInterfaces?: string;
}

export interface PlanInput {
  resource: AgentCardObject;
  /** The referenced Secrets by name; a name mapped to undefined does not exist. */
  secrets: ReadonlyMap<string, SecretView | undefined>;
  liveConfigMap: LiveConfigMap | undefined;
  /** The probe verdict for the accepted spec (undefined when the spec is not accepted). */
  interfaces: (spec: AgentCardSpec | undefined) => InterfacesVerdict;
  now: Date;
  /** Set when applying the planned ConfigMap failed: plan again with Published=False. */
  publishError?: string;
  /** The Pods that ask for this card (status.serving); undefined: not reported. */
  serving?: ServingSummary;
}

export interface Plan {
  generation: number;
  /** The validated spec, when Accepted=True (the probe scheduler follows it). */
  spec?: AgentCardSpec;
  /** The ConfigMap to apply; undefined when the live one already holds these bytes. */
  configMap?: ConfigMapObject;
  status: ControllerStatus;
  statusChanged: boolean;
  events: PlannedEvent[];
  ready: ConditionStatus;
  /** Why the card was signed again or not (for debug logs). */
  signingNote?: string;
}

const MAX_LISTED_PROBLEMS = 3;

function specProblemMessage(problems: Array<{ path: string; message: string; severity: string }>): string {
  const errors = problems.filter((p) => p.severity === 'error');
  const listed = errors.slice(0, MAX_LISTED_PROBLEMS).map((p) => `${p.path}: ${p.message}`);
  const more =
    errors.length > MAX_LISTED_PROBLEMS ? ` (and ${errors.length - MAX_LISTED_PROBLEMS} more)` : '';
  return `${listed.join('; ')}${more}; fix the spec and apply it again (the last good card stays published)`;
}

function warningsNote(problems: Array<{ path: string; message: string; severity: string }>): string {
  const warnings = problems.filter((p) => p.severity === 'warning');
  if (warnings.length === 0) return '';
  const first = warnings[0]!;
  return `; ${warnings.length} warning${warnings.length > 1 ? 's' : ''}, first: ${first.path}: ${first.message}`;
}

/**
 * Imported keys by (digest of the material, kid, alg): importing parses and checks the key each
 * time, which would be most of a reconcile's CPU at scale. A changed Secret has another digest, so
 * a rotation is never served from the cache. Bounded; the oldest entry goes first.
 */
const keyCache = new Map<string, Promise<SigningKey>>();
const KEY_CACHE_SIZE = 256;

function importCached(
  material: string,
  kid: string | undefined,
  alg: string | undefined,
): Promise<SigningKey> {
  const id = `${createHash('sha256').update(material).digest('hex')}\u0000${kid ?? ''}\u0000${alg ?? ''}`;
  let key = keyCache.get(id);
  if (!key) {
    key = importSigningKey(material, { kid, alg });
    keyCache.set(id, key);
    // A failed import is not cached: the error is reported, and the next attempt tries again.
    key.catch(() => keyCache.delete(id));
    if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value as string);
  }
  return key;
}

export interface SigningOutcome {
  condition: Omit<ConditionInput, 'type' | 'observedGeneration'>;
  keys?: SigningKey[];
}

/**
 * Reads every signing key of the spec; any problem stops signing (and publishing). Also used by
 * the catalog controller, whose spec.signing has the same shape.
 */
export async function loadSigningKeys(
  spec: Pick<AgentCardSpec, 'signing'>,
  namespace: string,
  secrets: ReadonlyMap<string, SecretView | undefined>,
): Promise<SigningOutcome> {
  const signing = spec.signing;
  if (!signing) {
    return {
      condition: {
        status: 'False',
        reason: 'SigningNotConfigured',
        message: 'spec.signing is not set: the card is published unsigned',
      },
      keys: [],
    };
  }
  const problems: Array<{ reason: 'SigningKeyNotFound' | 'SigningKeyInvalid'; message: string }> = [];
  const keys: SigningKey[] = [];
  const unlabelled = new Set<string>();
  for (const [i, ref] of signing.keys.entries()) {
    const where = `spec.signing.keys[${i}]`;
    const { name, key } = ref.secretRef;
    const secret = secrets.get(name);
    if (!secret) {
      problems.push({
        reason: 'SigningKeyNotFound',
        message: `${where}: Secret "${name}" not found in namespace ${namespace}; create it with a private JWK or PKCS#8 PEM under the key "${key}" (label it ${SIGNING_KEY_LABEL}=true so that the card is re-signed as soon as it changes)`,
      });
      continue;
    }
    if (!secret.labelled) unlabelled.add(name);
    const encoded = secret.data[key];
    if (encoded === undefined) {
      const present = Object.keys(secret.data).sort();
      problems.push({
        reason: 'SigningKeyNotFound',
        message: `${where}: Secret "${name}" has no key "${key}" (its keys: ${present.length ? present.join(', ') : 'none'}); add it or fix spec.signing.keys[${i}].secretRef.key`,
      });
      continue;
    }
    try {
      keys.push(await importCached(Buffer.from(encoded, 'base64').toString('utf8'), ref.kid, ref.alg));
    } catch (err) {
      // The card engine's UserError messages never echo key material; anything else could, so
      // it is replaced by a fixed sentence.
      const why =
        err instanceof UserError
          ? describeError(err)
          : 'it is neither a private JWK nor a PKCS#8 PEM private key';
      problems.push({
        reason: 'SigningKeyInvalid',
        message: `${where}: the key in Secret "${name}" (key "${key}") cannot be used: ${why}`,
      });
    }
  }
  if (problems.length > 0) {
    return {
      condition: {
        status: 'False',
        reason: problems[0]!.reason,
        message: `${problems.map((p) => p.message).join('; ')}; the last good card stays published`,
      },
    };
  }
  const hint =
    unlabelled.size > 0
      ? `; label Secret${unlabelled.size > 1 ? 's' : ''} ${[...unlabelled].map((n) => `"${n}"`).join(', ')} with ${SIGNING_KEY_LABEL}=true to re-sign within seconds of a key rotation (unlabelled Secrets are re-read on the periodic resync)`
      : '';
  return {
    condition: {
      status: 'True',
      reason: 'Signed',
      message: `signed with ${keys.map((k) => `${k.kid} (${k.alg})`).join(', ')}${hint}`,
    },
    keys,
  };
}

function keep(previous: Condition | undefined, fallback: ConditionInput): ConditionInput {
  if (!previous) return fallback;
  return {
    type: previous.type,
    status: previous.status,
    observedGeneration: previous.observedGeneration ?? 0,
    reason: previous.reason,
    message: previous.message,
  };
}

/** A warning when the set of Pods running without the sidecar grows or changes (not when it empties). */
function servingEvents(
  before: ServingSummary | undefined,
  after: ServingSummary | undefined,
): PlannedEvent[] {
  if (!after || after.podsMissingSidecar === 0) return [];
  if (
    before &&
    before.podsMissingSidecar === after.podsMissingSidecar &&
    before.missing.join() === after.missing.join()
  ) {
    return [];
  }
  return [
    { type: 'Warning', reason: 'PodsMissingSidecar', action: 'Serve', message: servingMessage(after)! },
  ];
}

export async function planReconcile(input: PlanInput): Promise<Plan> {
  const { resource, now } = input;
  const { name, namespace, uid } = resource.metadata;
  const generation = resource.metadata.generation ?? 0;
  const previous = ownedStatus(resource.status);
  const prevConditions = previous.conditions ?? [];
  const prevCondition = (type: string) => getCondition(prevConditions, type);
  const at = (c: Omit<ConditionInput, 'type' | 'observedGeneration'>, type: string): ConditionInput => ({
    type,
    observedGeneration: generation,
    ...c,
  });

  const next: ConditionInput[] = [];
  // Pods that ask for this card but run without the sidecar (the webhook's failurePolicy is
  // Ignore): named in the Published message and reported in status.serving.
  const missingPods = input.serving ? servingMessage(input.serving) : undefined;
  const servingNote = missingPods ? `; ${missingPods}` : '';
  let spec: AgentCardSpec | undefined;
  let configMap: ConfigMapObject | undefined;
  let card = previous.card;
  let signatures = previous.signatures;
  let signingNote: string | undefined;

  const validation = validateSpec(resource.spec);
  const nameProblem = configMapNameProblem(name);
  const notPublished = (why: string): ConditionInput =>
    at({ status: 'False', reason: 'NotPublished', message: `nothing is published yet: ${why}` }, 'Published');

  if (!validation.spec || !validation.card || nameProblem) {
    const message = nameProblem ?? specProblemMessage(validation.problems);
    next.push(
      at({ status: 'False', reason: nameProblem ? 'InvalidName' : 'InvalidSpec', message }, 'Accepted'),
    );
    // Nothing else is touched: the conditions keep describing the last published card.
    next.push(
      keep(
        prevCondition('Signed'),
        at({ status: 'Unknown', reason: 'SpecNotAccepted', message: 'waiting for a valid spec' }, 'Signed'),
      ),
    );
    next.push(keep(prevCondition('Published'), notPublished('the spec is not accepted')));
  } else {
    spec = validation.spec;
    next.push(
      at(
        { status: 'True', reason: 'Valid', message: `the spec is valid${warningsNote(validation.problems)}` },
        'Accepted',
      ),
    );
    const signing = await loadSigningKeys(spec, namespace, input.secrets);
    next.push(at(signing.condition, 'Signed'));
    if (!signing.keys) {
      next.push(keep(prevCondition('Published'), notPublished('the signing keys cannot be used')));
    } else {
      const rendered = renderV1(validation.card);
      const jku = spec.signing?.jku;
      const kept = await reusableSignedCard(
        input.liveConfigMap?.data?.[DATA_KEYS.card],
        rendered,
        signing.keys,
        jku,
      );
      signingNote = kept.card !== undefined ? 'kept the published signatures' : `signing: ${kept.why}`;
      const files: PublishedFiles = {
        card:
          kept.card ??
          serializeCard(signing.keys.length > 0 ? await signCard(rendered, signing.keys, { jku }) : rendered),
        legacyCard: serializeCard(renderV03(validation.card)),
        jwks: serializeCard(publicJwks(signing.keys) as unknown as Record<string, unknown>),
        cacheMaxAgeSeconds: spec.serving?.cacheMaxAgeSeconds ?? DEFAULT_CACHE_MAX_AGE_SECONDS,
      };
      const cmName = configMapName(name);
      if (input.publishError) {
        next.push(
          at(
            {
              status: 'False',
              reason: 'PublishFailed',
              message: `writing ConfigMap ${cmName} failed: ${input.publishError}; retrying with backoff`,
            },
            'Published',
          ),
        );
      } else {
        const desired = desiredConfigMap(
          { apiVersion: API_VERSION, kind: KIND, name, namespace, uid },
          files,
        );
        if (!configMapUpToDate(input.liveConfigMap, desired)) configMap = desired;
        const digest = digestOf(files.card);
        const bytes = byteLength(files.card);
        card = { digest, bytes, version: validation.card.version, configMap: cmName };
        signatures = signing.keys.map((k) => ({ kid: k.kid, alg: k.alg }));
        next.push(
          at(
            {
              status: 'True',
              reason: 'Published',
              message: `ConfigMap ${cmName} holds version ${validation.card.version} (${digest.slice(0, 19)}, ${bytes} bytes)${servingNote}`,
            },
            'Published',
          ),
        );
      }
    }
  }

  const verdict = input.interfaces(spec);
  next.push({ type: 'InterfacesReachable', ...verdict.condition });
  next.push(deriveReady(next, generation));

  let conditions: Condition[] = [...prevConditions];
  for (const c of next) conditions = setCondition(conditions, c, now);

  const status: ControllerStatus = {
    observedGeneration: generation,
    conditions,
    ...(card ? { card } : {}),
    ...(signatures && signatures.length > 0 ? { signatures } : {}),
    ...(verdict.interfaces ? { interfaces: verdict.interfaces } : {}),
    ...(verdict.reachableInterfaces !== undefined
      ? { reachableInterfaces: verdict.reachableInterfaces }
      : {}),
    ...(input.serving ? { serving: input.serving } : {}),
  };
  const ready = getCondition(conditions, 'Ready')!.status;
  return {
    generation,
    spec,
    configMap,
    status,
    statusChanged: statusChanged(resource.status, status),
    events: [
      ...plannedEvents(prevConditions, conditions, {
        digestBefore: previous.card?.digest,
        digestAfter: card?.digest,
      }),
      ...servingEvents(previous.serving, input.serving),
    ],
    ready,
    signingNote,
  };
}
