/**
 * The policy controller: for each AgentPolicy and ClusterAgentPolicy,
 * - checks it whole (../../policy/parse.ts). An invalid one gets `Accepted=False` naming every
 *   problem, one Warning Event per distinct problem, and generates nothing (plan.ts says why an
 *   admission policy of its last valid version is kept);
 * - creates, updates or deletes the ValidatingAdmissionPolicy and binding generated from a valid
 *   one (../../policy/cel.ts), through the Writer, and puts them back when edited by hand;
 * - counts, from the cached AgentCards and with the engine, the cards it selects that comply,
 *   fail, or cannot be judged yet (status, agentcard_policy_violations, one Warning Event per
 *   distinct failing card and rule);
 * - deletes what it generated when the policy goes (plan.ts: labels, an annotation naming the
 *   policy, the ownerReference of a ClusterAgentPolicy; no finalizer).
 *
 * ClusterAgentPolicies are reconciled only when the operator watches every namespace (their
 * counts need every namespace's cards, as a ClusterAgentCatalog's do).
 *
 * What triggers a reconcile: the policy added, its spec changed, deleted; one of its generated
 * objects changed or deleted (drift is put back); an AgentCard whose engine-visible state changed
 * (plan.ts cardFingerprint; coalesced for CARD_DELAY_MS); a namespace's labels (cluster policies);
 * the resync.
 *
 * Not here (docs/policy.md): judging AgentCards in their own status and withholding their
 * publishing in Enforce mode (the AgentCard controller's part), and the NetworkPolicies of
 * callers rules (../network/).
 */
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import {
  API_VERSION,
  CLUSTER_POLICY_KIND,
  CLUSTER_POLICY_PLURAL,
  GROUP,
  POLICY_KIND,
  POLICY_PLURAL,
  VERSION,
  type PolicyKind,
} from '../../api/names.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { formatProblem } from '../../card/problem.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { KubeClient } from '../../kube/client.ts';
import { apiStatusCode, describeApiError } from '../../kube/errors.ts';
import { isOutage } from '../../kube/health.ts';
import type { Logger } from '../../log.ts';
import type { Subject } from '../../policy/evaluate.ts';
import { parsePolicy } from '../../policy/parse.ts';
import type { PolicyStatus } from '../../policy/resource.ts';
import {
  ControllerBuilder,
  type BuiltController,
  type EventType,
  type Request,
  type Runtime,
} from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import { objectKey } from '../../runtime/keys.ts';
import type { Runnable } from '../../runtime/manager.ts';
import type { WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import {
  ADMISSION_API,
  AGENT_CARDS,
  AGENT_POLICIES,
  CLUSTER_AGENT_POLICIES,
  GENERATED_ADMISSION_BINDINGS,
  GENERATED_ADMISSION_POLICIES,
  NAMESPACES,
  type CachedAgentCard,
} from '../cache/collections.ts';
import { CONTROLLER_NAMES } from '../metrics.ts';
import type { PolicyMetrics } from './metrics.ts';
import {
  admissionDrift,
  cardFingerprint,
  cardSubject,
  desiredAdmission,
  invalidStatus,
  judgeCards,
  parsePolicyKey,
  POLICY_REF_ANNOTATION,
  policyKey,
  statusChanged,
  validStatus,
  type AdmissionOutcome,
  type CardFinding,
  type DesiredAdmission,
  type PolicyRefParts,
} from './plan.ts';

/** How long AgentCard events are gathered before the policies that select them count again. */
export const CARD_DELAY_MS = 1_000;
/** At most this many violation Events per policy reconcile (the rest come with later ones). */
const MAX_FINDING_EVENTS = 20;

export interface PolicyControllerOptions {
  client: KubeClient;
  log: Logger;
  cache: Cache;
  runtime: Runtime;
  events: EventRecorder;
  metrics: PolicyMetrics;
  resyncMs: number;
  concurrency?: number;
  /** Reconcile ClusterAgentPolicies; default: when every namespace is watched. */
  clusterPolicies?: boolean;
  onWrite?: (resource: string) => void;
}

type PolicyObject = KubernetesObject & {
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
    labels?: Record<string, string>;
  };
  spec?: unknown;
  status?: PolicyStatus;
};

type GeneratedObject = KubernetesObject & {
  metadata: {
    name: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown;
  };
  spec?: unknown;
};

type CardWithLabels = CachedAgentCard & { metadata: { labels?: Record<string, string> } };

export class PolicyController {
  readonly queue: WorkQueue;
  private readonly opts: PolicyControllerOptions;
  private readonly log: Logger;
  private readonly policies: SharedInformer<PolicyObject>;
  private readonly clusterPolicies?: SharedInformer<PolicyObject>;
  private readonly namespaces?: SharedInformer<V1Namespace>;
  private readonly cards: SharedInformer<CardWithLabels>;
  private readonly admissionPolicies: SharedInformer<GeneratedObject>;
  private readonly admissionBindings: SharedInformer<GeneratedObject>;
  private readonly writer: Writer<PolicyObject>;
  private readonly built: BuiltController;
  /** Card key → what the engine reads of it (events that change nothing else are skipped). */
  private readonly cardPrints = new Map<string, string>();
  /** Card key → its subject, for the resourceVersion it was built from. */
  private readonly subjects = new Map<string, { version: string | undefined; subject: Subject }>();
  /** Policy key → the findings already reported as Events (card, rule, violations). */
  private readonly reported = new Map<string, Set<string>>();

  constructor(opts: PolicyControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'policy' });
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    const { cache } = opts;
    this.policies = cache.informer<PolicyObject>(AGENT_POLICIES);
    this.cards = cache.informer(AGENT_CARDS) as SharedInformer<CardWithLabels>;
    this.admissionPolicies = cache.informer<GeneratedObject>(GENERATED_ADMISSION_POLICIES);
    this.admissionBindings = cache.informer<GeneratedObject>(GENERATED_ADMISSION_BINDINGS);
    const builder = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: CONTROLLER_NAMES.policy,
        concurrency: opts.concurrency ?? 2,
        resyncMs: opts.resyncMs,
        failure: 'policy reconcile failed; retrying',
        fields: (key) => ({ policy: key }),
      },
    )
      .watches(this.policies, (p, event) => this.onPolicy(POLICY_KIND, p, event))
      .watches(this.cards, (c, { type }) => this.onCard(c, type === 'delete'))
      .watches(this.admissionPolicies, (o) => this.onGenerated(o))
      .watches(this.admissionBindings, (o) => this.onGenerated(o));
    if (opts.clusterPolicies ?? cache.allNamespaces) {
      this.clusterPolicies = cache.informer<PolicyObject>(CLUSTER_AGENT_POLICIES);
      this.namespaces = cache.informer({
        ...NAMESPACES,
        with: this.clusterPolicies as SharedInformer<KubernetesObject>,
      });
      builder
        .watches(this.clusterPolicies, (p, event) => this.onPolicy(CLUSTER_POLICY_KIND, p, event))
        .watches(this.namespaces, (ns, { type, old }) =>
          type === 'update' && sameLabels(old?.metadata?.labels ?? {}, ns.metadata?.labels ?? {})
            ? []
            : this.clusterKeys(CARD_DELAY_MS),
        );
    }
    this.built = builder.complete(this);
    this.queue = this.built.queue;
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Every policy, and every policy a generated object names (a policy deleted meanwhile). */
  *keys(): Iterable<{ key: string }> {
    const keys = new Set<string>();
    for (const p of this.policies.list())
      keys.add(
        policyKey({ kind: POLICY_KIND, namespace: p.metadata.namespace ?? '', name: p.metadata.name }),
      );
    for (const p of this.clusterPolicies?.list() ?? [])
      keys.add(policyKey({ kind: CLUSTER_POLICY_KIND, namespace: '', name: p.metadata.name }));
    for (const o of [...this.admissionPolicies.list(), ...this.admissionBindings.list()]) {
      const key = o.metadata.annotations?.[POLICY_REF_ANNOTATION];
      if (key && parsePolicyKey(key)) keys.add(key);
    }
    for (const key of keys) yield { key };
  }

  started(lanes: { high: number; low: number }): void {
    if (!this.admissionPolicies.available)
      this.log.warn(
        'ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) are not served; policies are judged but not enforced at admission',
        {},
      );
    this.log.info('caches synced; reconciling policies', { policies: lanes.high + lanes.low });
  }

  // ---- event handlers ----------------------------------------------------------------------

  private onPolicy(
    kind: PolicyKind,
    p: PolicyObject,
    { type, old }: { type: EventType; old?: PolicyObject },
  ) {
    const key = policyKey({
      kind,
      namespace: kind === POLICY_KIND ? (p.metadata.namespace ?? '') : '',
      name: p.metadata.name,
    });
    if (type === 'delete') {
      this.writer.forgetOwner(key);
      return [key];
    }
    // Added, or a spec change; not the echo of its own status write.
    if (type === 'update' && (old?.metadata.generation ?? 0) === (p.metadata.generation ?? 0)) return [];
    return [key];
  }

  private onCard(card: CardWithLabels, deleted: boolean): Request[] {
    const key = objectKey(card.metadata.namespace, card.metadata.name);
    if (deleted) {
      this.cardPrints.delete(key);
      this.subjects.delete(key);
    } else {
      const print = cardFingerprint(card);
      if (this.cardPrints.get(key) === print) return [];
      this.cardPrints.set(key, print);
    }
    return [
      ...this.policies.list(card.metadata.namespace).map((p) => ({
        key: policyKey({ kind: POLICY_KIND, namespace: card.metadata.namespace, name: p.metadata.name }),
        afterMs: CARD_DELAY_MS,
      })),
      ...this.clusterKeys(CARD_DELAY_MS),
    ];
  }

  private onGenerated(o: GeneratedObject): string[] {
    const key = o.metadata.annotations?.[POLICY_REF_ANNOTATION];
    return key && parsePolicyKey(key) ? [key] : [];
  }

  private clusterKeys(afterMs: number): Request[] {
    return (this.clusterPolicies?.list() ?? []).map((p) => ({
      key: policyKey({ kind: CLUSTER_POLICY_KIND, namespace: '', name: p.metadata.name }),
      afterMs,
    }));
  }

  // ---- the reconcile -------------------------------------------------------------------------

  async reconcile(key: string, signal: AbortSignal): Promise<void> {
    const ref = parsePolicyKey(key);
    if (!ref || !this.owns(ref)) return;
    const log = this.log.child({ policy: key });
    const cached =
      ref.kind === POLICY_KIND
        ? this.policies.get(ref.name, ref.namespace)
        : this.clusterPolicies?.get(ref.name);
    const obj = this.writer.readOwner(key, cached);
    const live = this.generated(key);

    if (!obj || obj.metadata.deletionTimestamp) {
      // Gone: what it generated goes (a ClusterAgentPolicy's also through the garbage collector).
      this.reported.delete(key);
      this.opts.metrics.forget(key);
      for (const [plural, o] of [
        [GENERATED_ADMISSION_BINDINGS.plural, live.binding],
        [GENERATED_ADMISSION_POLICIES.plural, live.policy],
      ] as const) {
        if (!o?.metadata.uid) continue;
        if (
          await this.writer.deleteOwned(
            plural,
            admissionPath(plural, o.metadata.name),
            o.metadata.uid,
            signal,
          )
        )
          log.info('generated admission object deleted: its policy is gone', { [plural]: o.metadata.name });
      }
      return;
    }

    const generation = obj.metadata.generation ?? 0;
    const statusInput = { generation, previous: obj.status, now: new Date() };
    const parsed = parsePolicy({ ...obj, apiVersion: API_VERSION, kind: ref.kind, status: undefined });
    let status;
    if (!parsed.ok) {
      this.opts.metrics.forget(key);
      this.reported.delete(key);
      const kept = [live.policy?.metadata.name].filter((n): n is string => !!n);
      status = invalidStatus(statusInput, parsed.problems, kept);
      if (statusChanged(obj.status, status)) {
        for (const p of parsed.problems)
          this.event(ref, obj, {
            type: 'Warning',
            reason: 'InvalidPolicy',
            action: 'Validate',
            message: formatProblem(p),
          });
        log.warn('policy is invalid; nothing of it is applied', {
          problems: parsed.problems.length,
          keptAdmissionPolicy: kept[0] ?? null,
        });
      }
    } else {
      const policy = parsed.policy;
      const want = desiredAdmission(policy, { kind: ref.kind, name: ref.name, uid: obj.metadata.uid });
      const admission = await this.applyAdmission(want, live, log, signal);
      const counts = judgeCards(policy, this.subjectsFor(ref));
      this.opts.metrics.set(
        key,
        { kind: ref.kind, namespace: ref.namespace, name: ref.name },
        counts.violationsByRule,
      );
      this.reportFindings(key, ref, obj, counts.findings);
      status = validStatus(statusInput, policy, admission, counts);
    }
    if (statusChanged(obj.status, status)) {
      const plural = ref.kind === POLICY_KIND ? POLICY_PLURAL : CLUSTER_POLICY_PLURAL;
      const namespace = ref.kind === POLICY_KIND ? ref.namespace : undefined;
      await this.writer.writeStatus(
        key,
        { group: GROUP, version: VERSION, plural },
        namespace,
        ref.name,
        {
          apiVersion: API_VERSION,
          kind: ref.kind,
          metadata: { name: ref.name, ...(namespace !== undefined ? { namespace } : {}) },
          status,
        },
        obj.metadata.resourceVersion,
        signal,
      );
      log.info('policy reconciled', {
        accepted: parsed.ok,
        ...(status.matched !== undefined
          ? { matched: status.matched, compliant: status.compliant, failing: status.failing }
          : {}),
      });
    }
  }

  /**
   * Whether this operator reconciles the policy: an AgentPolicy of a watched namespace, a
   * ClusterAgentPolicy when it reconciles those. The generated objects are cluster-scoped and
   * cached whole, so another release's (another shard's namespaces) are seen too: never judged
   * gone, never deleted, by this one.
   */
  private owns(ref: PolicyRefParts): boolean {
    return ref.kind === POLICY_KIND
      ? this.policies.watches(ref.namespace)
      : this.clusterPolicies !== undefined;
  }

  /** The live generated objects of a policy key (from the caches, by the annotation). */
  private generated(key: string): { policy?: GeneratedObject; binding?: GeneratedObject } {
    const mine = (o: GeneratedObject) => o.metadata.annotations?.[POLICY_REF_ANNOTATION] === key;
    return {
      policy: this.admissionPolicies.list().find(mine),
      binding: this.admissionBindings.list().find(mine),
    };
  }

  /**
   * Makes the live admission objects what `want` says: created, replaced whole when drifted (a
   * field set by hand goes, as for the issuer's Certificates), deleted when no longer wanted. The
   * policy before its binding (the binding names it); deletes the other way round.
   */
  private async applyAdmission(
    want: DesiredAdmission,
    live: { policy?: GeneratedObject; binding?: GeneratedObject },
    log: Logger,
    signal: AbortSignal,
  ): Promise<AdmissionOutcome> {
    if (!this.admissionPolicies.available || !this.admissionBindings.available)
      return {
        ok: false,
        reason: 'AdmissionPolicyUnsupported',
        message:
          'the API server does not serve ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes 1.30 or newer): nothing is checked at admission; the rules are still counted here',
      };
    const steps: Array<[string, Record<string, unknown> | undefined, GeneratedObject | undefined]> =
      want.policy
        ? [
            [GENERATED_ADMISSION_POLICIES.plural, want.policy, live.policy],
            [GENERATED_ADMISSION_BINDINGS.plural, want.binding, live.binding],
          ]
        : [
            [GENERATED_ADMISSION_BINDINGS.plural, undefined, live.binding],
            [GENERATED_ADMISSION_POLICIES.plural, undefined, live.policy],
          ];
    try {
      for (const [plural, desired, current] of steps) {
        if (!desired) {
          if (
            current?.metadata.uid &&
            (await this.writer.deleteOwned(
              plural,
              admissionPath(plural, current.metadata.name),
              current.metadata.uid,
              signal,
            ))
          )
            log.info('generated admission object deleted: no rule of the policy is checked at admission', {
              [plural]: current.metadata.name,
            });
          continue;
        }
        const name = (desired.metadata as { name: string }).name;
        if (!current) {
          await this.writer.create(plural, `${ADMISSION_API}/${plural}`, desired, signal);
          log.info('generated admission object created', { [plural]: name });
        } else if (admissionDrift(current, desired)) {
          const metadata = desired.metadata as Record<string, unknown>;
          await this.writer.replace(
            plural,
            admissionPath(plural, name),
            { ...desired, metadata: { ...metadata, resourceVersion: current.metadata.resourceVersion } },
            signal,
          );
          log.info('generated admission object updated', { [plural]: name });
        }
      }
    } catch (err) {
      if (isOutage(err) || signal.aborted) throw err;
      const code = apiStatusCode(err);
      if (code === 409)
        return {
          ok: false,
          reason: 'AdmissionPolicyConflict',
          message: `a ValidatingAdmissionPolicy or binding named ${want.policy?.metadata.name ?? ''} exists and was not generated by the operator, or changed meanwhile; it is not touched (delete it, or rename the policy): ${describeApiError(err)}`,
        };
      if (code === 403 || code === 422)
        return {
          ok: false,
          reason: 'AdmissionPolicyNotWritten',
          message: `writing the generated admission policy failed: ${describeApiError(err)}`,
        };
      throw err;
    }
    return { ok: true, names: want.policy ? [want.policy.metadata.name] : [] };
  }

  /** The engine's subjects of the cards a policy can select (built once per card version). */
  private *subjectsFor(ref: PolicyRefParts): Iterable<Subject> {
    const cards = ref.kind === POLICY_KIND ? this.cards.list(ref.namespace) : this.cards.list();
    for (const card of cards) {
      const key = objectKey(card.metadata.namespace, card.metadata.name);
      const version = card.metadata.resourceVersion;
      let entry = this.subjects.get(key);
      const nsLabels = this.namespaces?.get(card.metadata.namespace)?.metadata?.labels;
      if (!entry || entry.version !== version) {
        entry = {
          version,
          subject: cardSubject(
            card as AgentCardObject & { metadata: { labels?: Record<string, string> } },
            undefined,
          ),
        };
        this.subjects.set(key, entry);
      }
      // Namespace labels change without the card: taken fresh each time.
      yield nsLabels ? { ...entry.subject, namespaceLabels: nsLabels } : entry.subject;
    }
  }

  /** One Warning Event per distinct failing (card, rule), not repeated while it stays the same. */
  private reportFindings(
    key: string,
    ref: PolicyRefParts,
    obj: PolicyObject,
    findings: readonly CardFinding[],
  ) {
    const before = this.reported.get(key) ?? new Set<string>();
    const now = new Set<string>();
    let sent = 0;
    for (const f of findings) {
      const id = `${f.card}\u0000${f.rule}\u0000${f.violations.join('\u0000')}`;
      if (before.has(id)) {
        now.add(id);
        continue;
      }
      if (sent >= MAX_FINDING_EVENTS) continue;
      sent += 1;
      now.add(id);
      this.event(ref, obj, {
        type: 'Warning',
        reason: 'PolicyViolation',
        action: 'Evaluate',
        message: `AgentCard ${f.card} fails rule ${f.rule}: ${f.violations.join('; ')}`,
      });
    }
    this.reported.set(key, now);
  }

  private event(
    ref: PolicyRefParts,
    obj: PolicyObject,
    event: { type: 'Normal' | 'Warning'; reason: string; action: string; message: string },
  ) {
    // A cluster-scoped object's Events go to "default" (the recorder's default for it).
    this.opts.events.record(
      {
        apiVersion: API_VERSION,
        kind: ref.kind,
        name: ref.name,
        namespace: ref.namespace,
        uid: obj.metadata.uid,
      },
      event,
    );
  }
}

function admissionPath(plural: string, name: string): string {
  return `${ADMISSION_API}/${plural}/${encodeURIComponent(name)}`;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
