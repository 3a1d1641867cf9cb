/**
 * The reconcile decision for one AgentCard, without any API call: given the object, the Secrets
 * it references, the live ConfigMap and the probe verdict, compute the ConfigMap to apply (if its
 * bytes change), the full controller-owned status (and whether it differs from the live one), and
 * the events of this state change. The controller (controller.ts) does the reads and writes.
 *
 * The card engine is used only through its public functions: validateSpec, audienceVariants,
 * importSigningKey, publicJwks, serializeCard (rendering and signing each audience's card is
 * audiences/sign.ts).
 */
import { audienceVariants, type AudienceVariant } from '../../card/variants.ts';
import type { AgentCardSpec, AudienceStatus } from '../../card/resource.ts';
import { variantData, type VariantFiles } from './audiences/publish.ts';
import { signVariants } from './audiences/sign.ts';
import { API_VERSION, configMapName, KIND } from '../../api/names.ts';
import { serializeCard } from '../../card/serialize.ts';
import { expiryWarningAt } from '../../card/certificate.ts';
import { publicJwks, type SigningKey } from '../../card/sign.ts';
import { validateSpec } from '../../card/validate.ts';
import {
  deriveReady,
  getCondition,
  keepCondition,
  setCondition,
  type CardCondition,
  type ConditionInput,
} from './conditions.ts';
import { PUBLISHED, type PublishResult } from '../../runtime/outcome.ts';
import { configMapNameProblem, desiredConfigMap, type PublishedFiles } from './configmap.ts';
import { DATA_KEYS, DEFAULT_CACHE_MAX_AGE_SECONDS } from '../../api/names.ts';
import {
  byteLength,
  configMapSizeProblem,
  configMapUpToDate,
  digestOf,
  type ConfigMapObject,
  type LiveConfigMap,
} from '../../runtime/configmaps.ts';
import { servingMessage, type ServingSummary } from '../../serving/pods.ts';
import { plannedEvents, type PlannedEvent } from './events.ts';
import { ownedStatus, statusChanged, type CardStatus, type ControllerStatus } from './status.ts';
import type { Condition, ConditionStatus } from '../../runtime/condition-types.ts';
import type { SourceOutcome } from '../../source/tracker.ts';
import { loadSigningKeys, signatureStatus, type IssuedKey, type SecretView } from '../../signing/keys.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { ACCEPT_BREAKING_ANNOTATION } from '../../api/names.ts';
import { appendHistory, changeEvent, decideChange, type PublishedChange } from './changes.ts';
import type { Subject } from '../../policy/evaluate.ts';
import type { Policy } from '../../policy/resource.ts';
import {
  enforceHold,
  judgeCard,
  policyCondition,
  policyEvents,
  publishSubject,
  signingFacts,
  type PolicyInput,
} from './policy-gate.ts';

/** Omit over each member of a union (a typed condition keeps its type/reason pairing). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * InterfacesReachable as the probe side reports it, with the status fields that go with it. Its
 * reason is an InterfacesReason (operator/api/reasons.ts) when the probes computed it, but may be
 * the live status carried over, written by another version: hence a plain string, as keepCondition's.
 */
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
  /** The ConfigMap data limit (tests of the boundary); default MAX_CONFIGMAP_DATA_BYTES. */
  maxConfigMapBytes?: number;
  /** The Pods that ask for this card (status.serving); undefined: not reported. */
  serving?: ServingSummary;
  /** For an adopted card (spec.source): the card taken from the agent (operator/source/). */
  source?: SourceOutcome;
  /** For a key that names an issuerRef: the card's issued Secret and what the issuer controller says. */
  issued?: IssuedKey;
  /** The policies that may select the card (--policies, policy-gate.ts); undefined: off. */
  policy?: PolicyInput;
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
  /** Reconcile again after this long: the next certificate expiry warning or expiry is due. */
  requeueAfterMs?: number;
  /** The change this plan records in status.history (changes.ts), for the metric. */
  change?: PublishedChange;
}

const MAX_LISTED_PROBLEMS = 3;

/**
 * What users still get while a change cannot be published: the truth depends on whether a card
 * was ever published (the live ConfigMap holds one), not on what the controller hoped for.
 */
function servedNote(live: LiveConfigMap | undefined): string {
  return live?.data?.[DATA_KEYS.card] !== undefined && !live.metadata?.deletionTimestamp
    ? 'the last good card stays published'
    : 'nothing is published yet';
}

function specProblemMessage(
  problems: Array<{ path: string; message: string; severity: string }>,
  served: string,
): string {
  const errors = problems.filter((p) => p.severity === 'error');
  const listed = errors.slice(0, MAX_LISTED_PROBLEMS).map((p) => `${p.path}: ${p.message}`);
  const more =
    errors.length > MAX_LISTED_PROBLEMS ? ` (and ${errors.length - MAX_LISTED_PROBLEMS} more)` : '';
  return `${listed.join('; ')}${more}; fix the spec and apply it again (${served})`;
}

function warningsNote(problems: Array<{ path: string; message: string; severity: string }>): string {
  const warnings = problems.filter((p) => p.severity === 'warning');
  if (warnings.length === 0) return '';
  const first = warnings[0]!;
  return `; ${warnings.length} warning${warnings.length > 1 ? 's' : ''}, first: ${first.path}: ${first.message}`;
}

/**
 * CertificatesValid: whether any signing certificate is close to expiry (certificate.ts,
 * expiryWarningAt). Undefined when no key is a certificate. `nextCheck` is when the verdict
 * changes next (the warning, then the expiry), for a timely re-queue.
 */
export function certificateExpiry(
  keys: readonly SigningKey[],
  now: Date,
):
  | {
      condition: DistributiveOmit<
        Extract<CardCondition, { type: 'CertificatesValid' }>,
        'type' | 'observedGeneration'
      >;
      nextCheck: Date;
    }
  | undefined {
  const certs = keys.flatMap((k, i) => (k.certificate ? [{ i, kid: k.kid, facts: k.certificate }] : []));
  if (certs.length === 0) return undefined;
  const withWarning = certs.map((c) => ({ ...c, warnAt: expiryWarningAt(c.facts) }));
  const expiring = withWarning.filter((c) => now >= c.warnAt);
  const soonest = [...withWarning].sort(
    (a, b) => Date.parse(a.facts.notAfter) - Date.parse(b.facts.notAfter),
  )[0]!;
  const upcoming = withWarning.map((c) => (now < c.warnAt ? c.warnAt : new Date(c.facts.notAfter)));
  const nextCheck = new Date(Math.min(...upcoming.map((d) => d.getTime())));
  if (expiring.length > 0) {
    const first = expiring[0]!;
    return {
      condition: {
        status: 'False',
        reason: 'CertificateExpiring',
        message: `the signing certificate ${first.facts.subject} (kid ${first.kid}) expires at ${first.facts.notAfter} and has not been renewed${expiring.length > 1 ? ` (and ${expiring.length - 1} more)` : ''}; renew it (cert-manager: check the Certificate's Issuing condition), the card stops being signed when it expires`,
      },
      nextCheck,
    };
  }
  return {
    condition: {
      status: 'True',
      reason: 'Valid',
      message: `${certs.length === 1 ? 'the signing certificate is' : `${certs.length} signing certificates are`} valid; the first expires at ${soonest.facts.notAfter} (warning from ${soonest.warnAt.toISOString()})`,
    },
    nextCheck,
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
    (before.missing ?? []).join() === (after.missing ?? []).join()
  ) {
    return [];
  }
  return [
    { type: 'Warning', reason: 'PodsMissingSidecar', action: 'Serve', message: servingMessage(after)! },
  ];
}

/** The status entry of each audience with hosts (the default one is status.card). */
function audienceStatus(
  published: readonly VariantFiles[],
  variants: readonly AudienceVariant[],
): AudienceStatus[] {
  return published.map((p) => ({
    name: p.name,
    hosts: [...p.hosts],
    digest: digestOf(p.card),
    bytes: byteLength(p.card),
    probed: variants.find((v) => v.name === p.name)?.probed ?? false,
  }));
}

function audiencesNote(audiences: readonly AudienceStatus[]): string {
  if (audiences.length === 0) return '';
  return `; audience${audiences.length > 1 ? 's' : ''} ${audiences.map((a) => `${a.name} (${a.digest.slice(0, 19)}, ${a.bytes} bytes)`).join(', ')}`;
}

/** What was published, as one string: a Published event is due when it changes. */
function publishedDigests(
  card: { digest: string } | undefined,
  audiences: readonly AudienceStatus[] | undefined,
): string | undefined {
  if (!card) return undefined;
  return [card.digest, ...(audiences ?? []).map((a) => `${a.name}=${a.digest}`)].join(',');
}

/** A warning once per distinct source failure, and the tracker's own events (a change adopted). */
function sourceEvents(before: Condition | undefined, source: SourceOutcome | undefined): PlannedEvent[] {
  if (!source) return [];
  const events: PlannedEvent[] = [...source.events];
  const c = source.condition;
  if (
    c.status === 'False' &&
    (before?.status !== c.status || before.reason !== c.reason || before.message !== c.message)
  ) {
    events.push({ type: 'Warning', reason: c.reason, action: 'Fetch', message: c.message });
  }
  return events;
}

/** The parts of the card engine a reconcile uses; tests count calls through them. */
export interface CardEngine {
  validate: typeof validateSpec;
  sign: typeof signVariants;
}

const ENGINE: CardEngine = { validate: validateSpec, sign: signVariants };

/** What is published when the publish succeeds (status.card and friends). */
export interface CardArtifacts {
  configMapName: string;
  /** The ConfigMap to apply; undefined when the live one already holds these bytes. */
  write?: ConfigMapObject;
  card: CardStatus;
  signatures: NonNullable<ControllerStatus['signatures']>;
  audiences: AudienceStatus[];
  /** The change of the card against the one published before (changes.ts); none: not a change. */
  change?: PublishedChange;
  /** The published jwks.json: the card's own keys, for the served-card check (served.ts). */
  jwks: string;
}

/**
 * The decision of one reconcile, made once before any write: validation, signing keys, the
 * rendered and signed documents, the ConfigMap. The status for each publish result is derived
 * from it (cardPlan) without running any of that again.
 */
export interface CardDecision {
  generation: number;
  /** The validated spec, when Accepted=True (the probe scheduler follows it). */
  spec?: AgentCardSpec;
  /**
   * Accepted and Signed, and Published when publishing is settled before any write (spec not
   * accepted, keys unusable, card too large): then `artifacts` is undefined.
   */
  conditions: ConditionInput[];
  artifacts?: CardArtifacts;
  /** What users still get if this change cannot be published. */
  served: string;
  /** Why the card was signed again or not (for debug logs). */
  signingNote?: string;
  /**
   * The source's outcome for an adopted card (an input, fetched before the decision): its
   * condition, status and events go into the status whatever the publish result.
   */
  source?: SourceOutcome;
  /** Conditions no longer true of this card, removed from the status (CertificatesValid). */
  drop: string[];
  /** Reconcile again after this long: a signing certificate's expiry warning or expiry is due. */
  requeueAfterMs?: number;
  /**
   * The policies that may select the card and the card about to be published as the engine sees
   * it (policy-gate.ts); judged again in cardPlan with the Ready this reconcile derives.
   */
  policy?: { policies: readonly Policy[]; subject: Subject };
}

type DecisionInput = Pick<
  PlanInput,
  'resource' | 'secrets' | 'liveConfigMap' | 'maxConfigMapBytes' | 'now' | 'source' | 'issued' | 'policy'
>;

/** A timer cannot wait past 2^31 ms, and the resync checks again anyway. */
const MAX_REQUEUE_MS = 24 * 3600_000;

export async function decideCard(input: DecisionInput, engine: CardEngine = ENGINE): Promise<CardDecision> {
  const { resource } = input;
  const { name, namespace, uid } = resource.metadata;
  const generation = resource.metadata.generation ?? 0;
  const prevConditions = ownedStatus(resource.status).conditions ?? [];
  const prevCondition = (type: string) => getCondition(prevConditions, type);
  const at = (c: DistributiveOmit<CardCondition, 'observedGeneration'>): ConditionInput => ({
    observedGeneration: generation,
    ...c,
  });
  const served = servedNote(input.liveConfigMap);
  const notPublished = (why: string): ConditionInput =>
    at({
      type: 'Published',
      status: 'False',
      reason: 'NotPublished',
      message: `nothing is published yet: ${why}`,
    });
  const source = input.source;
  const decision = (
    rest: Omit<CardDecision, 'generation' | 'served' | 'drop'> & { drop?: string[] },
  ): CardDecision => ({
    generation,
    served,
    ...(source ? { source } : {}),
    ...rest,
    // A written card has no SourceAvailable condition (an AgentCard that stops adopting drops it);
    // without --policies, or when no policy selects the card, there is no PolicyCompliant.
    drop: [
      ...(rest.drop ?? []),
      ...(source ? [] : ['SourceAvailable']),
      ...(input.policy ? [] : ['PolicyCompliant']),
    ],
  });

  // An adopted card is validated as the written card it amounts to; until the source has given
  // one, there is nothing to validate (and the published card, if any, stays).
  const validation = source
    ? source.spec
      ? engine.validate(source.spec)
      : { problems: source.invalid ?? [], spec: undefined, card: undefined }
    : engine.validate(resource.spec);
  const nameProblem = configMapNameProblem(name);
  if (!validation.spec || !validation.card || nameProblem) {
    const noSourceCard = !!source && !source.spec && !source.invalid && !nameProblem;
    return decision({
      conditions: [
        noSourceCard
          ? at({
              type: 'Accepted',
              status: 'False',
              reason: 'SourceUnavailable',
              message: `no card from spec.source yet (${source.condition.message}); ${served}`,
            })
          : at({
              type: 'Accepted',
              status: 'False',
              reason: nameProblem ? 'InvalidName' : 'InvalidSpec',
              message: nameProblem ?? specProblemMessage(validation.problems, served),
            }),
        // Nothing else is touched: the conditions keep describing the last published card.
        keepCondition(
          prevCondition('Signed'),
          at({
            type: 'Signed',
            status: 'Unknown',
            reason: 'SpecNotAccepted',
            message: 'waiting for a valid spec',
          }),
        ),
        keepCondition(prevCondition('Published'), notPublished('the spec is not accepted')),
      ],
    });
  }
  const spec = validation.spec;
  const accepted = at({
    type: 'Accepted',
    status: 'True',
    reason: 'Valid',
    message: `the spec is valid${warningsNote(validation.problems)}`,
  });
  const signing = await loadSigningKeys(
    spec,
    namespace,
    input.secrets,
    served,
    'card',
    input.now,
    input.issued,
  );
  const signed = at({ type: 'Signed', ...signing.condition });
  if (!signing.keys) {
    return decision({
      spec,
      conditions: [
        accepted,
        signed,
        keepCondition(prevCondition('Published'), notPublished('the signing keys cannot be used')),
      ],
    });
  }
  const keys = signing.keys;
  // CertificatesValid, when a key is a certificate; re-checked when its verdict changes next.
  const expiry = certificateExpiry(keys, input.now);
  const certificates: Pick<CardDecision, 'drop' | 'requeueAfterMs'> = expiry
    ? {
        drop: [],
        requeueAfterMs: Math.min(
          MAX_REQUEUE_MS,
          Math.max(1000, expiry.nextCheck.getTime() - input.now.getTime() + 1000),
        ),
      }
    : { drop: ['CertificatesValid'] };
  const keyConditions = expiry ? [signed, at({ type: 'CertificatesValid', ...expiry.condition })] : [signed];
  const wanted = audienceVariants(spec, validation.card);
  const signedVariants = await engine.sign(wanted, keys, spec.signing?.jku, input.liveConfigMap?.data);
  const [main, ...others] = signedVariants.files as [VariantFiles, ...VariantFiles[]];
  const files: PublishedFiles = {
    card: main.card,
    legacyCard: main.legacyCard,
    jwks: serializeCard(publicJwks(keys) as unknown as Record<string, unknown>),
    cacheMaxAgeSeconds: spec.serving?.cacheMaxAgeSeconds ?? DEFAULT_CACHE_MAX_AGE_SECONDS,
    variantData: variantData(others),
    ...(spec.serving?.server === 'Central'
      ? { centralHosts: (spec.serving.hosts ?? []).map((h) => h.toLowerCase()) }
      : {}),
  };
  const cmName = configMapName(name);
  const desired = desiredConfigMap({ apiVersion: API_VERSION, kind: KIND, name, namespace, uid }, files);
  // Checked before any write, on the whole data map (every rendering and variant): a card that
  // cannot fit is refused once, with the reason, instead of failing with 422 on every retry.
  const tooLarge = configMapSizeProblem(desired.data, input.maxConfigMapBytes);
  if (tooLarge) {
    return decision({
      spec,
      signingNote: signedVariants.note,
      ...certificates,
      conditions: [
        accepted,
        ...keyConditions,
        at({ type: 'Published', status: 'False', reason: 'CardTooLarge', message: `${tooLarge}; ${served}` }),
      ],
    });
  }
  // The policies that select the card judge it as it would be published (policy-gate.ts).
  const judged = input.policy
    ? publishSubject(input.policy.policies, {
        name,
        namespace,
        labels: (resource.metadata as { labels?: Record<string, string> }).labels,
        namespaceLabels: input.policy.namespaceLabels,
        adopted: !!source,
        spec,
        card: validation.card,
        bytes: byteLength(files.card),
        facts: {
          ...signingFacts(keys, input.now),
          ...(source?.status?.signature ? { sourceSignature: source.status.signature.result } : {}),
        },
      })
    : undefined;
  // Ready is not known yet (reachability rules never hold publishing): it is judged in cardPlan.
  // A held card: nothing is written, so the last good card stays served.
  const held = (reason: 'PolicyViolation' | 'BreakingChangeHeld', why: string) =>
    decision({
      spec,
      signingNote: signedVariants.note,
      ...certificates,
      ...(judged ? { policy: judged } : {}),
      conditions: [
        accepted,
        ...keyConditions,
        at({ type: 'Published', status: 'False', reason, message: `${why}; ${served}` }),
      ],
    });
  const hold = judged ? enforceHold(judgeCard(judged.policies, judged.subject)) : undefined;
  if (hold) return held('PolicyViolation', hold);
  // The change against the card served now: classified, and held when spec.changes says so.
  const change = decideChange({
    name,
    namespace,
    recordedDigest: ownedStatus(resource.status).card?.digest,
    liveCard: input.liveConfigMap?.metadata?.deletionTimestamp
      ? undefined
      : input.liveConfigMap?.data?.[DATA_KEYS.card],
    nextCard: files.card,
    nextVersion: validation.card.version,
    policy: spec.changes?.breaking,
    accept: resource.metadata.annotations?.[ACCEPT_BREAKING_ANNOTATION],
  });
  if (change.action === 'hold') return held('BreakingChangeHeld', change.message);
  return decision({
    spec,
    signingNote: signedVariants.note,
    ...certificates,
    ...(judged ? { policy: judged } : {}),
    conditions: [accepted, ...keyConditions],
    artifacts: {
      ...(change.action === 'publish' ? { change: change.change } : {}),
      configMapName: cmName,
      write: configMapUpToDate(input.liveConfigMap, desired) ? undefined : desired,
      card: {
        digest: digestOf(files.card),
        bytes: byteLength(files.card),
        version: validation.card.version,
        configMap: cmName,
      },
      signatures: keys.map((k) => signatureStatus(k, input.now)),
      audiences: audienceStatus(others, wanted),
      jwks: files.jwks,
    },
  });
}

/** Ready as this reconcile derives it (Unknown: not known, never a pass). */
function readyFact(ready: ConditionInput): { ready?: boolean } {
  return ready.status === 'Unknown' ? {} : { ready: ready.status === 'True' };
}

/** The Published condition for a publish result (the artifacts were decided). */
export function publishedCondition(
  artifacts: CardArtifacts,
  result: Exclude<PublishResult, { result: 'Outage' }>,
  served: string,
  servingNote: string,
): DistributiveOmit<CardCondition, 'observedGeneration'> {
  const cmName = artifacts.configMapName;
  switch (result.result) {
    case 'PublishRejected':
      return {
        type: 'Published',
        status: 'False',
        reason: 'PublishRejected',
        message: `the API server refused ConfigMap ${cmName}: ${result.message}; not retried until the AgentCard changes; ${served}`,
      };
    case 'PublishFailed':
      return {
        type: 'Published',
        status: 'False',
        reason: 'PublishFailed',
        message: `writing ConfigMap ${cmName} failed: ${result.message}; retrying with backoff; ${served}`,
      };
    case 'Published': {
      const { card, audiences } = artifacts;
      return {
        type: 'Published',
        status: 'True',
        reason: 'Published',
        message: `ConfigMap ${cmName} holds version ${card.version} (${card.digest.slice(0, 19)}, ${card.bytes} bytes)${audiencesNote(audiences)}${servingNote}`,
      };
    }
  }
}

/** What the status derivation needs besides the decision and the publish result. */
export type StatusContext = Pick<PlanInput, 'resource' | 'now' | 'serving'> & {
  /** The probe verdict for decision.spec. */
  verdict: InterfacesVerdict;
};

/**
 * The plan for a decision and a publish result, without any I/O and without validating or
 * signing again: the full controller-owned status, whether it changed, the events.
 * An outage writes nothing: the status stays as it is (statusChanged false, no events).
 */
export function cardPlan(decision: CardDecision, ctx: StatusContext, result: PublishResult): Plan {
  const { resource, now } = ctx;
  const { generation } = decision;
  const previous = ownedStatus(resource.status);
  const prevConditions = previous.conditions ?? [];
  if (result.result === 'Outage') {
    return {
      generation,
      spec: decision.spec,
      status: previous,
      statusChanged: false,
      events: [],
      ready: getCondition(prevConditions, 'Ready')?.status ?? 'Unknown',
      signingNote: decision.signingNote,
      ...(decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {}),
    };
  }
  // Pods that ask for this card but run without the sidecar (the webhook's failurePolicy is
  // Ignore): named in the Published message and reported in status.serving.
  const missingPods = ctx.serving ? servingMessage(ctx.serving) : undefined;
  const servingNote = missingPods ? `; ${missingPods}` : '';
  const next: ConditionInput[] = [...decision.conditions];
  const artifacts = decision.artifacts;
  // The status fields describe what is served: they move only when this publish succeeded.
  const published = artifacts && result.result === 'Published' ? artifacts : undefined;
  if (artifacts) {
    next.push({
      observedGeneration: generation,
      ...publishedCondition(artifacts, result, decision.served, servingNote),
    });
  }
  const card = published ? published.card : previous.card;
  const signatures = published ? published.signatures : previous.signatures;
  const audiences = published ? published.audiences : previous.audiences;
  const history = published?.change
    ? appendHistory(previous.history, published.change, now)
    : previous.history;

  const verdict = ctx.verdict;
  next.push({ type: 'InterfacesReachable', ...verdict.condition });
  // SourceAvailable does not gate Ready: the last good card stays published and served. Its
  // reason is the source tracker's (SOURCE_AVAILABLE_REASONS in operator/api/reasons.ts).
  const source = decision.source;
  if (source) next.push({ type: 'SourceAvailable', observedGeneration: generation, ...source.condition });
  const readyCondition = deriveReady(next, generation);
  next.push(readyCondition);
  // The policies judge the card with the Ready just derived (a readyBeforeListed rule).
  const policyResults = decision.policy
    ? judgeCard(decision.policy.policies, {
        ...decision.policy.subject,
        facts: { ...decision.policy.subject.facts, ...readyFact(readyCondition) },
      })
    : undefined;
  const compliance = policyResults ? policyCondition(policyResults) : undefined;
  if (compliance) next.push({ observedGeneration: generation, ...compliance });
  const drop = policyResults && !compliance ? [...decision.drop, 'PolicyCompliant'] : decision.drop;

  let conditions: Condition[] = prevConditions.filter((c) => !drop.includes(c.type));
  for (const c of next) conditions = setCondition(conditions, c, now);
  const sourceStatus = source ? (source.status ?? previous.source) : undefined;

  const status: ControllerStatus = {
    observedGeneration: generation,
    conditions,
    ...(card ? { card } : {}),
    ...(signatures && signatures.length > 0 ? { signatures } : {}),
    ...(audiences && audiences.length > 0 ? { audiences } : {}),
    ...(verdict.interfaces ? { interfaces: verdict.interfaces } : {}),
    ...(verdict.reachableInterfaces !== undefined
      ? { reachableInterfaces: verdict.reachableInterfaces }
      : {}),
    ...(ctx.serving ? { serving: ctx.serving } : {}),
    ...(sourceStatus ? { source: sourceStatus } : {}),
    ...(history && history.length > 0 ? { history } : {}),
  };
  const ready = getCondition(conditions, 'Ready')!.status;
  return {
    generation,
    spec: decision.spec,
    configMap: result.result === 'Published' ? artifacts?.write : undefined,
    status,
    statusChanged: statusChanged(resource.status, status),
    events: [
      ...plannedEvents(prevConditions, conditions, {
        digestBefore: publishedDigests(previous.card, previous.audiences),
        digestAfter: publishedDigests(card, audiences),
      }),
      ...servingEvents(previous.serving, ctx.serving),
      ...sourceEvents(getCondition(prevConditions, 'SourceAvailable'), source),
      ...(published?.change ? [changeEvent(published.change)].filter((e) => e !== undefined) : []),
      // Only when the verdict changed: a rule cut from a long message is not reported again.
      ...(policyResults && compliance?.message !== getCondition(prevConditions, 'PolicyCompliant')?.message
        ? policyEvents(policyResults, getCondition(prevConditions, 'PolicyCompliant')?.message)
        : []),
    ],
    ready,
    signingNote: decision.signingNote,
    ...(decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {}),
    ...(published?.change ? { change: published.change } : {}),
  };
}

/**
 * The plan for `input` had its publish ended with `result` (default: published): decide once,
 * derive once. Tests use it; the controller uses reconcilePlan, which publishes in between.
 */
export async function planReconcile(
  input: PlanInput,
  result: PublishResult = PUBLISHED,
  engine: CardEngine = ENGINE,
): Promise<Plan> {
  const decision = await decideCard(input, engine);
  return cardPlan(decision, { ...input, verdict: input.interfaces(decision.spec) }, result);
}

/**
 * One reconcile's plan: decide once, publish the decided ConfigMap (if its bytes change), and
 * derive the status for how that ended. `publish` is the only I/O (the Writer in the controller).
 */
export async function reconcilePlan(
  input: PlanInput,
  publish: (configMap: ConfigMapObject) => Promise<PublishResult>,
  engine: CardEngine = ENGINE,
): Promise<{ decision: CardDecision; result: PublishResult; plan: Plan }> {
  const decision = await decideCard(input, engine);
  const write = decision.artifacts?.write;
  const result = write ? await publish(write) : PUBLISHED;
  const plan = cardPlan(decision, { ...input, verdict: input.interfaces(decision.spec) }, result);
  return { decision, result, plan };
}
